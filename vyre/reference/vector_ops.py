"""Array versions of the scalar op semantics, for the vectorized fast path.

Every function mirrors the scalar rule bit for bit; anything without an exact array form
raises :class:`Unvectorizable` so the caller falls back to the scalar interpreter.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vyre.ir import BinOp, Scalar, UnOp
from vyre.reference.values import BOOL, F32, I32, U32

VValue = tuple  # (tag, ndarray): uint32 for u32, int32 for i32, float32 for f32, bool for bool
_M = np.uint64(0xFFFFFFFF)
_MIN_NORMAL = np.float32(2.0 ** -126)
_DTYPES = {U32: np.uint32, I32: np.int32, F32: np.float32, BOOL: np.bool_}
_REV8 = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint32)


class Unvectorizable(Exception):  # noqa: N818 - a control-flow signal, never shown to users
    """The fast path cannot reproduce this operation exactly; use the scalar interpreter."""


def canon(x: np.ndarray) -> np.ndarray:
    """Vector ``canonical``: subnormals flush to signed zero (NaNs are canonical on store)."""
    sub = (np.abs(x) < _MIN_NORMAL) & (x != 0)
    if sub.any():
        x = np.where(sub, np.copysign(np.float32(0), x), x).astype(np.float32)
    return x


def truthy(v: VValue) -> np.ndarray:
    """Vector truthiness (f32: != 0, NaN true)."""
    tag, arr = v
    if tag == BOOL:
        return arr
    return arr != 0


def _u32_binop(op: BinOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.uint64), b.astype(np.uint64)
    s = b & np.uint32(31)
    table: dict[BinOp, Callable[[], np.ndarray]] = {
        BinOp.ADD: lambda: a + b, BinOp.WRAPPING_ADD: lambda: a + b,
        BinOp.SUB: lambda: a - b, BinOp.WRAPPING_SUB: lambda: a - b,
        BinOp.MUL: lambda: ((a64 * b64) & _M).astype(np.uint32),
        BinOp.DIV: lambda: np.where(b == 0, np.uint32(0xFFFFFFFF), a // np.maximum(b, 1)),
        BinOp.MOD: lambda: np.where(b == 0, np.uint32(0), a % np.maximum(b, 1)),
        BinOp.BIT_AND: lambda: a & b, BinOp.BIT_OR: lambda: a | b, BinOp.BIT_XOR: lambda: a ^ b,
        BinOp.SHL: lambda: a << s, BinOp.SHR: lambda: a >> s,
        BinOp.ROTATE_LEFT: lambda: (a << s) | (a >> ((np.uint32(32) - s) & np.uint32(31))),
        BinOp.ROTATE_RIGHT: lambda: (a >> s) | (a << ((np.uint32(32) - s) & np.uint32(31))),
        BinOp.MIN: lambda: np.minimum(a, b), BinOp.MAX: lambda: np.maximum(a, b),
        BinOp.ABS_DIFF: lambda: np.where(a > b, a - b, b - a),
        BinOp.SATURATING_ADD: lambda: np.minimum(a64 + b64, _M).astype(np.uint32),
        BinOp.SATURATING_SUB: lambda: np.where(a > b, a - b, np.uint32(0)),
        BinOp.SATURATING_MUL: lambda: np.minimum(a64 * b64, _M).astype(np.uint32),
        BinOp.MUL_HIGH: lambda: ((a64 * b64) >> np.uint64(32)).astype(np.uint32),
    }
    fn = table.get(op)
    if fn is None:
        raise Unvectorizable(op)
    return fn().astype(np.uint32)


def _i32_binop(op: BinOp, a: np.ndarray, b: np.ndarray) -> VValue:
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    if op in (BinOp.DIV, BinOp.MOD):
        if ((b64 == 0) | ((a64 == -(2 ** 31)) & (b64 == -1))).any():
            raise Unvectorizable("i32 division error")  # the scalar path raises it exactly
        mag = np.abs(a64) // np.abs(b64) if op == BinOp.DIV else np.abs(a64) % np.abs(b64)
        sign = np.sign(a64) * np.sign(b64) if op == BinOp.DIV else np.sign(a64)
        return (I32, (sign * mag).astype(np.int32))
    table: dict[BinOp, Callable[[], np.ndarray]] = {
        BinOp.ADD: lambda: a64 + b64, BinOp.WRAPPING_ADD: lambda: a64 + b64,
        BinOp.SUB: lambda: a64 - b64, BinOp.WRAPPING_SUB: lambda: a64 - b64,
        BinOp.MUL: lambda: a64 * b64, BinOp.BIT_AND: lambda: a64 & b64,
        BinOp.BIT_OR: lambda: a64 | b64, BinOp.BIT_XOR: lambda: a64 ^ b64,
        BinOp.MIN: lambda: np.minimum(a64, b64), BinOp.MAX: lambda: np.maximum(a64, b64),
    }
    if op == BinOp.ABS_DIFF:
        return (U32, np.abs(a64 - b64).astype(np.uint32))
    fn = table.get(op)
    if fn is None:
        raise Unvectorizable(op)
    return (I32, fn().astype(np.uint64).astype(np.uint32).view(np.int32))


def _f32_binop(op: BinOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if op in (BinOp.MIN, BinOp.MAX):
        pick_b = (b < a) if op == BinOp.MIN else (b > a)
        res = np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.where(pick_b, b, a)))
        return canon(res.astype(np.float32))
    fn = {BinOp.ADD: np.add, BinOp.SUB: np.subtract, BinOp.MUL: np.multiply,
          BinOp.DIV: np.divide}.get(op)
    if fn is None:
        raise Unvectorizable(op)
    return canon(fn(a, b).astype(np.float32))


_CMP = {BinOp.EQ: np.equal, BinOp.NE: np.not_equal, BinOp.LT: np.less, BinOp.GT: np.greater,
        BinOp.LE: np.less_equal, BinOp.GE: np.greater_equal}


def binop(op: BinOp, left: VValue, right: VValue) -> VValue:
    """Vector ``eval_binop`` (same dynamic types required, else Unvectorizable)."""
    tag = left[0]
    if tag != right[0] or not isinstance(op, BinOp):
        raise Unvectorizable("operand types")
    a, b = left[1], right[1]
    if tag == F32:
        a, b = canon(a), canon(b)
    cmp = _CMP.get(op)
    if cmp is not None:
        if tag == BOOL and op not in (BinOp.EQ, BinOp.NE):
            raise Unvectorizable(op)
        return (BOOL, cmp(a, b))
    if op in (BinOp.AND, BinOp.OR) and tag != F32:
        x, y = (a, b) if tag == BOOL else (a != 0, b != 0)
        return (BOOL, (x & y) if op == BinOp.AND else (x | y))
    if tag == U32:
        return (U32, _u32_binop(op, a, b))
    if tag == I32:
        return _i32_binop(op, a, b)
    if tag == F32:
        return (F32, _f32_binop(op, a, b))
    raise Unvectorizable(op)


def _bit_length(x: np.ndarray) -> np.ndarray:
    _, exp = np.frexp(x.astype(np.float64))  # exact for 32-bit integers
    return np.where(x == 0, 0, exp).astype(np.uint32)


def _int_unop(op: UnOp, tag: int, x: np.ndarray) -> VValue:
    raw = x.view(np.uint32) if tag == I32 else x
    out_same: dict[UnOp, Callable[[], np.ndarray]] = {
        UnOp.BIT_NOT: lambda: ~raw,
        UnOp.POPCOUNT: lambda: np.bitwise_count(raw).astype(np.uint32),
        UnOp.CLZ: lambda: np.uint32(32) - _bit_length(raw),
        UnOp.CTZ: lambda: np.where(raw == 0, np.uint32(32),
                                   _bit_length(raw & (~raw + np.uint32(1))) - np.uint32(1)),
        UnOp.REVERSE_BITS: lambda: ((_REV8[raw & 0xFF] << 24) | (_REV8[(raw >> 8) & 0xFF] << 16)
                                    | (_REV8[(raw >> 16) & 0xFF] << 8) | _REV8[raw >> 24]),
        UnOp.NEGATE: lambda: np.uint32(0) - raw,
    }
    if op == UnOp.LOGICAL_NOT:
        return (BOOL, raw == 0)
    unpack = {UnOp.UNPACK4_LOW: (0, 0xF), UnOp.UNPACK4_HIGH: (4, 0xF),
              UnOp.UNPACK8_LOW: (0, 0xFF), UnOp.UNPACK8_HIGH: (24, 0xFF)}.get(op)
    if unpack is not None:
        return (U32, (raw >> np.uint32(unpack[0])) & np.uint32(unpack[1]))
    fn = out_same.get(op)
    if fn is None:
        raise Unvectorizable(op)
    res = fn().astype(np.uint32)
    return (tag, res.view(np.int32) if tag == I32 else res)


def _round_away(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.float32(1), x), t)


_F32_UNOPS: dict[UnOp, Callable[[np.ndarray], np.ndarray]] = {
    UnOp.NEGATE: np.negative, UnOp.ABS: np.abs, UnOp.SQRT: np.sqrt, UnOp.FLOOR: np.floor,
    UnOp.CEIL: np.ceil, UnOp.TRUNC: np.trunc, UnOp.ROUND: _round_away,
    UnOp.SIGN: lambda x: np.where(np.isnan(x), x, np.sign(x) + np.float32(0)),
    UnOp.RECIPROCAL: lambda x: np.float32(1) / x,
    UnOp.INVERSE_SQRT: lambda x: np.float32(1) / np.sqrt(x),
}


def unop(op: UnOp, v: VValue) -> VValue:
    """Vector ``eval_unop``; transcendentals are left to the scalar path."""
    tag, x = v
    if not isinstance(op, UnOp):
        raise Unvectorizable(op)
    if tag in (U32, I32):
        return _int_unop(op, tag, x)
    if tag == BOOL and op == UnOp.LOGICAL_NOT:
        return (BOOL, ~x)
    if tag == F32:
        x = canon(x)
        pred = {UnOp.IS_NAN: np.isnan, UnOp.IS_INF: np.isinf, UnOp.IS_FINITE: np.isfinite}
        if op in pred:
            return (BOOL, pred[op](x))
        fn = _F32_UNOPS.get(op)
        if fn is not None:
            return (F32, canon(fn(x).astype(np.float32)))
    raise Unvectorizable(op)


def _f32_to_int(x: np.ndarray, lo: float, hi: float, dtype: type) -> np.ndarray:
    clipped = np.clip(np.nan_to_num(x.astype(np.float64), nan=0.0), lo, hi)
    return np.trunc(clipped).astype(dtype)


def cast(target: object, v: VValue) -> VValue:
    """Vector ``cast_value`` for the u32/i32/f32/bool corner of the cast table."""
    tag, x = v
    if target == Scalar.BOOL:
        return (BOOL, truthy(v))
    if target == Scalar.U32:
        if tag == F32:
            return (U32, _f32_to_int(x, 0.0, 4294967295.0, np.uint32))
        return (U32, x.astype(np.uint32) if tag == BOOL else x.view(np.uint32))
    if target == Scalar.I32:
        if tag == F32:
            return (I32, _f32_to_int(x, -2147483648.0, 2147483647.0, np.int32))
        return (I32, x.astype(np.int32) if tag == BOOL else x.view(np.int32))
    if target == Scalar.F32:
        if tag == F32:
            return v
        return (F32, canon(x.astype(np.float64).astype(np.float32)))
    raise Unvectorizable(target)


def full(tag: int, value: object, n: int) -> VValue:
    """A broadcast literal."""
    return (tag, np.full(n, value, dtype=_DTYPES[tag]))
