"""One failing and one passing program per validator rule, V008-V068 (vyre 0.7.2's validator)."""

from __future__ import annotations

import pytest

from vyre.ir import (
    Assign,
    Atomic,
    AtomicOp,
    Barrier,
    Binary,
    BinOp,
    Block,
    BufferDecl,
    BufferRef,
    BufLen,
    Call,
    Cast,
    Fma,
    If,
    InvocationId,
    Let,
    LitBool,
    LitF32,
    LitI32,
    LitU32,
    Load,
    Loop,
    MemoryOrdering,
    Program,
    Return,
    Scalar,
    Select,
    Store,
    SubgroupReduce,
    SubgroupReduceOp,
    SubgroupSize,
    Unary,
    UnOp,
    Var,
    WorkgroupId,
)
from vyre.validate import ValidationOptions, register_op, unregister_op, validate

U32, I32, F32 = Scalar.U32, Scalar.I32, Scalar.F32
OUT = BufferDecl.read_write("out", 0, U32, 4)
RO = BufferDecl.read("ro", 1, U32, 4)
FBUF = BufferDecl.read_write("fbuf", 2, F32, 4)
WG = BufferDecl.workgroup("wg", 4, U32)
RAW = BufferDecl.read("raw", 3, Scalar.BYTES, 4)
IBUF = BufferDecl.read_write("ibuf", 4, I32, 4)
BUFS = (OUT, RO, FBUF, WG, IBUF)
SUBGROUPS = ValidationOptions(subgroup_ops=True)


def u(v: int) -> LitU32:
    return LitU32(v)


def f(v: float) -> LitF32:
    return LitF32.from_float(v)


def prog(*body: object, buffers: tuple[BufferDecl, ...] = BUFS) -> Program:
    return Program.wrapped(buffers, (1, 1, 1), list(body))  # type: ignore[arg-type]


def let(name: str, value: object) -> Let:
    return Let(name, value)  # type: ignore[arg-type]


def atomic(buffer: str = "out", op: AtomicOp = AtomicOp.ADD, index: object = None,
           expected: object = None, value: object = None,
           ordering: MemoryOrdering = MemoryOrdering.SEQ_CST) -> Atomic:
    return Atomic(op, buffer, index or u(0), expected, value or u(1), ordering)  # type: ignore


def nested_blocks(levels: int) -> Block:
    node: Block = Block((let("deep", u(1)),))
    for _ in range(levels - 1):
        node = Block((node,))
    return node


def _deep_negate(levels: int) -> object:
    expr: object = u(1)
    for _ in range(levels):
        expr = Unary(UnOp.NEGATE, expr)  # type: ignore[arg-type]
    return expr


@pytest.fixture(autouse=True)
def _ops():
    register_op("t.unary_u32", [("x", "u32")])
    register_op("t.bad_spelling", [("x", "float")])
    register_op("t.buf_u32", [("data", "buffer<u32>")])
    register_op("t.buf_f32", [("data", "buffer<f32>")])
    yield
    for op in ("t.unary_u32", "t.bad_spelling", "t.buf_u32", "t.buf_f32"):
        unregister_op(op)


B0, B1, B2 = "entry[0].body[0]", "entry[0].body[1]", "entry[0].body[2]"

