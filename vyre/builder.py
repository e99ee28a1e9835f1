"""A small builder API for writing vyre programs by hand in tests and docs.

Python ints, bools and floats become literals; see :func:`program` for an example.
"""

from __future__ import annotations

from collections.abc import Iterable

from vyre import ir
from vyre.ir import AtomicOp, BinOp, MemoryOrdering, UnOp

U32, I32, U64, I64, F32, F16, BF16, F64 = (
    ir.Scalar.U32, ir.Scalar.I32, ir.Scalar.U64, ir.Scalar.I64, ir.Scalar.F32, ir.Scalar.F16,
    ir.Scalar.BF16, ir.Scalar.F64,
)
U8, U16, I8, I16, BOOL, BYTES = (
    ir.Scalar.U8, ir.Scalar.U16, ir.Scalar.I8, ir.Scalar.I16, ir.Scalar.BOOL, ir.Scalar.BYTES,
)

ExprLike = ir.Expr | int | bool | float


def expr(value: ExprLike) -> ir.Expr:
    """Coerce a Python literal to an Expr (Exprs pass through).

    Args:
        value: an Expr, bool, int (u32 range, or negative i32) or float.

    Returns:
        The expression.

    Raises:
        TypeError: the value cannot be a literal.
        ValueError: an int outside both the u32 and the i32 range.
    """
    if isinstance(value, ir.Expr):
        return value
    if isinstance(value, bool):
        return ir.LitBool(value)
    if isinstance(value, int):
        if 0 <= value <= 0xFFFFFFFF:
            return ir.LitU32(value)
        if -(1 << 31) <= value < 0:
            return ir.LitI32(value)
        raise ValueError(f"integer literal {value} fits neither u32 nor i32")
    if isinstance(value, float):
        return ir.LitF32.from_float(value)
    raise TypeError(f"cannot make an expression from {type(value).__name__}")


# -- literals and leaves ---------------------------------------------------------------------

def lit_u32(value: int) -> ir.LitU32:
    """A u32 literal."""
    return ir.LitU32(value)


def lit_i32(value: int) -> ir.LitI32:
    """An i32 literal."""
    return ir.LitI32(value)


def lit_bool(value: bool) -> ir.LitBool:
    """A boolean literal."""
    return ir.LitBool(bool(value))


def lit_f32(value: float) -> ir.LitF32:
    """An f32 literal from a Python float."""
    return ir.LitF32.from_float(value)


def lit_f32_bits(bits: int) -> ir.LitF32:
    """An f32 literal from raw bits (keeps NaN payloads, -0.0, subnormals)."""
    return ir.LitF32(bits)


def var(name: str) -> ir.Var:
    """A variable reference."""
    return ir.Var(name)


def load(buffer: str, index: ExprLike) -> ir.Load:
    """``buffer[index]``."""
    return ir.Load(buffer, expr(index))


def buf_len(buffer: str) -> ir.BufLen:
    """Element count of ``buffer``."""
    return ir.BufLen(buffer)


def buffer_ref(buffer: str) -> ir.BufferRef:
    """A whole-buffer Call argument."""
    return ir.BufferRef(buffer)


def invocation_id(axis: int = 0) -> ir.InvocationId:
    """Global invocation id."""
    return ir.InvocationId(axis)


def workgroup_id(axis: int = 0) -> ir.WorkgroupId:
    """Workgroup id."""
    return ir.WorkgroupId(axis)


def local_id(axis: int = 0) -> ir.LocalId:
    """Local invocation id."""
    return ir.LocalId(axis)


# -- operators --------------------------------------------------------------------------------

def binop(op: BinOp | ir.OpaqueOp, left: ExprLike, right: ExprLike) -> ir.Binary:
    """A binary operation."""
    return ir.Binary(op, expr(left), expr(right))


def unop(op: UnOp | ir.OpaqueOp, operand: ExprLike) -> ir.Unary:
    """A unary operation."""
    return ir.Unary(op, expr(operand))


def _binary(op: BinOp):
    def build(left: ExprLike, right: ExprLike) -> ir.Binary:
        return ir.Binary(op, expr(left), expr(right))

    build.__name__ = op.name.lower()
    build.__doc__ = f"``BinOp.{op.name}`` of two operands."
    return build


