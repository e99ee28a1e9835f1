"""UnOp semantics of the reference (semantics doc section 2.4) for integers, bool and f32."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from vyre.ir import UnOp
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


def _reverse(x: int, bits: int) -> int:
    return int(format(x, f"0{bits}b")[::-1], 2)


def _ctz(x: int, bits: int) -> int:
    return bits if x == 0 else (x & -x).bit_length() - 1


def _int_unop(op: UnOp, tag: int, x: int) -> Value:
    """Integer UnOps; i32 operands work on their 32-bit pattern."""
    bits = 64 if tag == U64 else 32
    mask = (1 << bits) - 1
    raw = x & mask
    wrap = to_i32 if tag == I32 else (lambda v: v & mask)
    if op == UnOp.NEGATE:
        return (tag, wrap(-raw))
    if op == UnOp.BIT_NOT:
        return (tag, wrap(~raw))
    if op == UnOp.LOGICAL_NOT:
        return (BOOL, raw == 0)
    if op == UnOp.POPCOUNT:
        return (tag, raw.bit_count())
    if op == UnOp.CLZ:
        return (tag, bits - raw.bit_length())
    if op == UnOp.CTZ:
        return (tag, _ctz(raw, bits))
    if op == UnOp.REVERSE_BITS:
        return (tag, wrap(_reverse(raw, bits)))
    if tag != U64:
        if op == UnOp.UNPACK4_LOW:
            return (U32, raw & 0xF)
        if op == UnOp.UNPACK4_HIGH:
            return (U32, (raw >> 4) & 0xF)
        if op == UnOp.UNPACK8_LOW:
            return (U32, raw & 0xFF)
        if op == UnOp.UNPACK8_HIGH:
            return (U32, (raw >> 24) & 0xFF)
    raise _unsupported(op, (tag, x))


def _round_half_away(x: float) -> float:
    if not math.isfinite(x) or abs(x) >= 2.0 ** 23:
        return x  # already integral (or inf/NaN)
    t = math.copysign(float(int(x)), x)  # x - trunc(x) is exact in f32
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return t


def _sign(x: float) -> float:
    if x != x:
        return x
    return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)


def _f32_sqrt(x: float) -> float:
    with np.errstate(all="ignore"):
        return float(np.sqrt(np.float32(x)))


def _f32_recip(x: float) -> float:
    with np.errstate(all="ignore"):
        return float(np.float32(1.0) / np.float32(x))


def _libm(fn: Callable[[float], float], overflow: Callable[[float], float] = lambda x: math.inf,
          at_zero: float | None = None) -> Callable[[float], float]:
    """``f32(f(f64(x)))``: how the semantics doc reproduces Rust libm (verified on softmax).

    The reference's own parity budget for these ops is 128 ULP against correct rounding.
    """
    def apply(x: float) -> float:
        if at_zero is not None and x == 0.0:
            return at_zero
        try:
            return round_f32(fn(x))
        except ValueError:  # outside the domain (log(-1), asin(2), sin(inf))
            return math.nan
        except OverflowError:
            return overflow(x)

    return apply


def _signed_inf(x: float) -> float:
    return math.copysign(math.inf, x)


_F32_VALUE_OPS: dict[UnOp, Callable[[float], float]] = {
    UnOp.NEGATE: lambda x: -x,
    UnOp.ABS: abs,
    UnOp.SQRT: _f32_sqrt,
    UnOp.INVERSE_SQRT: lambda x: _f32_recip(_f32_sqrt(x)),  # two roundings, as the reference
    UnOp.RECIPROCAL: _f32_recip,
    UnOp.FLOOR: lambda x: float(np.floor(x)),
    UnOp.CEIL: lambda x: float(np.ceil(x)),
    UnOp.TRUNC: lambda x: float(np.trunc(x)),
    UnOp.ROUND: _round_half_away,
    UnOp.SIGN: _sign,
    UnOp.SIN: _libm(math.sin), UnOp.COS: _libm(math.cos), UnOp.TAN: _libm(math.tan),
    UnOp.ASIN: _libm(math.asin), UnOp.ACOS: _libm(math.acos), UnOp.ATAN: _libm(math.atan),
    UnOp.SINH: _libm(math.sinh, _signed_inf), UnOp.COSH: _libm(math.cosh),
    UnOp.TANH: _libm(math.tanh), UnOp.EXP: _libm(math.exp),
    UnOp.EXP2: _libm(math.exp2),  # type: ignore[attr-defined]
    UnOp.LOG: _libm(math.log, at_zero=-math.inf),
    UnOp.LOG2: _libm(math.log2, at_zero=-math.inf),
}

_F32_PREDICATES: dict[UnOp, Callable[[float], bool]] = {
    UnOp.IS_NAN: math.isnan,
    UnOp.IS_INF: math.isinf,
    UnOp.IS_FINITE: math.isfinite,
}


def _f32_unop(op: UnOp, x: float) -> Value:
    x = canonical(x)
    fn = _F32_VALUE_OPS.get(op)
    if fn is not None:
        return (F32, canonical(fn(x)))
    pred = _F32_PREDICATES.get(op)
    if pred is not None:
        return (BOOL, pred(x))
    raise _unsupported(op, (F32, x))


def _unsupported(op: object, value: Value) -> ReferenceExecutionError:
    return ReferenceExecutionError(
        f"unary op {getattr(op, 'name', op)} is not defined for operand {describe(value)}.",
        fix="use a unary op defined for this type (semantics doc section 2.4) or Cast first.",
    )


def eval_unop(op: UnOp, operand: Value) -> Value:
    """Apply a unary op.

    Args:
        op: the operator.
        operand: the operand value.

    Returns:
        The result value.

    Raises:
        ReferenceExecutionError: the op is not defined for the operand's type.
    """
    tag = operand[0]
    if tag in (U32, I32, U64):
        return _int_unop(op, tag, operand[1])
    if tag == F32:
        return _f32_unop(op, operand[1])
    if tag == BOOL and op == UnOp.LOGICAL_NOT:
        return (BOOL, not operand[1])
    raise _unsupported(op, operand)