# (code, failing program, location, node, expr_path, options)
FAILING = [
    ("V008", prog(let("x", u(1)), Block((let("x", u(2)),))), "entry[0].body[1].nodes[0]", 3, ""),
    ("V009", prog(let("a", atomic("ro"))), B0, 1, "value"),
    ("V010", prog(If(Binary(BinOp.LT, InvocationId(0), u(4)), (Barrier(),))),
     "entry[0].body[0].then[0]", 2, ""),
    ("V011", prog(Loop("i", u(0), u(4), (Assign("i", u(1)),))), "entry[0].body[0].body[0]", 2,
     ""),
    ("V012", prog(let("c", Cast(Scalar.F16, u(1)))), B0, 1, "value"),
    ("V013", prog(let("x", Load("raw", u(0))), buffers=(RAW,)), B0, 1, "value"),
    ("V014", prog(let("a", atomic("ibuf"))), B0, 1, "value"),
    ("V016", prog(let("c", Call("t.unknown", (u(1),)))), B0, 1, "value"),
    ("V018", prog(nested_blocks(65)), "entry[0].body[0]" + ".nodes[0]" * 64, 65, ""),
    ("V020", prog(let("c", Call("t.unary_u32", (u(1), u(2))))), B0, 1, "value"),
    ("V021", prog(let("c", Call("t.bad_spelling", (u(1),)))), B0, 1, "value.args[0]"),
    ("V022", prog(let("c", Call("t.unary_u32", (LitI32(1),)))), B0, 1, "value.args[0]"),
    ("V023", prog(let("c", Cast(Scalar.BYTES, u(1)))), B0, 1, "value"),
    ("V025", prog(let("a", atomic("wg"))), B0, 1, "value"),
    ("V027", prog(let("a", atomic(index=LitI32(0)))), B0, 1, "value"),
    ("V028", prog(let("m", Fma(u(1), f(1.0), f(2.0)))), B0, 1, "value"),
    ("V029", prog(let("s", Select(LitBool(True), u(1), LitI32(1)))), B0, 1, "value"),
    ("V032", prog(let("x", u(1)), let("x", u(2))), B1, 2, ""),
    ("V033", prog(let("deep", _deep_negate(130))), B0, 1, "value" + ".operand" * 129),
    ("V035", prog(let("c", Cast(Scalar.U8, u(300)))), B0, 1, "value"),
    ("V036", prog(Store("out", u(4), u(1))), B0, 1, ""),
    ("V041", prog(let("s", SubgroupSize())), B0, 1, "value"),
    ("V042", prog(let("a", atomic(ordering=MemoryOrdering.GRID_SYNC))), B0, 1, "value"),
    ("V043", prog(Barrier(MemoryOrdering.RELAXED)), B0, 1, ""),
    ("V044", prog(let("d", Binary(BinOp.DIV, u(7), u(0)))), B0, 1, "value"),
    ("V045", prog(let("x", u(1)), Assign("x", LitI32(1))), B1, 2, ""),
    ("V051", prog(let("r", BufferRef("out"))), B0, 1, "value"),
    ("V052", prog(let("c", Call("t.buf_u32", (BufferRef("nope"),)))), B0, 1, "value.args[0]"),
    ("V053", prog(let("c", Call("t.buf_u32", (u(0),)))), B0, 1, "value.args[0]"),
    ("V054", prog(let("c", Call("t.buf_f32", (BufferRef("out"),)))), B0, 1, "value.args[0]"),
    ("V055", prog(Loop("i", u(0), u(4), (
        Barrier(), If(Binary(BinOp.LT, InvocationId(0), u(1)), (Return(),))))), B0, 1, ""),
    ("V057", prog(let("a", atomic(value=LitI32(1)))), B0, 1, "value"),
    ("V058", prog(let("a", atomic(op=AtomicOp.COMPARE_EXCHANGE, expected=LitI32(0)))), B0, 1,
     "value"),
    ("V059", prog(let("a", atomic(op=AtomicOp.COMPARE_EXCHANGE))), B0, 1, "value"),
    ("V060", prog(let("a", atomic(op=AtomicOp.COMPARE_EXCHANGE_WEAK, expected=u(0)))), B0, 1,
     "value"),
    ("V061", prog(let("a", atomic("nope"))), B0, 1, "value"),
    ("V063", prog(Store("ro", u(0), u(1))), B0, 1, ""),
    ("V064", prog(Store("nope", u(0), u(1))), B0, 1, ""),
    ("V065", prog(let("x", Load("nope", u(0)))), B0, 1, "value"),
    ("V066", prog(let("x", Var("ghost"))), B0, 1, "value"),
    ("V067", prog(let("n", BufLen("nope"))), B0, 1, "value"),
    ("V068", prog(let("g", InvocationId(3))), B0, 1, "value"),
]



OPTION_FAILS = [
    ("V034", prog(let("c", Cast(F32, u(1)))), ValidationOptions(cast_targets=frozenset({U32})),
     B0, "value"),
    ("V047", prog(let("r", SubgroupReduce(SubgroupReduceOp.XOR, f(1.0)))), SUBGROUPS, B0,
     "value"),
]


