"""Range-checked little-endian writers shared by the VIR0 encoders."""

from __future__ import annotations

import struct

from vyre.errors import EncodeError
from vyre.wire import MAX_STRING_LEN

_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")
U32_MAX = 0xFFFFFFFF
U64_MAX = (1 << 64) - 1


def _check_int(value: object, low: int, high: int, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise EncodeError(
            f"Fix: {label} {value!r} does not fit the wire field range {low}..={high}; build the "
            "IR with in-range values."
        )
    return value


def put_u8(out: bytearray, value: int, label: str = "u8 field") -> None:
    """Append one byte."""
    out.append(_check_int(value, 0, 0xFF, label))


def u32_bytes(value: int, label: str = "u32 field") -> bytes:
    """The 4 little-endian bytes of a u32."""
    return _U32.pack(_check_int(value, 0, U32_MAX, label))


def put_u32(out: bytearray, value: int, label: str = "u32 field") -> None:
    """Append a little-endian u32."""
    out += _U32.pack(_check_int(value, 0, U32_MAX, label))


def put_i32(out: bytearray, value: int, label: str = "i32 field") -> None:
    """Append a little-endian two's-complement i32."""
    out += _I32.pack(_check_int(value, -(1 << 31), (1 << 31) - 1, label))


def put_u64(out: bytearray, value: int, label: str = "u64 field") -> None:
    """Append a little-endian u64."""
    out += _U64.pack(_check_int(value, 0, U64_MAX, label))


def leb_bytes(value: int, label: str = "LEB128 value") -> bytes:
    """The minimal unsigned LEB128 encoding of a u64."""
    value = _check_int(value, 0, U64_MAX, label)
    if value < 0x80:
        return bytes((value,))
    parts = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            parts.append(byte | 0x80)
        else:
            parts.append(byte)
            return bytes(parts)


def put_leb(out: bytearray, value: int, label: str = "LEB128 value") -> None:
    """Append a minimal unsigned LEB128."""
    out += leb_bytes(value, label)


def utf8(text: object, label: str = "string") -> bytes:
    """UTF-8 bytes of ``text``; rejects non-strings and lone surrogates."""
    if not isinstance(text, str):
        raise EncodeError(f"Fix: {label} must be a str, got {type(text).__name__}.")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"Fix: {label} is not valid Unicode ({exc.reason}).") from None


def put_string(out: bytearray, text: object, label: str = "string") -> None:
    """Append a ``wstr`` (u32 length, at most MAX_STRING_LEN, then UTF-8)."""
    raw = utf8(text, label)
    if len(raw) > MAX_STRING_LEN:
        raise EncodeError(
            f"Fix: string length {len(raw)} exceeds IR wire-format limit {MAX_STRING_LEN}; "
            "shorten names/op ids before serialization."
        )
    out += _U32.pack(len(raw))
    out += raw


def put_leb_string(out: bytearray, text: object, label: str = "op id") -> None:
    """Append an ``lstr`` (LEB128 length, then UTF-8; no maximum on encode)."""
    raw = utf8(text, label)
    out += leb_bytes(len(raw))
    out += raw
