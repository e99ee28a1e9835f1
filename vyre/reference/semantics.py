"""Values and scalar semantics: docs/vyre-semantics.md, BinOps, UnOps, Casts and Atomics.

A value is ``(tag, payload)``: u32/i32/u64 payloads are Python ints, bool a Python bool, f32 a
Python float holding an exact canonical f32, bytes a ``bytes`` object. BinOp operands must
share a dynamic type (no implicit promotion). Every error the interpreter raises is one of the
classes here; every message ends with a ``Fix:`` hint.
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from hurray_gpu.errors import HurrayGPUError
from vyre.ir import AtomicOp, BinOp, DataType, Scalar, UnOp


class VyreReferenceError(HurrayGPUError):
    """Base class of every reference-interpreter error."""

    default_fix = "repair the program or its inputs as the message says."


class ReferenceExecutionError(VyreReferenceError, RuntimeError):
    """The program did something the reference interpreter defines as an error at run time.

    Examples: i32 division by zero, mismatched operand types, a shadowed ``Let``, a barrier
    under a non-uniform ``If``, ``Trap``, an unresolved ``Call``.
    """

    default_fix = "guard the failing operation or repair the program before running it."


class ReferenceInputError(VyreReferenceError, ValueError):
    """The inputs, grid or options given to :func:`vyre.reference.run` are unusable."""

    default_fix = "pass one byte blob per input buffer in declaration order (or by name)."


class ReferenceLimitError(VyreReferenceError, RuntimeError):
    """A resource bound was hit: too many steps, too much memory or too deep an expression."""

    default_fix = "raise max_steps / max_buffer_bytes, or shrink the dispatch."


class StepLimitExceeded(ReferenceLimitError):
    """The dispatch needed more than ``max_steps`` lane steps (a runaway or hostile program)."""

    default_fix = "raise max_steps if the program is expected to run this long."


def check_deadline(deadline: float) -> None:
    """Raise StepLimitExceeded once ``time.monotonic()`` is past ``deadline`` (max_seconds)."""
    if time.monotonic() > deadline:
        raise StepLimitExceeded("the dispatch ran longer than its max_seconds (an endless loop, "
                                "or a very large grid).",
                                fix="raise max_seconds if the program is expected to run "
                                    "this long.")


# -- values -----------------------------------------------------------------------------------


U32, I32, F32, BOOL, U64, BYTES = 0, 1, 2, 3, 4, 5
TAG_NAMES = {U32: "u32", I32: "i32", F32: "f32", BOOL: "bool", U64: "u64", BYTES: "bytes"}

Value = tuple  # (tag, payload); a plain tuple keeps the hot path cheap

MASK32 = 0xFFFFFFFF
MASK64 = 0xFFFFFFFFFFFFFFFF
CANONICAL_NAN_BITS = 0x7FC00000
_F32_MAX_EXP = 128          # values >= 2**128 overflow to infinity
_F32_MIN_NORMAL_EXP = -126
_F32_MANTISSA_BITS = 23
_MIN_NORMAL = 2.0 ** -126
_PACK_F = struct.Struct("<f")
_PACK_I = struct.Struct("<I")

ZERO_U32: Value = (U32, 0)
TRUE: Value = (BOOL, True)
FALSE: Value = (BOOL, False)


def describe(value: Value) -> str:
    """A short human-readable rendering such as ``u32(5)`` for error messages."""
    tag, payload = value
    if tag == BYTES:
        return f"bytes[{len(payload)}]"
    return f"{TAG_NAMES.get(tag, '?')}({payload!r})"


def to_i32(raw: int) -> int:
    """Reinterpret the low 32 bits of ``raw`` as a signed i32."""
    raw &= MASK32
    return raw - 0x100000000 if raw & 0x80000000 else raw


def f32_bits(x: float) -> int:
    """The IEEE bits of the f32 value ``x`` (a NaN gives the canonical quiet NaN)."""
    if x != x:
        return CANONICAL_NAN_BITS
    return _PACK_I.unpack(_PACK_F.pack(x))[0]


def f32_from_bits(bits: int) -> float:
    """The f32 with ``bits`` as a Python float (not canonicalized)."""
    return _PACK_F.unpack(_PACK_I.pack(bits & MASK32))[0]


def canonical(x: float) -> float:
    """vyre's ``canonical_f32``: NaN stays NaN (stored as 0x7FC00000), subnormals -> signed 0."""
    if x != x:
        return math.nan
    if x != 0.0 and -_MIN_NORMAL < x < _MIN_NORMAL:
        return math.copysign(0.0, x)
    return x


