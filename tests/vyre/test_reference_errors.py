"""Reference interpreter errors: validation first, runtime errors, and hostile-program bounds."""

from __future__ import annotations

import pickle
import time

import numpy as np
import pytest

from vyre import ValidationError, ir, reference
from vyre import builder as b

GID = b.invocation_id(0)


def test_invalid_program_is_rejected_by_validation_with_a_fix() -> None:
    prog = b.program([b.output("o", 0, b.U32, 1)],
                     [b.let("x", 1), b.block(b.let("x", 2)), b.store("o", 0, b.var("x"))])
    with pytest.raises(ValidationError, match="Fix:") as info:
        reference.run(prog, grid=(1, 1, 1))
    assert info.value.errors[0].code == "V008"


@pytest.mark.parametrize(("body", "match"), [
    ([b.let("x", 1), b.block(b.let("x", 2))], "duplicate local"),
    ([b.assign("nope", 1)], "undeclared"),
    ([b.loop("i", 0, 2, [b.assign("i", 5)])], "loop variable"),
    ([b.store("o", 0, b.var("ghost"))], "undeclared variable"),
    ([b.ir.Trap(b.expr(7), "boom")], "trapped"),
    ([b.ir.Resume("r")], "Resume"),
    ([b.ir.IndirectDispatch("o", 0)], "IndirectDispatch"),
    ([b.ir.AsyncWait("never")], "no matching"),
    ([b.ir.AsyncLoad("o", "o", b.expr(0), b.expr(4), "t")], "still pending"),
    ([b.store("o", b.lit_i32(-1), 1)], "cannot be represented as u32"),
    ([b.store("o", 0, b.call("vyre.test.op", 1))], "Call of operation"),
    ([b.let("x", b.atomic(ir.AtomicOp.FETCH_NAND, "o", 0, 1))], "not supported"),
    ([b.store("o", 0, b.unop(ir.UnOp.ABS, 1))], "not defined"),
])
def test_runtime_errors_are_typed_and_carry_a_fix(body, match) -> None:
    prog = b.program([b.read_write("o", 0, b.U32, 1)], body)
    with pytest.raises(reference.ReferenceExecutionError, match=match) as info:
        reference.run(prog, {"o": np.zeros(1, np.uint32)}, grid=(1, 1, 1), validate=False)
    assert "Fix:" in str(info.value)
    assert pickle.loads(pickle.dumps(info.value)).args == info.value.args


def test_endless_loop_hits_the_step_bound() -> None:
    prog = b.program([b.read_write("o", 0, b.U32, 1)], [
        b.ir.forever((b.store("o", 0, b.add(b.load("o", 0), 1)),))])
    start = time.perf_counter()
    with pytest.raises(reference.StepLimitExceeded, match="max_steps"):
        reference.run(prog, {"o": np.zeros(1, np.uint32)}, grid=(1, 1, 1), max_steps=20_000)
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("grid,wg", [((0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (1, 1, 1)),
                                     ((1, 1, 1), (1024, 1024, 64))])
def test_huge_grids_and_workgroups_hit_the_step_bound_fast(grid, wg) -> None:
    prog = b.program([b.output("o", 0, b.U32, 1)], [b.store("o", 0, 1)], workgroup_size=wg)
    with pytest.raises(reference.StepLimitExceeded):
        reference.run(prog, grid=grid, max_steps=10_000, validate=False)


def test_huge_buffers_are_refused_before_allocation() -> None:
    prog = b.program([b.output("o", 0, b.U32, 0xFFFFFFFF)], [b.store("o", 0, 1)])
    with pytest.raises(reference.ReferenceLimitError, match="max_buffer_bytes"):
        reference.run(prog, grid=(1, 1, 1))
    wg = b.program([b.workgroup("s", 0x7FFFFFFF, b.U32), b.output("o", 0, b.U32, 1)],
                   [b.store("s", 0, 1)])
    with pytest.raises(reference.ReferenceLimitError, match="64 MiB"):
        reference.run(wg, grid=(1, 1, 1), validate=False)


def test_deep_expressions_run_or_fail_typed() -> None:
    e: ir.Expr = b.lit_u32(0)
    for _ in range(120):
        e = b.add(e, 1)
    prog = b.program([b.output("o", 0, b.U32, 1)], [b.store("o", 0, e)])
    assert reference.run(prog, grid=(1, 1, 1), validate=False)["o"].tolist() == [120]
    for _ in range(2000):  # was: RecursionError from ==, hash, repr and the device path
        e = b.add(e, 1)
    with pytest.raises(ir.NestingError, match="more than 160 levels.*Fix: flatten"):
        b.program([b.output("o", 0, b.U32, 1)], [b.store("o", 0, e)])


def test_bad_options_are_input_errors() -> None:
    prog = b.program([b.output("o", 0, b.U32, 1)], [b.store("o", 0, 1)])
    with pytest.raises(reference.ReferenceInputError, match="grid"):
        reference.run(prog, grid=(1, 2))
    with pytest.raises(reference.ReferenceInputError, match="lane_order"):
        reference.run(prog, grid=(1, 1, 1), lane_order="random")
    with pytest.raises(reference.ReferenceInputError, match="Program"):
        reference.run("not a program")  # type: ignore[arg-type]