def _unary(op: UnOp):
    def build(operand: ExprLike) -> ir.Unary:
        return ir.Unary(op, expr(operand))

    build.__name__ = op.name.lower()
    build.__doc__ = f"``UnOp.{op.name}`` of one operand."
    return build


add, sub, mul, div, mod = (_binary(o) for o in (BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV,
                                                BinOp.MOD))
bit_and, bit_or, bit_xor, shl, shr = (
    _binary(o) for o in (BinOp.BIT_AND, BinOp.BIT_OR, BinOp.BIT_XOR, BinOp.SHL, BinOp.SHR)
)
eq, ne, lt, gt, le, ge = (
    _binary(o) for o in (BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.GT, BinOp.LE, BinOp.GE)
)
and_, or_, abs_diff, min_, max_ = (
    _binary(o) for o in (BinOp.AND, BinOp.OR, BinOp.ABS_DIFF, BinOp.MIN, BinOp.MAX)
)
saturating_add, saturating_sub, saturating_mul = (
    _binary(o) for o in (BinOp.SATURATING_ADD, BinOp.SATURATING_SUB, BinOp.SATURATING_MUL)
)
rotate_left, rotate_right, wrapping_add, wrapping_sub, mul_high = (
    _binary(o) for o in (BinOp.ROTATE_LEFT, BinOp.ROTATE_RIGHT, BinOp.WRAPPING_ADD,
                         BinOp.WRAPPING_SUB, BinOp.MUL_HIGH)
)
negate, bit_not, logical_not, popcount, clz, ctz, reverse_bits = (
    _unary(o) for o in (UnOp.NEGATE, UnOp.BIT_NOT, UnOp.LOGICAL_NOT, UnOp.POPCOUNT, UnOp.CLZ,
                        UnOp.CTZ, UnOp.REVERSE_BITS)
)
sqrt, abs_, floor, ceil, exp, log = (
    _unary(o) for o in (UnOp.SQRT, UnOp.ABS, UnOp.FLOOR, UnOp.CEIL, UnOp.EXP, UnOp.LOG)
)


def call(op_id: str, *args: ExprLike) -> ir.Call:
    """Call a registered operation."""
    return ir.Call(op_id, tuple(expr(a) for a in args))


def select(cond: ExprLike, if_true: ExprLike, if_false: ExprLike) -> ir.Select:
    """``cond ? if_true : if_false``."""
    return ir.Select(expr(cond), expr(if_true), expr(if_false))


def cast(target: ir.DataType, value: ExprLike) -> ir.Cast:
    """Convert ``value`` to ``target``."""
    return ir.Cast(target, expr(value))


def fma(a: ExprLike, b: ExprLike, c: ExprLike) -> ir.Fma:
    """``a * b + c``."""
    return ir.Fma(expr(a), expr(b), expr(c))


def atomic(
    op: AtomicOp | ir.OpaqueOp, buffer: str, index: ExprLike, value: ExprLike, *,
    expected: ExprLike | None = None, ordering: MemoryOrdering = MemoryOrdering.SEQ_CST,
) -> ir.Atomic:
    """An atomic RMW on ``buffer[index]``."""
    exp = None if expected is None else expr(expected)
    return ir.Atomic(op, buffer, expr(index), exp, expr(value), ordering)


def atomic_add(
    buffer: str, index: ExprLike, value: ExprLike,
    ordering: MemoryOrdering = MemoryOrdering.SEQ_CST,
) -> ir.Atomic:
    """``atomic_add(buffer[index], value)``."""
    return atomic(AtomicOp.ADD, buffer, index, value, ordering=ordering)


def subgroup_reduce(op: ir.SubgroupReduceOp, value: ExprLike) -> ir.SubgroupReduce:
    """Subgroup-wide reduction."""
    return ir.SubgroupReduce(op, expr(value))


def subgroup_add(value: ExprLike) -> ir.SubgroupReduce:
    """Subgroup-wide sum."""
    return ir.SubgroupReduce(ir.SubgroupReduceOp.ADD, expr(value))


def subgroup_shuffle(value: ExprLike, lane: ExprLike) -> ir.SubgroupShuffle:
    """Read ``value`` from ``lane``."""
    return ir.SubgroupShuffle(expr(value), expr(lane))