def round_f32(x: float) -> float:
    """Round a Python float (f64) to the nearest f32 (ties to even), overflowing to +-inf."""
    if x != x or x in (math.inf, -math.inf):
        return x
    try:
        return _PACK_F.unpack(_PACK_F.pack(x))[0]
    except OverflowError:
        # struct refuses only values that round past FLT_MAX, which IEEE rounds to infinity.
        return math.copysign(math.inf, x)


def fraction_to_f32(q: Fraction) -> float:
    """Round an exact rational to the nearest f32 once (ties to even), with overflow to inf.

    Used where an f64 intermediate could double-round: Fma and u64 -> f32.
    """
    if q == 0:
        return 0.0
    sign = -1.0 if q < 0 else 1.0
    q = abs(q)
    exp = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** exp > q:
        exp -= 1
    quantum_exp = max(exp, _F32_MIN_NORMAL_EXP) - _F32_MANTISSA_BITS
    scaled = q / (Fraction(2) ** quantum_exp)
    n, rem = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * rem
    if twice > scaled.denominator or (twice == scaled.denominator and n & 1):
        n += 1
    if n.bit_length() + quantum_exp > _F32_MAX_EXP:
        return sign * math.inf
    return sign * math.ldexp(float(n), quantum_exp)


def truthy(value: Value) -> bool:
    """The IR truth convention: f32 != 0.0 (NaN is true); everything else ``as u32 != 0``."""
    tag, payload = value
    if tag == F32:
        return payload != 0.0
    if tag == BOOL:
        return payload
    if tag == BYTES:
        return len(payload) > 4 or int.from_bytes(payload, "little") != 0
    return payload != 0


def try_as_u32(value: Value) -> int | None:
    """``Value::try_as_u32``: the u32 a value stands for, or None when it does not fit."""
    tag, payload = value
    if tag == U32:
        return payload
    if tag in (I32, U64):
        return payload if 0 <= payload <= MASK32 else None
    if tag == BOOL:
        return int(payload)
    if tag == BYTES:
        return int.from_bytes(payload, "little") if len(payload) <= 4 else None
    if math.isfinite(payload) and 0.0 <= payload <= MASK32:
        return int(payload)
    return None


def try_as_u64(value: Value) -> int | None:
    """``Value::try_as_u64``: the u64 a value stands for, or None when it does not fit."""
    tag, payload = value
    if tag in (U32, U64):
        return payload
    if tag == I32:
        return payload if payload >= 0 else None
    if tag == BOOL:
        return int(payload)
    if tag == BYTES:
        return int.from_bytes(payload, "little") if len(payload) <= 8 else None
    if math.isfinite(payload) and 0.0 <= payload < 2.0 ** 64:
        return int(payload)
    return None


def as_index(value: Value, label: str) -> int:
    """A value used as an index or bound: it must be representable as u32.

    Raises:
        ReferenceExecutionError: the value is negative, too large or not a scalar.
    """
    idx = try_as_u32(value)
    if idx is None:
        raise ReferenceExecutionError(
            f"{label} {describe(value)} cannot be represented as u32.",
            fix="use a non-negative scalar u32 index.",
        )
    return idx


def to_bytes(value: Value) -> bytes:
    """Little-endian bytes of a value (f32 as its canonical 4-byte bits, bool as a u32 word)."""
    tag, payload = value
    if tag == U32:
        return payload.to_bytes(4, "little")
    if tag == I32:
        return (payload & MASK32).to_bytes(4, "little")
    if tag == U64:
        return payload.to_bytes(8, "little")
    if tag == BOOL:
        return (1 if payload else 0).to_bytes(4, "little")
    if tag == F32:
        return f32_bits(canonical(payload)).to_bytes(4, "little")
    return bytes(payload)


def fit_width(data: bytes, width: int) -> bytes:
    """Zero-pad or truncate ``data`` to exactly ``width`` bytes."""
    if len(data) >= width:
        return data[:width]
    return data + bytes(width - len(data))


# -- BinOp (docs/vyre-semantics.md, BinOps) --------------------------------------------------


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
        raise _binop_unsupported(op, tag)
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
        raise _binop_unsupported(op, F32)
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
    raise _binop_unsupported(op, BOOL)


