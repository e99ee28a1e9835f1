"""Public API of vyre.validate: diagnostics, raising, options, hostile inputs and V055 details."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from hurray_gpu.errors import HurrayGPUError
from vyre.ir import (
    Barrier,
    Binary,
    BinOp,
    Block,
    BufferDecl,
    Cast,
    ExtensionExpr,
    If,
    InvocationId,
    Let,
    LitU32,
    Load,
    Loop,
    MemoryOrdering,
    NestingError,
    OpaqueExpr,
    OpaqueNode,
    Program,
    Return,
    Scalar,
    Store,
    Unary,
    UnOp,
    Var,
)
from vyre.validate import (
    Diagnostic,
    ValidationError,
    ValidationOptions,
    errors_of,
    register_op,
    validate,
)

OUT = BufferDecl.read_write("out", 0, Scalar.U32, 4)
RO = BufferDecl.read("ro", 1, Scalar.U32, 4)


def u(v: int) -> LitU32:
    return LitU32(v)


def prog(*body: object) -> Program:
    return Program.wrapped((OUT, RO), (1, 1, 1), list(body))  # type: ignore[arg-type]


def test_raise_on_error_raises_typed_picklable_error() -> None:
    bad = prog(Store("ro", u(0), u(1)), Store("nope", u(0), u(1)))
    with pytest.raises(ValidationError) as info:
        validate(bad, raise_on_error=True)
    err = info.value
    assert isinstance(err, HurrayGPUError) and isinstance(err, ValueError)
    assert [d.code for d in err.errors] == ["V063", "V064"]
    text = str(err)
    assert text.startswith("IR validation rejected the program: V063 at entry[0].body[0]")
    assert "(and 1 more)" in text
    assert text.endswith("Fix: declare it with BufferAccess::ReadWrite, BufferAccess::WriteOnly, "
                         "or BufferAccess::Workgroup.")
    clone = pickle.loads(pickle.dumps(err))
    assert type(clone) is ValidationError and str(clone) == text
    assert clone.diagnostics == err.diagnostics


def test_warnings_never_raise_and_are_returned() -> None:
    p = prog(Let("c", Cast(Scalar.U16, u(70000))))
    found = validate(p, raise_on_error=True)
    assert [(d.code, d.severity, d.is_error) for d in found] == [("V035", "warning", False)]
    assert errors_of(found) == []


def test_diagnostic_is_frozen_and_prints_its_location() -> None:
    d = validate(prog(Let("x", Var("ghost"))))[0]
    assert isinstance(d, Diagnostic)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.code = "V000"  # type: ignore[misc]
    assert str(d).startswith("V066 error at entry[0].body[0] (value): reference to undeclared")
    assert d.phase == "Expression"


def test_non_program_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="Fix:"):
        validate(b"VYRE")  # type: ignore[arg-type]


def test_register_op_rejects_non_string_spelling() -> None:
    with pytest.raises(TypeError, match="Fix:"):
        register_op("t.bad", [("x", 3)])  # type: ignore[list-item]


def test_deep_expression_is_bounded_not_recursive() -> None:
    expr: object = u(1)
    for _ in range(140):
        expr = Unary(UnOp.NEGATE, expr)  # type: ignore[arg-type]
    found = validate(prog(Let("deep", expr)))  # type: ignore[arg-type]
    assert [(d.code, d.expr_path.count(".operand")) for d in found] == [("V033", 129)]
    for _ in range(20_000):  # deeper trees are refused when the Program is built
        expr = Unary(UnOp.NEGATE, expr)  # type: ignore[arg-type]
    with pytest.raises(NestingError):
        prog(Let("deep", expr))  # type: ignore[arg-type]


def test_deep_statement_nesting_is_bounded_not_recursive() -> None:
    node: object = Loop("i", u(0), u(2), (Barrier(), If(Var("i"), (Return(),))))
    for _ in range(140):
        node = Block((node,))  # type: ignore[arg-type]
    node = Loop("j", u(0), u(2), (Barrier(), node))  # type: ignore[arg-type]
    found = validate(prog(node))
    assert [d.code for d in found] == ["V018", "V055"]
    for _ in range(5_000):  # deeper trees are refused when the Program is built
        node = Block((node,))  # type: ignore[arg-type]
    with pytest.raises(NestingError):
        prog(node)


def test_wide_program_validates_clean() -> None:
    # 20,000 statements: the walk is iterative and linear, so this finishes (no recursion limit).
    body = [Let(f"v{i}", Binary(BinOp.ADD, u(i), u(1))) for i in range(20_000)]
    assert validate(prog(*body)) == []


def _exit_loop(barrier: MemoryOrdering, guard: object) -> Loop:
    return Loop("i", u(0), u(4), (Barrier(barrier), If(guard, (Return(),))))  # type: ignore


def test_v055_credits_a_barrier_settled_uniform_exit() -> None:
    settled = Binary(BinOp.EQ, Load("out", u(0)), u(0))
    assert validate(prog(_exit_loop(MemoryOrdering.SEQ_CST, settled))) == []
    # a release-only barrier does not settle loads, and a lane-dependent index is divergent
    assert [d.code for d in validate(prog(_exit_loop(MemoryOrdering.RELEASE, settled)))] == [
        "V055"]
    lane = Binary(BinOp.EQ, Load("out", InvocationId(0)), u(0))
    assert [d.code for d in validate(prog(_exit_loop(MemoryOrdering.SEQ_CST, lane)))] == ["V055"]
    # a write after the barrier dirties the loaded buffer
    dirty = Loop("i", u(0), u(4), (Barrier(), Store("out", u(1), u(1)),
                                   If(settled, (Return(),))))
    assert [d.code for d in validate(prog(dirty))] == ["V055"]
    # no barrier in the body: not a collective loop, no obligation
    free = Loop("i", u(0), u(4), (If(Binary(BinOp.LT, InvocationId(0), u(2)), (Return(),)),))
    assert validate(prog(free)) == []


def test_divergent_loop_bounds_make_barriers_divergent() -> None:
    lane_bound = Loop("i", u(0), InvocationId(0), (Barrier(),))
    uniform_bound = Loop("i", u(0), u(3), (Barrier(),))
    assert [d.code for d in validate(prog(lane_bound))] == ["V010"]
    assert validate(prog(uniform_bound)) == []
    tainted = prog(Let("n", u(4)), Let("g", InvocationId(0)),
                   If(Binary(BinOp.LT, Var("n"), u(9)), (Barrier(),)),
                   If(Binary(BinOp.LT, Var("g"), u(9)), (Barrier(),)))
    assert [(d.code, d.location) for d in validate(tainted)] == [
        ("V010", "entry[0].body[3].then[0]")]


class _GoodExt(ExtensionExpr):
    kind = "test.good"

    def result_type(self) -> Scalar:
        return Scalar.U32

    def debug_identity(self) -> str:
        return "good#1"


class _BadExt(_GoodExt):
    def validate_extension(self) -> str:
        return "payload too short"


def test_opaque_extensions() -> None:
    assert validate(prog(Let("e", _GoodExt()))) == []
    bad = [d.message for d in validate(prog(Let("e", _BadExt())))]
    assert len(bad) == 1 and "failed validation: payload too short" in bad[0]
    raw = [d.code for d in validate(prog(Let("e", OpaqueExpr("k", b"\x00"))))]
    assert raw == ["V030"]  # a raw payload has no static result type
    assert validate(prog(OpaqueNode("test.node", b""))) == []
    # empty kind, and so an empty default identity
    assert [d.code for d in validate(prog(OpaqueNode("", b"")))] == ["V031", "V031"]


def test_options_default_matches_reference_defaults() -> None:
    opts = ValidationOptions()
    assert (opts.allow_shadowing, opts.subgroup_ops, opts.distributed_collectives,
            opts.cast_targets) == (False, False, False, None)
