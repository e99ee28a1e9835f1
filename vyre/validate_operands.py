"""Operand rules of the vyre validator: binary/unary typing (V044, V084-V104) and atomics."""

from __future__ import annotations

from vyre.ir import (
    Atomic,
    AtomicOp,
    BinOp,
    BufferAccess,
    Cast,
    DataType,
    Expr,
    LitF32,
    LitI32,
    LitU32,
    MemoryOrdering,
    OpaqueOp,
    UnOp,
)
from vyre.validate_report import Sink, Where
from vyre.validate_types import (
    BOOL,
    BYTES,
    F32,
    FLOAT_UNOPS,
    I32,
    I64,
    U32,
    U64,
    UNPACK_UNOPS,
    Buffers,
    TypeMemo,
    debug_name,
    type_name,
)

TYPE, MEMORY = "Type", "Memory"

NUMERIC_OPS = frozenset({
    BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.SATURATING_ADD, BinOp.SATURATING_SUB,
    BinOp.SATURATING_MUL, BinOp.MIN, BinOp.MAX, BinOp.ABS_DIFF,
})
_SATURATING = frozenset({BinOp.SATURATING_ADD, BinOp.SATURATING_SUB, BinOp.SATURATING_MUL})
_BITWISE = frozenset({BinOp.BIT_AND, BinOp.BIT_OR, BinOp.BIT_XOR})
_SHIFTS = frozenset({BinOp.SHL, BinOp.SHR, BinOp.ROTATE_LEFT, BinOp.ROTATE_RIGHT})
_COMPARISONS = frozenset({BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.GT, BinOp.LE, BinOp.GE})
_WAVE = frozenset({BinOp.SHUFFLE, BinOp.BALLOT, BinOp.WAVE_REDUCE, BinOp.WAVE_BROADCAST})
_BIT_UNOPS = frozenset({UnOp.BIT_NOT, UnOp.POPCOUNT, UnOp.CLZ, UnOp.CTZ, UnOp.REVERSE_BITS})
_TYPED_UNOPS = _BIT_UNOPS | FLOAT_UNOPS | UNPACK_UNOPS | {UnOp.IS_NAN, UnOp.IS_INF, UnOp.IS_FINITE}
_NUMERIC_TYPES = (U32, I32, F32)
_INT32 = (U32, I32)


def is_static_zero(expr: Expr) -> bool:
    """A literal zero divisor, possibly under casts (u32 0, i32 0, f32 +-0.0)."""
    while isinstance(expr, Cast):
        expr = expr.value
    if isinstance(expr, (LitU32, LitI32)):
        return expr.value == 0
    if isinstance(expr, LitF32):
        return expr.value == 0.0
    return False


def check_binop(
    op: BinOp | OpaqueOp, left: DataType | None, right: DataType | None, divisor: Expr,
    sink: Sink, where: Where,
) -> None:
    """Operand typing of one binary operation (typecheck/operands.rs)."""
    if isinstance(op, OpaqueOp):
        return  # extension operators carry no foundation typing contract
    name = debug_name(op)
    if op in NUMERIC_OPS:
        _check_numeric(op, name, left, right, divisor, sink, where)
    elif op == BinOp.MOD:
        _check_mod(left, right, divisor, sink, where)
    elif op in _BITWISE:
        if left is not None and right is not None:
            if left not in _INT32:
                sink.error("V091", TYPE, where, f"binary operation `{name}` left operand has "
                           f"type `{type_name(left)}`; legal integer set is `u32` or `i32`",
                           "cast the left operand to U32 or I32.")
            if right not in _INT32:
                sink.error("V092", TYPE, where, f"binary operation `{name}` right operand has "
                           f"type `{type_name(right)}`; legal integer set is `u32` or `i32`",
                           "cast the right operand to U32 or I32.")
            if left != right:
                sink.error("V093", TYPE, where, f"binary operation `{name}` operands have "
                           f"mismatched integer types: left=`{type_name(left)}`, "
                           f"right=`{type_name(right)}`",
                           "cast both operands to the same integer type.")
    elif op in _SHIFTS:
        for side, ty in (("left", left), ("right", right)):
            if ty is not None and ty != U32:
                sink.error("V094", TYPE, where, f"binary operation `{name}` {side} operand has "
                           f"type `{type_name(ty)}`; shift/rotate operands must be `u32`",
                           "cast the operand to U32 before shifting/rotating.")
    elif op in (BinOp.AND, BinOp.OR):
        for side, ty in (("left", left), ("right", right)):
            if ty is not None and ty not in (U32, BOOL):
                sink.error("V095", TYPE, where, f"binary operation `{name}` {side} operand has "
                           f"type `{type_name(ty)}`; logical And/Or operands must be `u32` or "
                           "`bool`", "cast the operand to U32 or Bool.")
    elif op in _COMPARISONS:
        if left is not None and right is not None and left != right:
            sink.error("V096", TYPE, where, f"binary comparison `{name}` operands have "
                       f"mismatched types: left=`{type_name(left)}`, right=`{type_name(right)}`",
                       "cast both operands to the same type before comparing.")
    elif op in _WAVE:
        sink.error("V097", TYPE, where, f"binary operation `{name}` requires backend subgroup "
                   "semantics (`supports_subgroup_ops() == true`) before foundation validation "
                   "can guarantee safety", "validate with ValidationOptions::with_backend"
                   "(backend) where `backend.supports_subgroup_ops() == true`, or remove "
                   f"`{name}` before lowering.")


