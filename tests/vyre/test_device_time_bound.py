"""Device runs are bounded in time (docs/reliability.md, Hostile inputs): on devices without a
driver loop budget (cpu, opencl) a lowered kernel stops each invocation's loops after
``max_loop_passes`` passes and the run raises LoopBudgetError; lavapipe's own budget is
smaller and fires first. Runs on every compiling device."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.registry import resolve_device
from tests.vyre.lower_programs import kernel_devices
from vyre import builder as b
from vyre import ir, reference
from vyre.execute import DEFAULT_MAX_LOOP_PASSES
from vyre.lower.ops import LoopBudgetError

SPECS = [d.spec for d in kernel_devices()]
_U32_MAX = 0xFFFFFFFF


def _endless() -> ir.Program:
    """Two nested loops of 2**32-1 passes each: ~2**64 passes, effectively endless."""
    return b.program([b.output("o", 0, b.U32, 1)], [
        b.loop("i", 0, _U32_MAX, [b.loop("j", 0, _U32_MAX, [
            b.store("o", 0, b.wrapping_add(b.load("o", 0), b.bit_xor(b.var("i"), b.var("j"))))])])],
        workgroup_size=(1, 1, 1))


def _counted() -> ir.Program:
    """Per lane: lane + the sum of i ^ (i >> 3) over a uniform loop of n[0] passes, then
    over a lane-dependent loop of n[1] + lane passes (the two loop kinds the kernel counts)."""
    lane = b.invocation_id(0)
    step = b.wrapping_add(b.var("acc"), b.bit_xor(b.var("i"), b.shr(b.var("i"), 3)))
    return b.program([b.read("n", 0, b.U32), b.output("out", 1, b.U32, 4)], [
        b.let("acc", lane),
        b.loop("i", 0, b.load("n", 0), [b.assign("acc", step)]),
        b.loop("j", 0, b.wrapping_add(b.load("n", 1), lane), [
            b.assign("acc", b.wrapping_add(b.var("acc"), b.bit_xor(b.var("j"), 0x5bd1)))]),
        b.store("out", lane, b.var("acc"))], workgroup_size=(4, 1, 1))


def _inputs(n0: int, n1: int) -> dict[str, bytes]:
    return {"n": np.array([n0, n1], np.uint32).tobytes()}


def _unbudgeted() -> list[str]:
    return [s for s in SPECS if resolve_device(s).loop_budget is None]


@pytest.mark.parametrize("spec", SPECS)
def test_endless_loop_raises_the_typed_error(spec: str) -> None:
    """Was: the 2**64-pass loop ran forever on cpu and opencl and Ctrl-C could not stop it."""
    dev = resolve_device(spec)
    which = "loop budget" if dev.loop_budget is not None else \
        f"max_loop_passes={DEFAULT_MAX_LOOP_PASSES} .*Fix: pass a larger max_loop_passes"
    with pytest.raises(LoopBudgetError, match=which):
        vyre.run(_endless(), device=spec, grid=(1, 1, 1))
    kernel = vyre.compile(_endless(), spec)
    out = Buffer.from_bytes(dev, bytes(4))
    with pytest.raises(LoopBudgetError, match="max_loop_passes=1000 " if dev.loop_budget is None
                       else "loop budget"):
        kernel([out], (8, 1, 1), max_loop_passes=1000)


@pytest.mark.parametrize("spec", _unbudgeted())
@pytest.mark.parametrize(("n0", "n1"), [(700, 20), (30, 697)])
def test_the_bound_is_exact_per_loop_kind(spec: str, n0: int, n1: int) -> None:
    """A run needing exactly max_loop_passes passes (uniform loop, or lane 3's loop of
    n1 + 3 passes) gives the reference's bytes; one pass fewer is refused."""
    need = max(n0, n1 + 3)
    want = reference.run_bytes(_counted(), _inputs(n0, n1), grid=(1, 1, 1))
    got = vyre.run_bytes(_counted(), _inputs(n0, n1), grid=(1, 1, 1), device=spec,
                         max_loop_passes=need)
    assert got == want
    with pytest.raises(LoopBudgetError, match=f"max_loop_passes={need - 1} "):
        vyre.run_bytes(_counted(), _inputs(n0, n1), grid=(1, 1, 1), device=spec,
                       max_loop_passes=need - 1)


@pytest.mark.parametrize("spec", _unbudgeted())
def test_raising_the_bound_lets_a_longer_loop_finish(spec: str) -> None:
    """Past the default bound the run is refused; with max_loop_passes raised, on vyre.run and
    on a Kernel, it gives the reference's result (closed form: the loop is too long for the
    interpreter)."""
    n = DEFAULT_MAX_LOOP_PASSES + 1
    with pytest.raises(LoopBudgetError, match="Fix:"):
        vyre.run(_counted(), _inputs(n, 0), grid=(1, 1, 1), device=spec)
    got = vyre.run(_counted(), _inputs(n, 0), grid=(1, 1, 1), device=spec,
                   max_loop_passes=n)["out"]
    i = np.arange(n, dtype=np.uint64)
    total = int(np.sum(i ^ (i >> np.uint64(3)), dtype=np.uint64))
    tail = [sum(j ^ 0x5BD1 for j in range(lane)) for lane in range(4)]  # n[1] = 0
    assert got.tolist() == [(lane + total + tail[lane]) & _U32_MAX for lane in range(4)]
    dev = resolve_device(spec)
    kernel = vyre.compile(_counted(), dev)
    out = Buffer.from_bytes(dev, bytes(16))
    n_buf = Buffer.from_bytes(dev, _inputs(n, 0)["n"])
    with pytest.raises(LoopBudgetError):
        kernel([n_buf, out], (1, 1, 1))
    kernel([n_buf, out], (1, 1, 1), max_loop_passes=n)
    assert out.numpy(np.uint32).tolist() == got.tolist()


def test_max_loop_passes_is_checked() -> None:
    for bad in (0, -1, 1 << 32, 2.0, True):
        with pytest.raises(vyre.UnsupportedOpError, match="max_loop_passes=.* is not an integer.*Fix:"):
            vyre.run_bytes(_counted(), _inputs(1, 1), grid=(1, 1, 1), device="cpu",
                           max_loop_passes=bad)