@pytest.mark.parametrize(("code", "program", "location", "node", "expr_path"), FAILING,
                         ids=[c[0] for c in FAILING])
def test_rule_fires_at_exact_location(code, program, location, node, expr_path) -> None:
    found = [d for d in validate(program) if d.code == code]
    assert found, f"{code} not reported: {validate(program)}"
    first = found[0]
    assert (first.location, first.node, first.expr_path) == (location, node, expr_path)
    assert first.message.rstrip().split("Fix: ")[-1]
    assert " Fix: " in first.message
    assert first.severity == ("warning" if code == "V035" else "error")


@pytest.mark.parametrize(("code", "program", "options", "location", "expr_path"), OPTION_FAILS,
                         ids=[c[0] for c in OPTION_FAILS])
def test_option_dependent_rule_fires(code, program, options, location, expr_path) -> None:
    found = [d for d in validate(program, options=options) if d.code == code]
    assert [(d.location, d.expr_path) for d in found] == [(location, expr_path)]


# Passing twins: each is a fully valid program exercising the same construct correctly.
PASSING = [
    ("V008", prog(Block((let("x", u(1)),)), let("x", u(2)))),
    ("V009", prog(let("a", atomic("out")))),
    ("V010", prog(If(Binary(BinOp.LT, WorkgroupId(0), u(4)), (Barrier(),)))),
    ("V011", prog(let("acc", u(0)), Loop("i", u(0), u(4), (Assign("acc", Var("i")),)))),
    ("V012", prog(let("c", Cast(F32, u(1))))),
    ("V013", prog(let("x", Load("raw", u(0))), buffers=(RAW.with_(bytes_extraction=True),))),
    ("V016", prog(let("c", Call("t.unary_u32", (u(1),))))),
    ("V018", prog(nested_blocks(63))),
    ("V021", prog(let("c", Call("t.buf_u32", (BufferRef("out"),))))),
    ("V023", prog(let("c", Cast(U32, u(1))))),
    ("V028", prog(let("m", Fma(f(1.0), f(1.0), f(2.0))))),
    ("V029", prog(let("s", Select(LitBool(True), u(1), u(2))))),
    ("V032", prog(let("x", u(1)), Block((let("y", u(2)),)))),
    ("V033", prog(let("deep", _deep_negate(100)))),
    ("V035", prog(let("c", Cast(Scalar.U64, u(300))))),
    ("V036", prog(Store("out", u(3), u(1)))),
    ("V042", prog(let("a", atomic(ordering=MemoryOrdering.RELAXED)))),
    ("V043", prog(Barrier(MemoryOrdering.ACQUIRE), Barrier(MemoryOrdering.GRID_SYNC))),
    ("V044", prog(let("d", Binary(BinOp.DIV, u(7), u(2))))),
    ("V045", prog(let("x", u(1)), Assign("x", u(2)))),
    ("V055", prog(Loop("i", u(0), u(4), (
        Barrier(), If(Binary(BinOp.LT, InvocationId(0), u(1)), (Return(),)), Barrier())))),
    ("V058", prog(let("a", atomic(op=AtomicOp.COMPARE_EXCHANGE, expected=u(0))))),
    ("V063", prog(Store("out", u(0), Load("ro", u(0))))),
    ("V066", prog(let("x", u(1)), let("y", Var("x")))),
    ("V068", prog(let("g", InvocationId(2)))),
]


@pytest.mark.parametrize(("code", "program"), PASSING, ids=[c[0] for c in PASSING])
def test_passing_twin_is_clean(code, program) -> None:
    assert validate(program) == []


def test_subgroup_and_collective_rules_pass_with_capabilities() -> None:
    p = prog(let("s", SubgroupSize()), let("r", SubgroupReduce(SubgroupReduceOp.ADD, f(1.0))))
    assert [d.code for d in validate(p)] == ["V041", "V041"]
    assert validate(p, options=SUBGROUPS) == []
    assert validate(prog(let("c", Cast(F32, u(1)))),
                    options=ValidationOptions(cast_targets=frozenset({F32}))) == []