def _check_numeric(
    op: BinOp, name: str, left: DataType | None, right: DataType | None, divisor: Expr,
    sink: Sink, where: Where,
) -> None:
    if op == BinOp.DIV and is_static_zero(divisor):
        sink.error("V044", TYPE, where, "binary operation `Div` has a statically-zero divisor",
                   "guard the divisor, use Select to substitute a non-zero value, or reject "
                   "the input before building IR.")
    if left is not None and right is not None:
        lname, rname = type_name(left), type_name(right)
        if left in (U64, I64) or right in (U64, I64):
            sink.error("V084", TYPE, where, f"binary operation `{name}` received left=`{lname}`, "
                       f"right=`{rname}`. 64-bit integer arithmetic is outside vyre-foundation's "
                       "cross-backend arithmetic contract", "express the operation as a U32 pair "
                       "with explicit carry/borrow, or use a backend-specific op whose schema "
                       "declares native 64-bit arithmetic.")
        if op in _SATURATING and (left != U32 or right != U32):
            sink.error("V085", TYPE, where, f"Saturating arithmetic `{name}` received "
                       f"left=`{lname}`, right=`{rname}`; legal set is only U32 in the current "
                       "lowering", "cast both operands to U32, or clamp explicitly for I32/F32.")
        if op == BinOp.ABS_DIFF and I32 in (left, right):
            sink.error("V086", TYPE, where, f"AbsDiff has left=`{lname}`, right=`{rname}` and can "
                       "overflow (i32::MIN - i32::MAX invokes target-text signed-integer UB)",
                       "cast operands to U32 before AbsDiff, or rewrite as an explicit branch.")
    for side, ty in (("left", left), ("right", right)):
        if ty == BOOL:
            sink.error("V087", TYPE, where, f"binary operation `{name}` {side} operand has type "
                       "`bool`, but numeric arithmetic expects one of `u32`, `i32`, or `f32`",
                       "cast the operand to U32 or I32 before arithmetic, or rewrite to avoid "
                       "mixing logical and arithmetic operators.")
    if (left is not None and right is not None and left in _NUMERIC_TYPES
            and right in _NUMERIC_TYPES and left != right):
        sink.error("V088", TYPE, where, f"binary operation `{name}` operands have mismatched "
                   f"numeric types: left=`{type_name(left)}`, right=`{type_name(right)}` (legal "
                   "set: U32, I32, F32)", "cast one operand so both sides share a type "
                   "(target-text has no implicit promotion).")


def _check_mod(
    left: DataType | None, right: DataType | None, divisor: Expr, sink: Sink, where: Where
) -> None:
    if is_static_zero(divisor):
        sink.error("V044", TYPE, where, "binary operation `Mod` has a statically-zero divisor",
                   "guard the divisor, use Select to substitute a non-zero value, or reject "
                   "the input before building IR.")
    for side, ty in (("left", left), ("right", right)):
        if ty is not None and ty not in _INT32:
            sink.error("V089", TYPE, where, f"binary operation `Mod` {side} operand must be "
                       f"`u32` or `i32`, got `{type_name(ty)}`. Legal set for Mod is integer-only",
                       "cast both operands to the same integer type before modulo.")
    if left in _INT32 and right in _INT32 and left != right:
        sink.error("V090", TYPE, where, "binary operation `Mod` operands have mismatched integer "
                   f"types: left=`{type_name(left)}`, right=`{type_name(right)}`",  # type: ignore[arg-type]
                   "cast one operand so both sides share the same integer type.")


def check_unop(op: UnOp | OpaqueOp, ty: DataType | None, sink: Sink, where: Where) -> None:
    """Operand typing of one unary operation (checked only when the operand type is known)."""
    if ty is None:
        return
    name = debug_name(op) if isinstance(op, UnOp) else f"Opaque(0x{op.id:08x})"
    tname = type_name(ty)
    if op == UnOp.NEGATE:
        if ty == I32:
            sink.error("V098", TYPE, where, "unary operation `Negate` operand has type `i32`, but "
                       "legal total Negate types are `u32` and `f32`; raw i32 negation has the "
                       "i32::MIN overflow case", "use `0 - x` for wrapping i32 negation, cast to "
                       "U32 before Negate, or guard with Select(i32::MIN, 0, -x).")
        elif ty not in (U32, F32):
            sink.error("V099", TYPE, where, f"unary operation `Negate` operand has type `{tname}`, "
                       "but legal set is U32, I32, or F32", "cast or rewrite the operand to "
                       "U32/I32/F32.")
    elif op == UnOp.LOGICAL_NOT:
        if ty not in (U32, BOOL):
            sink.error("V100", TYPE, where, f"unary operation `LogicalNot` operand has type "
                       f"`{tname}`; legal set is `u32` or `bool`",
                       "cast or rewrite the operand to produce U32 or Bool.")
    elif op in _TYPED_UNOPS:
        _check_typed_unop(op, name, ty, tname, sink, where)
    else:
        sink.error("V104", TYPE, where, f"unary operation `{name}` is not recognized",
                   "use a known UnOp variant (Negate, LogicalNot, BitNot, Popcount, Clz, Ctz, "
                   "ReverseBits, the f32 math ops, IsNan, IsInf, IsFinite, Unpack4Low, "
                   "Unpack4High, Unpack8Low, Unpack8High).")


