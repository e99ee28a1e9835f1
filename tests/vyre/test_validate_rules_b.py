"""One failing and one passing program per validator rule, V070-V130 (vyre 0.7.2's validator)."""

from __future__ import annotations

import pytest

from vyre.ir import (
    AllGather,
    AllReduce,
    Array,
    Assign,
    AsyncLoad,
    AsyncStore,
    AsyncWait,
    Atomic,
    AtomicOp,
    Barrier,
    Binary,
    BinOp,
    Block,
    BufferDecl,
    Cast,
    If,
    IndirectDispatch,
    Let,
    LinearType,
    LitBool,
    LitF32,
    LitI32,
    LitU32,
    Load,
    Loop,
    MultipleOf,
    OpaqueOp,
    Program,
    Region,
    Return,
    Scalar,
    Store,
    Unary,
    UnOp,
)
from vyre.validate import ValidationOptions, validate

U32, I32, F32 = Scalar.U32, Scalar.I32, Scalar.F32
OUT = BufferDecl.read_write("out", 0, U32, 4)
RO = BufferDecl.read("ro", 1, U32, 4)
FBUF = BufferDecl.read_write("fbuf", 2, F32, 4)
BUFS = (OUT, RO, FBUF)
B0, B1, B2 = "entry[0].body[0]", "entry[0].body[1]", "entry[0].body[2]"


def u(v: int) -> LitU32:
    return LitU32(v)


def i(v: int) -> LitI32:
    return LitI32(v)


def f(v: float) -> LitF32:
    return LitF32.from_float(v)


def b(v: bool) -> LitBool:
    return LitBool(v)


def prog(*body: object, buffers: tuple[BufferDecl, ...] = BUFS,
         wg: tuple[int, int, int] = (1, 1, 1)) -> Program:
    return Program.wrapped(buffers, wg, list(body))  # type: ignore[arg-type]


def let(value: object, name: str = "x") -> Let:
    return Let(name, value)  # type: ignore[arg-type]


def bin_(op: BinOp, left: object, right: object) -> Binary:
    return Binary(op, left, right)  # type: ignore[arg-type]


def un(op: UnOp | OpaqueOp, operand: object) -> Unary:
    return Unary(op, operand)  # type: ignore[arg-type]


def u64(v: int) -> Cast:
    return Cast(Scalar.U64, u(v))


LINEAR = OUT.with_(linear_type=LinearType.LINEAR)
SELF_X = "gen.parser#self-exclusive"

