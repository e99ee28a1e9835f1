"""BinOp semantics of the reference (semantics doc section 2.3): u32, i32, u64, bool and f32.

Both operands must carry the same dynamic type; there is no implicit promotion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vyre.ir import BinOp
from vyre.reference.errors import ReferenceExecutionError
from vyre.reference.values import (
    BOOL,
    F32,
    I32,
    U32,
    U64,
    Value,
    canonical,
    describe,
    round_f32,
    to_i32,
)

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


def _undefined(op: str, a: int, b: int) -> ReferenceExecutionError:
    return ReferenceExecutionError(
        f"i32 {op} `{a} / {b}` has undefined backend semantics (the reference rejects it).",
        fix="guard the signed divisor/overflow case, or use u32 operands.",
    )


def _rotl(a: int, s: int, bits: int) -> int:
    mask = (1 << bits) - 1
    s &= bits - 1
    return ((a << s) | (a >> ((bits - s) & (bits - 1)))) & mask


def _uint_ops(bits: int) -> dict[BinOp, Callable[[int, int], int | bool]]:
    """The unsigned table shared by u32 and u64 (results are masked to ``bits``)."""
    mask = (1 << bits) - 1
    sh = bits - 1
    return {
        BinOp.ADD: lambda a, b: (a + b) & mask,
        BinOp.WRAPPING_ADD: lambda a, b: (a + b) & mask,
        BinOp.SUB: lambda a, b: (a - b) & mask,
        BinOp.WRAPPING_SUB: lambda a, b: (a - b) & mask,
        BinOp.MUL: lambda a, b: (a * b) & mask,
        BinOp.DIV: lambda a, b: mask if b == 0 else a // b,
        BinOp.MOD: lambda a, b: 0 if b == 0 else a % b,
        BinOp.BIT_AND: lambda a, b: a & b,
        BinOp.BIT_OR: lambda a, b: a | b,
        BinOp.BIT_XOR: lambda a, b: a ^ b,
        BinOp.SHL: lambda a, b: (a << (b & sh)) & mask,
        BinOp.SHR: lambda a, b: a >> (b & sh),
        BinOp.ROTATE_LEFT: lambda a, b: _rotl(a, b, bits),
        BinOp.ROTATE_RIGHT: lambda a, b: _rotl(a, (bits - (b & sh)) & sh, bits),
        BinOp.MIN: min,
        BinOp.MAX: max,
        BinOp.ABS_DIFF: lambda a, b: abs(a - b),
        BinOp.SATURATING_ADD: lambda a, b: min(a + b, mask),
        BinOp.SATURATING_SUB: lambda a, b: max(a - b, 0),
        BinOp.SATURATING_MUL: lambda a, b: min(a * b, mask),
        BinOp.MUL_HIGH: lambda a, b: (a * b) >> bits,
    }


_U32_OPS = _uint_ops(32)
_U64_OPS = _uint_ops(64)

_COMPARE: dict[BinOp, Callable[[Any, Any], bool]] = {
    BinOp.EQ: lambda a, b: a == b,
    BinOp.NE: lambda a, b: a != b,
    BinOp.LT: lambda a, b: a < b,
    BinOp.GT: lambda a, b: a > b,
    BinOp.LE: lambda a, b: a <= b,
    BinOp.GE: lambda a, b: a >= b,
}


def _i32_div(a: int, b: int) -> int:
    if b == 0:
        raise _undefined("division", a, b)
    if a == _I32_MIN and b == -1:
        raise _undefined("division overflow", a, b)
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q  # truncating, like Rust


def _i32_mod(a: int, b: int) -> int:
    if b == 0:
        raise _undefined("remainder", a, b)
    if a == _I32_MIN and b == -1:
        raise _undefined("remainder overflow", a, b)
    r = abs(a) % abs(b)
    return -r if a < 0 else r  # sign of the dividend


def _sat_i32(x: int) -> int:
    return max(_I32_MIN, min(_I32_MAX, x))


_I32_OPS: dict[BinOp, Callable[[int, int], int]] = {
    BinOp.ADD: lambda a, b: to_i32(a + b),
    BinOp.WRAPPING_ADD: lambda a, b: to_i32(a + b),
    BinOp.SUB: lambda a, b: to_i32(a - b),
    BinOp.WRAPPING_SUB: lambda a, b: to_i32(a - b),
    BinOp.MUL: lambda a, b: to_i32(a * b),
    BinOp.DIV: _i32_div,
    BinOp.MOD: _i32_mod,
    BinOp.BIT_AND: lambda a, b: a & b,
    BinOp.BIT_OR: lambda a, b: a | b,
    BinOp.BIT_XOR: lambda a, b: a ^ b,
    BinOp.SHL: lambda a, b: to_i32(a << (b & 31)),
    BinOp.SHR: lambda a, b: a >> (b & 31),  # arithmetic shift
    BinOp.MIN: min,
    BinOp.MAX: max,
    BinOp.SATURATING_ADD: lambda a, b: _sat_i32(a + b),
    BinOp.SATURATING_SUB: lambda a, b: _sat_i32(a - b),
    BinOp.SATURATING_MUL: lambda a, b: _sat_i32(a * b),
}


def _int_binop(op: BinOp, tag: int, a: int, b: int, table: dict) -> Value:
    cmp = _COMPARE.get(op)
    if cmp is not None:
        return (BOOL, cmp(a, b))
    if op == BinOp.AND:
        return (BOOL, a != 0 and b != 0)
    if op == BinOp.OR:
        return (BOOL, a != 0 or b != 0)
    if op == BinOp.ABS_DIFF and tag == I32:
        return (U32, abs(a - b))  # i32 AbsDiff yields u32 in the reference
    fn = table.get(op)
    if fn is None:
        raise _unsupported(op, tag)
    return (tag, fn(a, b))


def _f32_min(a: float, b: float) -> float:
    # Rust f32::min (LLVM minnum on x86-64): NaN loses; on a tie the first operand wins.
    if a != a:
        return b
    if b != b:
        return a
    return b if b < a else a


def _f32_max(a: float, b: float) -> float:
    if a != a:
        return b
    if b != b:
        return a
    return b if b > a else a


def _f32_div(a: float, b: float) -> float:
    if b != 0.0:
        return round_f32(a / b)
    with np.errstate(all="ignore"):  # x/0 = +-inf and 0/0 = NaN, as IEEE says
        return float(np.float32(a) / np.float32(b))


_F32_ARITH: dict[BinOp, Callable[[float, float], float]] = {
    # An f64 result rounded once to f32 is exact for + - * (the f64 result is exact or
    # double rounding is innocuous since 53 >= 2*24 + 2).
    BinOp.ADD: lambda a, b: round_f32(a + b),
    BinOp.SUB: lambda a, b: round_f32(a - b),
    BinOp.MUL: lambda a, b: round_f32(a * b),
    BinOp.DIV: _f32_div,
    BinOp.MIN: _f32_min,
    BinOp.MAX: _f32_max,
}


def _f32_binop(op: BinOp, a: float, b: float) -> Value:
    a, b = canonical(a), canonical(b)
    cmp = _COMPARE.get(op)
    if cmp is not None:
        return (BOOL, cmp(a, b))
    fn = _F32_ARITH.get(op)
    if fn is None:
        raise _unsupported(op, F32)
    return (F32, canonical(fn(a, b)))


def _bool_binop(op: BinOp, a: bool, b: bool) -> Value:
    if op == BinOp.EQ:
        return (BOOL, a == b)
    if op == BinOp.NE:
        return (BOOL, a != b)
    if op == BinOp.AND:
        return (BOOL, a and b)
    if op == BinOp.OR:
        return (BOOL, a or b)
    raise _unsupported(op, BOOL)


def _unsupported(op: object, tag: int) -> ReferenceExecutionError:
    name = getattr(op, "name", repr(op))
    return ReferenceExecutionError(
        f"binary op {name} is not defined for {('u32', 'i32', 'f32', 'bool', 'u64')[tag]} "
        "operands in the reference interpreter.",
        fix="use an op defined for this operand type (semantics doc section 2.3) or Cast first.",
    )


def eval_binop(op: BinOp, left: Value, right: Value) -> Value:
    """Apply ``op`` to two values of the same dynamic type.

    Args:
        op: the operator.
        left: left operand.
        right: right operand.

    Returns:
        The result value.

    Raises:
        ReferenceExecutionError: mismatched or unsupported operand types, i32 division by
            zero or ``MIN / -1``, or an op the reference does not define (f32 Mod, ...).
    """
    tag = left[0]
    if tag != right[0]:
        raise ReferenceExecutionError(
            f"binary op {getattr(op, 'name', op)} received mismatched operands "
            f"{describe(left)} and {describe(right)}.",
            fix="insert an explicit Cast so both operands have the same primitive type.",
        )
    if tag == U32:
        return _int_binop(op, U32, left[1], right[1], _U32_OPS)
    if tag == I32:
        return _int_binop(op, I32, left[1], right[1], _I32_OPS)
    if tag == F32:
        return _f32_binop(op, left[1], right[1])
    if tag == BOOL:
        return _bool_binop(op, left[1], right[1])
    if tag == U64:
        return _int_binop(op, U64, left[1], right[1], _U64_OPS)
    raise ReferenceExecutionError(
        f"binary op {getattr(op, 'name', op)} received non-scalar operands {describe(left)}.",
        fix="Cast raw bytes (U8/U16/I8/I16 loads) to u32 or i32 before arithmetic.",
    )
