"""Runtime values of the reference interpreter: tagged tuples plus exact f32 helpers.

A value is ``(tag, payload)``: u32/i32/u64 payloads are Python ints, bool a Python bool,
f32 a Python float holding an exact (canonical) f32 value, bytes a ``bytes`` object.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

from vyre.reference.errors import ReferenceExecutionError

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


def make_f32(x: float) -> Value:
    """An f32 value: round ``x`` to f32 then canonicalize."""
    return (F32, canonical(round_f32(x)))


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