# (code, failing program, location, node, expr_path)
FAILING = [
    ("V070", prog(buffers=(LINEAR,)), "buffers[0]", None, ""),
    ("V083", prog(buffers=(OUT.with_(count=3, shape_predicate=MultipleOf(64)),)), "buffers[0]",
     None, ""),
    ("V084", prog(let(bin_(BinOp.ADD, u64(1), u64(2)))), B0, 1, "value"),
    ("V085", prog(let(bin_(BinOp.SATURATING_ADD, i(1), i(2)))), B0, 1, "value"),
    ("V086", prog(let(bin_(BinOp.ABS_DIFF, i(1), i(2)))), B0, 1, "value"),
    ("V087", prog(let(bin_(BinOp.ADD, b(True), u(1)))), B0, 1, "value"),
    ("V088", prog(let(bin_(BinOp.MUL, u(1), i(2)))), B0, 1, "value"),
    ("V089", prog(let(bin_(BinOp.MOD, f(1.0), f(2.0)))), B0, 1, "value"),
    ("V090", prog(let(bin_(BinOp.MOD, u(1), i(2)))), B0, 1, "value"),
    ("V091", prog(let(bin_(BinOp.BIT_AND, f(1.0), u(2)))), B0, 1, "value"),
    ("V092", prog(let(bin_(BinOp.BIT_OR, u(1), f(2.0)))), B0, 1, "value"),
    ("V093", prog(let(bin_(BinOp.BIT_XOR, u(1), i(2)))), B0, 1, "value"),
    ("V094", prog(let(bin_(BinOp.SHL, i(1), u(2)))), B0, 1, "value"),
    ("V095", prog(let(bin_(BinOp.AND, f(1.0), b(True)))), B0, 1, "value"),
    ("V096", prog(let(bin_(BinOp.EQ, u(1), i(1)))), B0, 1, "value"),
    ("V097", prog(let(bin_(BinOp.SHUFFLE, u(1), u(2)))), B0, 1, "value"),
    ("V098", prog(let(un(UnOp.NEGATE, i(1)))), B0, 1, "value"),
    ("V099", prog(let(un(UnOp.NEGATE, b(True)))), B0, 1, "value"),
    ("V100", prog(let(un(UnOp.LOGICAL_NOT, f(1.0)))), B0, 1, "value"),
    ("V101", prog(let(un(UnOp.POPCOUNT, f(1.0)))), B0, 1, "value"),
    ("V102", prog(let(un(UnOp.SQRT, u(4)))), B0, 1, "value"),
    ("V103", prog(let(un(UnOp.UNPACK4_LOW, f(1.0)))), B0, 1, "value"),
    ("V104", prog(let(un(OpaqueOp(0x80000001), u(1)))), B0, 1, "value"),
    ("V105", Program(BUFS, (Return(),)), "entry[0]", 0, ""),
    ("V106", prog(wg=(4, 0, 1)), "workgroup_size[1]", None, ""),
    ("V107", prog(buffers=(OUT, RO.with_(name="out"))), "buffers[1]", None, ""),
    ("V108", prog(buffers=(OUT, RO.with_(binding=0))), "buffers[1]", None, ""),
    ("V109", prog(buffers=(BufferDecl.workgroup("wg", 0, U32),)), "buffers[0]", None, ""),
    ("V110", prog(buffers=(BufferDecl.output("res", 0, Array(12), 4),)), "buffers[0]", None, ""),
    ("V112", prog(Return(), let(u(1))), B0, None, ""),
    ("V115", Program(BUFS, (Region(SELF_X, None, ()), Region(SELF_X, None, ()))), "entry[1]",
     None, ""),
    ("V116", prog(let(Load("out", u(0))), let(Atomic(AtomicOp.ADD, "out", u(0), None, u(1)),
                                              "y")), B1, 2, ""),
    ("V117", prog(AsyncLoad("ro", "out", u(0), u(4), "")), B0, 1, ""),
    ("V119", prog(Assign("ro", u(1))), B0, 1, ""),
    ("V120", prog(Assign("ghost", u(1))), B0, 1, ""),
    ("V121", prog(Store("out", u(0), f(1.0))), B0, 1, ""),
    ("V122", prog(Store("out", i(0), u(1))), B0, 1, ""),
    ("V123", prog(If(f(1.0), ())), B0, 1, ""),
    ("V124", prog(Loop("k", i(0), u(4), ())), B0, 1, ""),
    ("V125", prog(Loop("k", u(0), i(4), ())), B0, 1, ""),
    ("V126", prog(IndirectDispatch("out", 6)), B0, 1, ""),
    ("V127", prog(IndirectDispatch("nope", 0)), B0, 1, ""),
    ("V128", prog(AsyncWait("")), B0, 1, ""),
    ("V130", prog(buffers=(BufferDecl.output("res", 0, U32),)), "buffers[0]", None, ""),
]


@pytest.mark.parametrize(("code", "program", "location", "node", "expr_path"), FAILING,
                         ids=[c[0] for c in FAILING])
def test_rule_fires_at_exact_location(code, program, location, node, expr_path) -> None:
    found = [d for d in validate(program) if d.code == code]
    assert found, f"{code} not reported: {validate(program)}"
    first = found[0]
    assert (first.location, first.node, first.expr_path) == (location, node, expr_path)
    assert first.severity == "error"
    assert " Fix: " in first.message


def test_v022_two_output_buffers_and_v046_collectives() -> None:
    two = prog(buffers=(BufferDecl.output("a", 0, U32, 4), BufferDecl.output("b", 1, U32, 4)))
    assert [(d.code, d.location) for d in validate(two)] == [("V022", "buffers")]
    coll = prog(AllReduce("out", 1), AllGather("ro", "fbuf"))
    codes = [(d.code, d.location) for d in validate(coll)]
    # capability (both nodes) plus the AllGather element mismatch (u32 vs f32)
    assert codes == [("V046", B0), ("V046", B1), ("V046", B1)]
    ok = ValidationOptions(distributed_collectives=True)
    assert validate(prog(AllReduce("out", 1), AllGather("ro", "out")), options=ok) == []