def _binop_unsupported(op: object, tag: int) -> ReferenceExecutionError:
    name = getattr(op, "name", repr(op))
    return ReferenceExecutionError(
        f"binary op {name} is not defined for {('u32', 'i32', 'f32', 'bool', 'u64')[tag]} "
        "operands in the reference interpreter.",
        fix="use an op defined for these operands or Cast first (docs/vyre-semantics.md, BinOps).",
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


# -- UnOp (docs/vyre-semantics.md, UnOps) ----------------------------------------------------


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
    raise _unop_unsupported(op, (tag, x))


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
    """``f32(f(f64(x)))`` with the host libm (docs/vyre-semantics.md, Transcendentals).

    The stand-in for Rust's libm f32 routines; vyre's softmax known answer is bit-exact with it.
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


def _c_exp2() -> Callable[[float], float]:
    """The C library's ``exp2``, which ``math.exp2`` wraps from Python 3.11 on (3.10 has no
    ``math.exp2``): the same bits, and OverflowError where math raises it."""
    import ctypes
    import ctypes.util

    fn = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6").exp2
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]

    def exp2(x: float) -> float:
        y = float(fn(x))
        if math.isinf(y) and math.isfinite(x):
            raise OverflowError("math range error")
        return y

    return exp2


_exp2: Callable[[float], float] = getattr(math, "exp2", None) or _c_exp2()


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
    UnOp.EXP2: _libm(_exp2),
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
    raise _unop_unsupported(op, (F32, x))


def _unop_unsupported(op: object, value: Value) -> ReferenceExecutionError:
    return ReferenceExecutionError(
        f"unary op {getattr(op, 'name', op)} is not defined for operand {describe(value)}.",
        fix="use a unary op defined for this type or Cast first (docs/vyre-semantics.md, UnOps).",
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
    raise _unop_unsupported(op, operand)


# -- casts (docs/vyre-semantics.md, Casts) ---------------------------------------------------


_NARROW = {Scalar.U8: (8, False), Scalar.U16: (16, False), Scalar.I8: (8, True),
           Scalar.I16: (16, True)}


def _invalid(target: DataType, value: Value) -> ReferenceExecutionError:
    return ReferenceExecutionError(
        f"cast to {getattr(target, 'name', target)} cannot represent {describe(value)}.",
        fix="range-check the value or cast to a type that can hold it "
            "(docs/vyre-semantics.md, Casts).",
    )


def _int_payload(target: DataType, value: Value, width: int) -> int:
    """The integer bit pattern of an integer-like value (zero-extended bytes, bool 0/1)."""
    tag, payload = value
    if tag in (U32, U64):
        return payload
    if tag == I32:
        return payload & ((1 << width) - 1)  # sign-extends into u64
    if tag == BOOL:
        return int(payload)
    if tag == BYTES and len(payload) <= width // 8:
        return int.from_bytes(payload, "little")
    raise _invalid(target, value)


def _f32_to_int(x: float, lo: int, hi: int) -> int:
    """Rust ``as``: truncate toward zero, saturate, NaN -> 0."""
    if x != x:
        return 0
    if x <= lo:
        return lo
    if x >= hi:
        return hi
    return int(x)


def _to_u32(target: DataType, value: Value) -> Value:
    tag, payload = value
    if tag == F32:
        return (U32, _f32_to_int(payload, 0, MASK32))
    if tag == U64 and payload > MASK32:
        raise _invalid(target, value)
    return (U32, _int_payload(target, value, 32) & MASK32)


def _to_i32(target: DataType, value: Value) -> Value:
    tag, payload = value
    if tag == F32:
        return (I32, _f32_to_int(payload, -(1 << 31), (1 << 31) - 1))
    if tag == U64 and payload > MASK32:
        raise _invalid(target, value)
    return (I32, to_i32(_int_payload(target, value, 32)))


def _to_u64(target: DataType, value: Value) -> Value:
    tag, payload = value
    if tag == F32:
        raise _invalid(target, value)
    if tag == I32:
        return (U64, payload & MASK64)  # sign-extend
    return (U64, _int_payload(target, value, 64) & MASK64)


def _to_f32(target: DataType, value: Value) -> Value:
    tag, payload = value
    if tag == F32:
        return value
    if tag == BOOL:
        return (F32, 1.0 if payload else 0.0)
    if tag in (U32, I32):
        return (F32, canonical(float(np.float32(payload))))  # exact in f64, one rounding
    if tag == U64:
        return (F32, fraction_to_f32(Fraction(payload)))
    raw = try_as_u32(value)
    if raw is None:
        raise _invalid(target, value)
    return (F32, float(np.float32(raw)))


def _to_narrow(target: Scalar, value: Value) -> Value:
    bits, signed = _NARROW[target]
    if value[0] == F32:
        raise _invalid(target, value)
    raw = _int_payload(target, value, 64) & ((1 << bits) - 1)
    if signed:
        if raw >> (bits - 1):
            raw -= 1 << bits
        return (I32, raw)
    return (U32, raw)


def _to_half(target: Scalar, value: Value) -> Value:
    if value[0] != F32:
        raise _invalid(target, value)
    x = value[1]
    if target == Scalar.F16:
        with np.errstate(all="ignore"):
            return (F32, canonical(float(np.float16(np.float32(x)))))
    if x != x or math.isinf(x):
        return value
    bits = f32_bits(x)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round to nearest even
    return (F32, canonical(f32_from_bits(bits)))


def _to_words(value: Value, words: int) -> Value:
    data = to_bytes(value)[: 4 * words]
    return (BYTES, data + bytes(4 * words - len(data)))


def cast_value(target: DataType, value: Value) -> Value:
    """Convert ``value`` to ``target`` as the reference does.

    Args:
        target: the cast's target data type.
        value: the operand.

    Returns:
        The converted value (U8/U16 give u32, I8/I16 give sign-extended i32, F16/BF16 give an
        f32 holding the rounded value, I64 gives a u64 bit pattern, vectors give bytes).

    Raises:
        ReferenceExecutionError: the conversion is an error in the reference (u64 too large
            for u32, f32 to a narrow integer, ...).
    """
    if target == Scalar.U32:
        return _to_u32(target, value)
    if target == Scalar.I32:
        return _to_i32(target, value)
    if target == Scalar.BOOL:
        return (BOOL, truthy(value))
    if target == Scalar.F32:
        return _to_f32(target, value)
    if target in (Scalar.U64, Scalar.I64):
        return _to_u64(target, value)
    if target in _NARROW:
        return _to_narrow(target, value)
    if target in (Scalar.F16, Scalar.BF16):
        return _to_half(target, value)
    if target == Scalar.VEC2_U32:
        return _to_words(value, 2)
    if target == Scalar.VEC4_U32:
        return _to_words(value, 4)
    if target == Scalar.BYTES:
        return (BYTES, to_bytes(value))
    raise ReferenceExecutionError(
        f"cast to {target!r} is not supported by the reference interpreter.",
        fix="cast to a type the reference converts to (docs/vyre-semantics.md, Casts).",
    )


# -- atomics (docs/vyre-semantics.md, Atomics) -----------------------------------------------


def apply_atomic(op: AtomicOp, old: int, expected: int | None, value: int) -> int:
    """The new word an atomic writes; the atomic expression itself yields ``old``.

    Args:
        op: the atomic operator.
        old: the current u32 word.
        expected: CompareExchange's expected word (None for every other op).
        value: the operand word.

    Returns:
        The new u32 word.

    Raises:
        ReferenceExecutionError: CompareExchangeWeak, FetchNand, an opaque op, or an
            expected value that does not match the op.
    """
    if (op == AtomicOp.COMPARE_EXCHANGE) != (expected is not None):
        raise ReferenceExecutionError(
            f"atomic {getattr(op, 'name', op)} has a mismatched expected operand.",
            fix="set Atomic.expected exactly for CompareExchange.",
        )
    if op == AtomicOp.ADD:
        return (old + value) & MASK32
    if op == AtomicOp.OR:
        return old | value
    if op == AtomicOp.AND:
        return old & value
    if op == AtomicOp.XOR:
        return old ^ value
    if op == AtomicOp.MIN:
        return min(old, value)
    if op in (AtomicOp.MAX, AtomicOp.LRU_UPDATE):
        return max(old, value)
    if op == AtomicOp.EXCHANGE:
        return value
    if op == AtomicOp.COMPARE_EXCHANGE:
        return value if old == expected else old
    raise ReferenceExecutionError(
        f"atomic op {getattr(op, 'name', op)} is not supported by the reference interpreter.",
        fix="use CompareExchange, not CompareExchangeWeak; write FetchNand as a CAS loop.",
    )


__all__ = [
    "ReferenceExecutionError", "ReferenceInputError", "ReferenceLimitError", "StepLimitExceeded",
    "VyreReferenceError",
]
