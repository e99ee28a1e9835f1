"""Cast semantics of the reference (semantics doc section 2.5)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from vyre.ir import DataType, Scalar
from vyre.reference.errors import ReferenceExecutionError
from vyre.reference.values import (
    BOOL,
    BYTES,
    F32,
    I32,
    MASK32,
    MASK64,
    U32,
    U64,
    Value,
    canonical,
    describe,
    f32_bits,
    f32_from_bits,
    fraction_to_f32,
    to_bytes,
    to_i32,
    truthy,
    try_as_u32,
)

_NARROW = {Scalar.U8: (8, False), Scalar.U16: (16, False), Scalar.I8: (8, True),
           Scalar.I16: (16, True)}


def _invalid(target: DataType, value: Value) -> ReferenceExecutionError:
    return ReferenceExecutionError(
        f"cast to {getattr(target, 'name', target)} cannot represent {describe(value)}.",
        fix="cast from an in-range scalar value (see the semantics doc's cast table).",
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
        fix="cast only to the scalar types of the semantics doc's cast table.",
    )