def subgroup_ballot(cond: ExprLike) -> ir.SubgroupBallot:
    """Ballot of ``cond``."""
    return ir.SubgroupBallot(expr(cond))


# -- statements -------------------------------------------------------------------------------

def let(name: str, value: ExprLike) -> ir.Let:
    """``let name = value``."""
    return ir.Let(name, expr(value))


def assign(name: str, value: ExprLike) -> ir.Assign:
    """``name = value``."""
    return ir.Assign(name, expr(value))


def store(buffer: str, index: ExprLike, value: ExprLike) -> ir.Store:
    """``buffer[index] = value``."""
    return ir.Store(buffer, expr(index), expr(value))


def if_(cond: ExprLike, then: Iterable[ir.Node], otherwise: Iterable[ir.Node] = ()) -> ir.If:
    """``if cond { then } else { otherwise }``."""
    return ir.If(expr(cond), tuple(then), tuple(otherwise))


def loop(var_name: str, start: ExprLike, stop: ExprLike, body: Iterable[ir.Node]) -> ir.Loop:
    """``for var_name in start..stop { body }``."""
    return ir.Loop(var_name, expr(start), expr(stop), tuple(body))


def block(*nodes: ir.Node) -> ir.Block:
    """A nested scope."""
    return ir.Block(tuple(nodes))


def region(generator: str, body: Iterable[ir.Node], source: str | None = None) -> ir.Region:
    """A named region."""
    return ir.Region(generator, source, tuple(body))


def barrier(ordering: MemoryOrdering = MemoryOrdering.SEQ_CST) -> ir.Barrier:
    """A workgroup barrier."""
    return ir.Barrier(ordering)


def return_() -> ir.Return:
    """Early return."""
    return ir.Return()


# -- buffers and programs ---------------------------------------------------------------------

def read(name: str, binding: int, element: ir.DataType, count: int = 0) -> ir.BufferDecl:
    """A ReadOnly storage buffer."""
    return ir.BufferDecl.read(name, binding, element, count)


def read_write(name: str, binding: int, element: ir.DataType, count: int = 0) -> ir.BufferDecl:
    """A ReadWrite storage buffer."""
    return ir.BufferDecl.read_write(name, binding, element, count)


def output(name: str, binding: int, element: ir.DataType, count: int) -> ir.BufferDecl:
    """An output buffer (ReadWrite, is_output and pipeline_live_out)."""
    return ir.BufferDecl.output(name, binding, element, count)


def workgroup(name: str, count: int, element: ir.DataType) -> ir.BufferDecl:
    """A workgroup-shared buffer."""
    return ir.BufferDecl.workgroup(name, count, element)


def program(
    buffers: Iterable[ir.BufferDecl],
    body: Iterable[ir.Node],
    *,
    workgroup_size: tuple[int, int, int] = (1, 1, 1),
    wrapped: bool = True,
    entry_op_id: str | None = None,
    non_composable_with_self: bool = False,
) -> ir.Program:
    """Build a Program; ``wrapped`` adds the root Region like ``Program::wrapped``.

    Example::

        from vyre import builder as b
        prog = b.program(
            [b.read("a", 0, b.U32), b.output("out", 1, b.U32, 4)],
            [b.let("i", b.invocation_id(0)),
             b.store("out", b.var("i"), b.bit_xor(b.load("a", b.var("i")), 0xFF))],
            workgroup_size=(4, 1, 1),
        )

    Args:
        buffers: buffer declarations.
        body: top-level statements.
        workgroup_size: (x, y, z).
        wrapped: wrap the body in ``Region("vyre.program.root")`` unless it is all Regions.
        entry_op_id: optional entry op id.
        non_composable_with_self: the composition-safety flag.

    Returns:
        The program.
    """
    if wrapped:
        return ir.Program.wrapped(
            tuple(buffers), workgroup_size, tuple(body), entry_op_id=entry_op_id,
            non_composable_with_self=non_composable_with_self,
        )
    return ir.Program(
        tuple(buffers), tuple(body), tuple(workgroup_size), entry_op_id,  # type: ignore[arg-type]
        non_composable_with_self,
    )