def _check_typed_unop(
    op: UnOp | OpaqueOp, name: str, ty: DataType, tname: str, sink: Sink, where: Where
) -> None:
    if op in _BIT_UNOPS:
        if ty not in (U32, I32, U64):
            sink.error("V101", TYPE, where, f"unary operation `{name}` operand has type "
                       f"`{tname}`; legal integer set is `u32`, `i32`, or `u64`",
                       "cast or rewrite the operand to produce U32, I32, or U64.")
    elif op in UNPACK_UNOPS:
        if ty not in _INT32:
            sink.error("V103", TYPE, where, f"unary operation `{name}` operand has type "
                       f"`{tname}`; unpack ops require a 32-bit integer (`u32` or `i32`) word",
                       "cast or rewrite the operand to produce U32 or I32.")
    elif ty != F32:
        sink.error("V102", TYPE, where, f"unary operation `{name}` operand has type `{tname}`; "
                   "legal set for math ops is `f32`", "cast or rewrite the operand to produce F32.")


def check_atomic(expr: Atomic, buffers: Buffers, memo: TypeMemo, sink: Sink, where: Where) -> None:
    """Atomic rules in reference order: V042, V027, V025/V009, V013, V014, V057-V060, V061."""
    op = debug_name(expr.op) if isinstance(expr.op, AtomicOp) else "Opaque"
    buf = expr.buffer
    if expr.ordering == MemoryOrdering.GRID_SYNC:
        sink.error("V042", MEMORY, where, f"atomic `{op}` on buffer `{buf}` uses invalid memory "
                   f"ordering `{debug_name(expr.ordering)}`", "use Relaxed, Acquire, Release, "
                   "AcqRel, or SeqCst for atomic read-modify-write operations.")
    index_ty = memo.type_of(expr.index)
    if index_ty is not None and index_ty != U32:
        sink.error("V027", MEMORY, where, f"atomic index on buffer `{buf}` has type "
                   f"`{type_name(index_ty)}`, must be `u32`",
                   "cast the index to U32 before the atomic operation.")
    decl = buffers.get(buf)
    if decl is None:
        sink.error("V061", MEMORY, where, f"atomic on unknown buffer `{buf}`",
                   "declare it in Program::buffers.")
        return
    if decl.access == BufferAccess.WORKGROUP:
        sink.error("V025", MEMORY, where, f"atomic `{op}` on workgroup buffer `{buf}` is "
                   "rejected by the current memory model", "use a storage ReadWrite buffer for "
                   "atomics.")
    elif decl.access != BufferAccess.READ_WRITE:
        sink.error("V009", MEMORY, where, f"atomic `{op}` targets {debug_name(decl.access)} "
                   f"buffer `{buf}`", f"declare `{buf}` with BufferAccess::ReadWrite before "
                   f"issuing `{op}`.")
    if decl.element == BYTES:
        sink.error("V013", MEMORY, where, f"operation on buffer `{buf}` with element type "
                   "`bytes` is not supported", "use a typed buffer.")
    if decl.element != U32:
        sink.error("V014", MEMORY, where, f"atomic on buffer `{buf}` with non-u32 element type "
                   f"`{type_name(decl.element)}`", "atomics only support U32 elements, so retype "
                   "the buffer.")
    value_ty = memo.type_of(expr.value)
    if value_ty is not None and value_ty != U32:
        sink.error("V057", MEMORY, where, f"atomic value type `{type_name(value_ty)}` does not "
                   "match required `u32`", "ensure the atomic operand is U32.")
    _check_expected(expr, memo, sink, where)


def _check_expected(expr: Atomic, memo: TypeMemo, sink: Sink, where: Where) -> None:
    is_cas = expr.op == AtomicOp.COMPARE_EXCHANGE and isinstance(expr.op, AtomicOp)
    if is_cas and expr.expected is not None:
        expected_ty = memo.type_of(expr.expected)
        if expected_ty is not None and expected_ty != U32:
            sink.error("V058", MEMORY, where, f"compare-exchange expected type "
                       f"`{type_name(expected_ty)}` does not match required `u32`",
                       "ensure Expr::Atomic.expected is U32.")
    elif is_cas:
        sink.error("V059", MEMORY, where, "compare-exchange atomic is missing expected value",
                   "set Expr::Atomic.expected for AtomicOp::CompareExchange.")
    elif expr.expected is not None:
        sink.error("V060", MEMORY, where, "non-compare-exchange atomic includes an expected value",
                   "use Expr::Atomic.expected only with AtomicOp::CompareExchange.")
