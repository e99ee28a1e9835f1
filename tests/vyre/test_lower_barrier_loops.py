"""Barriers inside workgroup-uniform loops and ifs, workgroup-array reductions and a tiled matmul,
byte-identical to the reference on every device; host C's region splitting (its per-item
values, the group's control flow and workgroup arrays per group) is what they exercise on cpu."""

from __future__ import annotations

import numpy as np
import pytest

from tests._support import stable_rng
from tests.vyre.lower_programs import assert_parity, kernel_devices
from vyre import ValidationError, ir
from vyre import builder as b
from vyre import programs as P
from vyre.execute import run
from vyre.ir import Scalar
from vyre.lower import TrapError, UnsupportedOpError

DEVICES = kernel_devices()
ON_DEVICES = pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
LID, GID = b.local_id(0), b.invocation_id(0)


def loop_reduce(lanes: int, rounds: int) -> ir.Program:
    """A workgroup sum by a tree whose strides come from a uniform loop (a barrier per pass),
    repeated ``rounds`` times in an outer uniform loop that feeds each sum back in."""
    v = b.var
    stride = b.shr(lanes // 2, v("p"))
    tree = b.loop("p", 0, (lanes - 1).bit_length(), [
        b.if_(b.lt(LID, stride), [b.store("sh", LID, b.add(
            b.load("sh", LID), b.load("sh", b.add(LID, stride))))]),
        b.barrier()])
    body: list[ir.Node] = [
        b.let("acc", b.load("inp", GID)),
        b.loop("r", 0, rounds, [
            b.store("sh", LID, b.add(v("acc"), v("r"))), b.barrier(), tree,
            b.assign("acc", b.bit_xor(v("acc"), b.load("sh", 0))), b.barrier()]),
        b.store("out", GID, v("acc"))]
    return b.program([b.read("inp", 0, Scalar.U32), b.workgroup("sh", lanes, Scalar.U32),
                      b.read_write("out", 1, Scalar.U32)], body,
                     workgroup_size=(lanes, 1, 1))


def uniform_if_barrier() -> ir.Program:
    """A barrier inside an if on the workgroup id (uniform), with values live across it, in a
    2-D workgroup: each group reverses its tile or rotates it, by its id's parity."""
    lx, ly = b.local_id(0), b.local_id(1)
    slot = b.add(b.mul(ly, 4), lx)
    gid = b.add(b.invocation_id(0), b.mul(b.invocation_id(1), 8))
    even = b.eq(b.bit_and(b.workgroup_id(0), 1), 0)
    return b.program(
        [b.read("inp", 0, Scalar.U32), b.workgroup("t", 12, Scalar.U32),
         b.read_write("out", 1, Scalar.U32)],
        [b.let("x", b.load("inp", gid)), b.let("me", slot),
         b.if_(even, [b.store("t", b.var("me"), b.var("x")), b.barrier(),
                      b.let("y", b.load("t", b.sub(11, b.var("me")))),
                      b.store("out", gid, b.add(b.var("y"), b.var("x")))],
               [b.store("t", b.var("me"), b.mul(b.var("x"), 3)), b.barrier(),
                b.store("out", gid, b.load("t", b.mod(b.add(b.var("me"), 5), 12)))])],
        workgroup_size=(4, 3, 1))


@ON_DEVICES
@pytest.mark.parametrize(("lanes", "rounds"), [(64, 3), (8, 1), (1, 2)])
def test_barrier_inside_uniform_loops(lanes: int, rounds: int, device: object) -> None:
    values = stable_rng("loop reduce", lanes).integers(0, 2**32, 3 * lanes, dtype=np.uint64)
    inputs = {"inp": values.astype(np.uint32), "out": np.zeros(3 * lanes, np.uint32)}
    got = assert_parity(loop_reduce(lanes, rounds), inputs, device, grid=(3, 1, 1))
    assert np.frombuffer(got["out"], "<u4").any()


@ON_DEVICES
def test_barrier_inside_uniform_if_in_2d_groups(device: object) -> None:
    values = stable_rng("uniform if").integers(0, 2**32, 8 * 6, dtype=np.uint64)
    inputs = {"inp": values.astype(np.uint32), "out": np.zeros(8 * 6, np.uint32)}
    assert_parity(uniform_if_barrier(), inputs, device, grid=(2, 2, 1))


@ON_DEVICES
@pytest.mark.parametrize("n", [37, 48])
def test_tiled_matmul_equals_the_plain_one(n: int, device: object) -> None:
    rng = stable_rng("tiled matmul", n)
    a, bm = (rng.integers(0, 2**32, n * n, dtype=np.uint64).astype(np.uint32) for _ in "ab")
    grid = (-(-n // 16), -(-n // 16), 1)
    tiled = run(P.matmul_tiled_program(n), {"a": a, "b": bm}, grid=grid, device=device)["out"]
    want = (a.reshape(n, n).astype(object) @ bm.reshape(n, n).astype(object)) % 2**32
    assert tiled.tolist() == [int(x) for x in want.ravel()]


@ON_DEVICES
def test_softmax_style_reductions_in_workgroup_arrays(device: object) -> None:
    # The dot product's tree reduction in a 256-lane group, over four groups.
    i = np.arange(1500, dtype=np.uint64)
    inputs = {"lhs": ((7 * i + 1) % 2**32).astype(np.uint32),
              "rhs": ((13 * i + 5) % 2**32).astype(np.uint32)}
    assert_parity(P.dot_program(1500), inputs, device, grid=(4, 1, 1))


def test_barrier_in_divergent_control_flow_is_invalid() -> None:
    # The validator rejects it (V010), so no device runs it.
    prog = b.program([b.read_write("o", 0, Scalar.U32)],
                     [b.if_(b.lt(LID, 2), [b.barrier()]), b.store("o", LID, 1)],
                     workgroup_size=(4, 1, 1))
    with pytest.raises(ValidationError, match="V010"):
        run(prog, {"o": np.zeros(4, np.uint32)}, grid=(1, 1, 1), device=DEVICES[0])


@ON_DEVICES
def test_trap_in_a_program_with_barriers(device: object) -> None:
    # A trapping lane sets the flag and goes on to the barrier (returning would leave the
    # group's other lanes waiting on a device): the run raises TrapError on every device.
    prog = b.program([b.read("inp", 0, Scalar.U32), b.workgroup("sh", 8, Scalar.U32),
                      b.read_write("out", 1, Scalar.U32)],
                     [b.if_(b.eq(b.load("inp", GID), 7), [ir.Trap(b.lit_u32(0), "seven")]),
                      b.store("sh", LID, b.load("inp", GID)), b.barrier(),
                      b.store("out", GID, b.load("sh", b.sub(7, LID)))],
                     workgroup_size=(8, 1, 1))
    fine = {"inp": np.arange(16, dtype=np.uint32) * 2, "out": np.zeros(16, np.uint32)}
    assert_parity(prog, fine, device, grid=(2, 1, 1))
    with pytest.raises(TrapError):
        run(prog, {"inp": np.arange(16, dtype=np.uint32), "out": np.zeros(16, np.uint32)},
            grid=(2, 1, 1), device=device)


@ON_DEVICES
def test_workgroup_memory_past_16_kib_where_the_dialect_takes_it(device: object) -> None:
    # 24 KiB: more than Vulkan guarantees (refused there with a Fix), within OpenCL's 32 KiB
    # and host C's bound.
    words = 6144
    prog = b.program([b.read("inp", 0, Scalar.U32), b.workgroup("big", words, Scalar.U32),
                      b.read_write("out", 1, Scalar.U32)],
                     [b.loop("k", 0, words // 64, [
                         b.store("big", b.add(b.mul(b.var("k"), 64), LID),
                                 b.add(b.load("inp", GID), b.var("k")))]),
                      b.barrier(),
                      b.store("out", GID, b.load("big", b.sub(words - 1, LID)))],
                     workgroup_size=(64, 1, 1))
    inputs = {"inp": np.arange(128, dtype=np.uint32) * 3, "out": np.zeros(128, np.uint32)}
    if device.dialect == "glsl":  # type: ignore[attr-defined]
        with pytest.raises(UnsupportedOpError, match="guarantees 16384"):
            run(prog, inputs, grid=(2, 1, 1), device=device)
        return
    got = assert_parity(prog, inputs, device, grid=(2, 1, 1))
    assert np.frombuffer(got["out"], "<u4")[0] == 3 * 63 + 95
