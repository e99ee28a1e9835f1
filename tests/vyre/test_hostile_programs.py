"""Regression tests for vyre programs that once escaped their bounds (docs/reliability.md):
an endless loop over a large expression that took minutes to hit the reference's step bound,
and builder-made programs nested deeper than ==, repr, hash, fingerprint and the wire allow."""

from __future__ import annotations

import time

import numpy as np
import pytest

import vyre
from vyre import builder as b
from vyre import ir, reference
from vyre.wire import MAX_DECODE_DEPTH


def _forever_over(terms: int) -> ir.Program:
    """An endless loop storing a ``terms``-deep expression (a few hundred bytes on the wire)."""
    e: ir.Expr = b.load("o", 0)
    for i in range(terms):
        e = b.add(b.mul(e, 3), i)
    return b.program([b.read_write("o", 0, b.U32, 1)], [ir.forever((b.store("o", 0, e),))])


def test_step_bound_counts_expressions_and_fires_in_seconds() -> None:
    # Was: ~10 minutes to exhaust the default budget (statements were charged, the
    # expressions they evaluate were not).
    prog = _forever_over(25)
    assert len(vyre.to_wire(prog)) < 1024
    start = time.perf_counter()
    with pytest.raises(reference.StepLimitExceeded, match="max_steps=200000.*Fix:") as info:
        reference.run(prog, {"o": np.zeros(1, np.uint32)}, grid=(1, 1, 1), max_steps=200_000)
    assert time.perf_counter() - start < 5  # 200,000 steps are ~2,000 loop iterations now
    assert str(info.value).count("Fix:") == 1


@pytest.mark.parametrize("fast", [True, False])
def test_max_seconds_bounds_the_run(fast: bool) -> None:
    prog = _forever_over(2) if not fast else b.program(
        [b.output("o", 0, b.U32, 1 << 20)], [b.store("o", b.invocation_id(0), 1)],
        workgroup_size=(64, 1, 1))
    start = time.perf_counter()
    with pytest.raises(reference.StepLimitExceeded, match="max_seconds.*Fix: raise max_seconds"):
        reference.run(prog, {"o": np.zeros(1, np.uint32)} if not fast else None,
                      max_steps=1 << 62, max_seconds=0.5, fast=fast,
                      grid=(1, 1, 1) if not fast else (1 << 25, 1, 1))
    assert time.perf_counter() - start < 5
    with pytest.raises(reference.ReferenceInputError, match="max_seconds"):
        reference.run(prog, max_seconds=0)
    assert reference.DEFAULT_MAX_SECONDS <= 10


def _chain(depth: int) -> ir.Program:
    e: ir.Expr = b.lit_u32(0)
    for _ in range(depth):
        e = b.add(e, 1)
    return b.program([b.output("o", 0, b.U32, 1)], [b.store("o", 0, e)])


def _nest(depth: int) -> ir.Program:
    body: list[ir.Node] = [b.store("o", 0, 7)]
    for _ in range(depth):
        body = [b.block(*body)]
    return b.program([b.output("o", 0, b.U32, 1)], body)


def test_programs_nested_past_the_limit_are_refused_when_built() -> None:
    # Was: untyped RecursionError from ==, hash, repr, fingerprint and vyre.run(device=...).
    for make in (_chain, _nest):
        with pytest.raises(ir.NestingError, match="more than 160 levels.*Fix:"):
            make(2000)
    deepest = _chain(ir.MAX_PROGRAM_DEPTH - 3)  # Region, Store, then the chain
    assert ir.check_depth(deepest.entry) == ir.MAX_PROGRAM_DEPTH
    twin = _chain(ir.MAX_PROGRAM_DEPTH - 3)
    assert deepest == twin and hash(deepest) == hash(twin) and repr(deepest) == repr(twin)
    assert vyre.fingerprint(deepest) == vyre.fingerprint(twin) != vyre.fingerprint(_chain(3))
    out = reference.run(deepest, grid=(1, 1, 1), validate=False)
    assert out["o"].tolist() == [ir.MAX_PROGRAM_DEPTH - 3]


@pytest.mark.parametrize("make", [_chain, _nest])
def test_to_wire_refuses_exactly_what_from_wire_refuses(make) -> None:
    # Was: to_wire wrote programs of any depth, and from_wire refused them.
    outcomes = []
    for depth in range(MAX_DECODE_DEPTH - 8, MAX_DECODE_DEPTH + 4):
        prog = make(depth)
        try:
            blob = vyre.to_wire(prog)
        except vyre.EncodeError as err:
            assert "maximum decode depth 64" in str(err) and str(err).count("Fix:") == 1
            outcomes.append(False)
            continue
        assert vyre.from_wire(blob) == prog
        outcomes.append(True)
    # Every depth up to the decoder's bound round-trips; every one past it is refused.
    assert outcomes == sorted(outcomes, reverse=True) and True in outcomes and False in outcomes


def _vulkan_specs() -> list[str]:
    from tests.vyre.lower_programs import kernel_devices

    return [d.spec for d in kernel_devices() if d.spec.startswith("vulkan")]


@pytest.mark.parametrize("spec", _vulkan_specs())
def test_vulkan_work_groups_are_checked_against_device_limits(spec: str) -> None:
    # Was: vulkan:0 (lavapipe) launched 32,768-invocation work groups past its limit of 1024.
    import hurray_gpu as hg

    sizes, invocations = hg.device(spec).local_limits
    assert invocations >= 128 and all(n >= 1 for n in sizes)
    side = next(n for n in (2, 4, 8, 16, 32, 64) if n ** 3 > invocations)
    wg = (side, side, side)  # every axis within its limit, the product over the total
    prog = b.program([b.output("o", 0, b.U32, 4)], [b.store("o", 0, 1)], workgroup_size=wg)
    with pytest.raises(vyre.UnsupportedOpError, match=f"over .* limits .{invocations} "
                       "invocations.*Fix: use a work group of at most"):
        vyre.run(prog, device=spec, grid=(1, 1, 1))
    ok = b.program([b.output("o", 0, b.U32, 4)], [b.store("o", b.local_id(0), 5)],
                   workgroup_size=(4, 1, 1))
    assert vyre.run(ok, device=spec, grid=(1, 1, 1))["o"].tolist() == [5, 5, 5, 5]