PASSING = [
    ("V070", prog(Store("out", u(0), u(1)), buffers=(LINEAR,))),
    ("V083", prog(buffers=(OUT.with_(count=128, shape_predicate=MultipleOf(64)),))),
    ("V084", prog(let(bin_(BinOp.ADD, u(1), u(2))))),
    ("V085", prog(let(bin_(BinOp.SATURATING_SUB, u(1), u(2))))),
    ("V086", prog(let(bin_(BinOp.ABS_DIFF, u(1), u(2))))),
    ("V087", prog(let(bin_(BinOp.ADD, f(1.0), f(2.0))))),
    ("V089", prog(let(bin_(BinOp.MOD, i(5), i(2))))),
    ("V091", prog(let(bin_(BinOp.BIT_AND, i(6), i(3))))),
    ("V094", prog(let(bin_(BinOp.ROTATE_LEFT, u(1), u(3))))),
    ("V095", prog(let(bin_(BinOp.OR, u(1), b(False))))),
    ("V096", prog(let(bin_(BinOp.GE, f(1.0), f(2.0))))),
    ("V098", prog(let(un(UnOp.NEGATE, f(1.0))))),
    ("V100", prog(let(un(UnOp.LOGICAL_NOT, b(True))))),
    ("V101", prog(let(un(UnOp.CLZ, u64(1))))),
    ("V102", prog(let(un(UnOp.IS_NAN, f(1.0))))),
    ("V103", prog(let(un(UnOp.UNPACK8_HIGH, i(7))))),
    ("V105", Program(BUFS, (Region("a", None, ()), Region("b", None, ())))),
    ("V106", prog(wg=(4, 2, 1))),
    ("V108", prog(buffers=(OUT, BufferDecl.workgroup("wg", 4, U32)))),
    ("V110", prog(buffers=(BufferDecl.output("res", 0, Scalar.VEC4_U32, 4),))),
    ("V112", prog(let(u(1)), Return())),
    ("V115", Program(BUFS, (Region(SELF_X, None, ()), Region("gen.parser", None, ())))),
    ("V116", prog(let(Load("out", u(0))), Barrier(),
                  let(Atomic(AtomicOp.ADD, "out", u(0), None, u(1)), "y"))),
    ("V117", prog(AsyncLoad("ro", "out", u(0), u(4), "t0"), AsyncWait("t0"),
                  AsyncStore("out", "fbuf", u(0), u(4), "t1"), AsyncWait("t1"))),
    ("V119", prog(Assign("out", u(1)))),
    ("V121", prog(Store("out", u(0), i(1)), Store("fbuf", u(0), f(1.0)))),
    ("V123", prog(If(b(True), (let(u(1)),), (let(u(2)),)))),
    ("V124", prog(Loop("k", u(0), u(4), (let(u(1)),)))),
    ("V126", prog(IndirectDispatch("out", 8))),
    ("V130", prog(buffers=(BufferDecl.output("res", 0, U32).with_(output_byte_range=(0, 0)),))),
]


@pytest.mark.parametrize(("code", "program"), PASSING, ids=[c[0] for c in PASSING])
def test_passing_twin_is_clean(code, program) -> None:
    assert validate(program) == []


def test_v019_node_count_limit_reported_once() -> None:
    at_limit = Program(BUFS, (Region("r", None, tuple(Block(()) for _ in range(99_999))),))
    assert validate(at_limit) == []
    over = Program(BUFS, (Region("r", None, tuple(Block(()) for _ in range(100_001))),))
    found = [(d.code, d.location, d.node) for d in validate(over)]
    assert found == [("V019", "entry[0].body[99999]", 100_000)]


def test_v008_allowed_by_shadowing_option_but_v032_is_not() -> None:
    shadow = prog(let(u(1)), Block((let(u(2)),)))
    assert validate(shadow, options=ValidationOptions(allow_shadowing=True)) == []
    siblings = prog(let(u(1)), let(u(2)))
    codes = [d.code for d in validate(siblings, options=ValidationOptions(allow_shadowing=True))]
    assert codes == ["V032"]


def test_v045_assign_to_buffer_and_unknown_binding_type() -> None:
    bad = prog(Assign("out", f(1.0)))
    assert [(d.code, d.location) for d in validate(bad)] == [("V045", B0)]
    # a binding whose type was not inferred (a Call result) takes no V045
    unknown = prog(Let("c", Cast(U32, u(1))), Assign("c", i(1)))
    assert [d.code for d in validate(unknown)] == ["V045"]
