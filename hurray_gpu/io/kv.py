"""The ``.hrry`` key/value metadata section: typed values, encode and hostile-input decode.

Tags (docs/format.md, .hrry files): 0x01 str, 0x02 i64, 0x03 u64, 0x04 f64, 0x05 bool, 0x06 bytes,
0x07 homogeneous array of one of those. Python ints encode as i64; wrap in :class:`UInt64` for u64.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ..errors import HurrayFormatError

TAG_STR, TAG_I64, TAG_U64, TAG_F64, TAG_BOOL, TAG_BYTES, TAG_ARRAY = range(1, 8)
TAG_NAMES = {1: "string", 2: "i64", 3: "u64", 4: "f64", 5: "bool", 6: "bytes", 7: "array"}
# Smallest payload of one array element, used to bound counts before looping.
_MIN_SIZE = {TAG_STR: 4, TAG_I64: 8, TAG_U64: 8, TAG_F64: 8, TAG_BOOL: 1, TAG_BYTES: 4}
MAX_KEY_BYTES = 0xFFFF
_I64_MIN, _I64_MAX, _U64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1
_FIX_KV = "rewrite the file's metadata with a conforming writer (hurray_gpu.save)."


class UInt64(int):
    """An int that is stored as a KV u64 (tag 0x03) rather than i64; decoded u64s come back as it."""

    def __new__(cls, value: int) -> UInt64:
        if not 0 <= int(value) <= _U64_MAX:
            raise ValueError(f"UInt64 value {value} is outside 0..2**64-1")
        return super().__new__(cls, int(value))


def _scalar_tag(value: Any, key: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        return TAG_BOOL
    if isinstance(value, UInt64):
        return TAG_U64
    if isinstance(value, (int, np.integer)):
        if _I64_MIN <= int(value) <= _I64_MAX:
            return TAG_I64
        if 0 <= int(value) <= _U64_MAX:
            return TAG_U64
        raise _value_error(key, f"integer {value} does not fit in i64 or u64")
    if isinstance(value, (float, np.floating)):
        return TAG_F64
    if isinstance(value, str):
        return TAG_STR
    if isinstance(value, (bytes, bytearray, memoryview)):
        return TAG_BYTES
    raise _value_error(key, f"unsupported metadata value type {type(value).__name__}")


def _value_error(key: str, what: str) -> HurrayFormatError:
    return HurrayFormatError(
        f"metadata key {key!r}: {what}",
        field="kv_value",
        fix="use str, int (i64, or UInt64 for u64), float, bool, bytes, or a non-empty list of one "
        "of those types.",
    )


def _encode_scalar(tag: int, value: Any, key: str) -> bytes:
    if tag == TAG_STR:
        data = value.encode("utf-8")
        return struct.pack("<I", len(data)) + data
    if tag == TAG_I64:
        return struct.pack("<q", int(value))
    if tag == TAG_U64:
        return struct.pack("<Q", int(value))
    if tag == TAG_F64:
        return struct.pack("<d", float(value))
    if tag == TAG_BOOL:
        return b"\x01" if value else b"\x00"
    data = bytes(value)
    if len(data) > 0xFFFFFFFF:
        raise _value_error(key, "bytes value longer than 2**32-1")
    return struct.pack("<I", len(data)) + data


def _array_tag(values: list[Any] | tuple[Any, ...], key: str) -> int:
    if not values:
        raise _value_error(key, "empty arrays cannot be written (the element type is unknown)")
    tags = {_scalar_tag(v, key) for v in values}
    if tags <= {TAG_I64, TAG_U64}:
        if TAG_U64 in tags and any(int(v) < 0 for v in values):
            raise _value_error(key, "integer array mixes negative values and u64 values")
        return TAG_U64 if TAG_U64 in tags else TAG_I64
    if len(tags) != 1:
        names = sorted(TAG_NAMES[t] for t in tags)
        raise _value_error(key, f"array is not homogeneous (element types {names})")
    return tags.pop()


def encode_value(key: str, value: Any) -> bytes:
    """Encode one value as ``value_tag`` + payload.

    Args:
        key: the key, for error messages.
        value: a supported Python value (see module docstring).

    Returns:
        The encoded tag and payload.

    Raises:
        HurrayFormatError: the value cannot be represented.
    """
    if isinstance(value, (list, tuple)):
        tag = _array_tag(value, key)
        if len(value) > 0xFFFFFFFF:
            raise _value_error(key, "array longer than 2**32-1")
        parts = [bytes([TAG_ARRAY, tag]), struct.pack("<I", len(value))]
        parts.extend(_encode_scalar(tag, v, key) for v in value)
        return b"".join(parts)
    tag = _scalar_tag(value, key)
    return bytes([tag]) + _encode_scalar(tag, value, key)


def encode_kv(metadata: dict[str, Any]) -> bytes:
    """Encode a KV section (``kv_count u32`` then the entries, in dict order).

    Args:
        metadata: key -> value. Keys are non-empty str of at most 65535 UTF-8 bytes.

    Returns:
        The section bytes.

    Raises:
        HurrayFormatError: a bad key or value.
    """
    parts = [struct.pack("<I", len(metadata))]
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise _value_error(str(key), "keys must be str")
        raw = key.encode("utf-8")
        if not 1 <= len(raw) <= MAX_KEY_BYTES:
            raise _value_error(key, f"key is {len(raw)} UTF-8 bytes; it must be 1..65535")
        parts.append(struct.pack("<H", len(raw)) + raw)
        parts.append(encode_value(key, value))
    return b"".join(parts)


class _Cursor:
    """Bounds-checked little-endian reads over a KV section at absolute file offset ``base``."""

    def __init__(self, data: bytes | memoryview, base: int) -> None:
        self.data, self.base, self.pos = data, base, 0

    def need(self, n: int, field: str) -> None:
        if n > len(self.data) - self.pos:
            raise HurrayFormatError(
                f"KV section truncated: {field} needs {n} bytes but {len(self.data) - self.pos} "
                "remain within kv_length",
                field=field, offset=self.base + self.pos, fix=_FIX_KV,
            )

    def take(self, n: int, field: str) -> bytes:
        self.need(n, field)
        out = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return out

    def unpack(self, fmt: str, field: str) -> Any:
        size = struct.calcsize(fmt)
        self.need(size, field)
        value = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += size
        return value

    def error(self, message: str, field: str, at: int) -> HurrayFormatError:
        return HurrayFormatError(message, field=field, offset=self.base + at, fix=_FIX_KV)


def _decode_scalar(cur: _Cursor, tag: int) -> Any:
    at = cur.pos
    if tag in (TAG_STR, TAG_BYTES):
        length = cur.unpack("<I", "kv_value_length")
        raw = cur.take(length, "kv_value")
        if tag == TAG_BYTES:
            return raw
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise cur.error(f"string value is not valid UTF-8 ({exc.reason})", "kv_value", at) from None
    if tag == TAG_I64:
        return cur.unpack("<q", "kv_value")
    if tag == TAG_U64:
        return UInt64(cur.unpack("<Q", "kv_value"))
    if tag == TAG_F64:
        return cur.unpack("<d", "kv_value")
    raw_bool = cur.unpack("<B", "kv_value")
    if raw_bool > 1:
        raise cur.error(f"bool value byte is 0x{raw_bool:02X}; it must be 0 or 1", "kv_value", at)
    return bool(raw_bool)


def _decode_value(cur: _Cursor) -> Any:
    at = cur.pos
    tag = cur.unpack("<B", "value_tag")
    if tag in _MIN_SIZE:
        return _decode_scalar(cur, tag)
    if tag != TAG_ARRAY:
        raise cur.error(f"value_tag 0x{tag:02X} is not one of 0x01..0x07", "value_tag", at)
    at = cur.pos
    elem = cur.unpack("<B", "array_elem_tag")
    if elem not in _MIN_SIZE:
        raise cur.error(f"array element tag 0x{elem:02X} is not one of 0x01..0x06",
                        "array_elem_tag", at)
    at = cur.pos
    count = cur.unpack("<I", "array_count")
    if count * _MIN_SIZE[elem] > len(cur.data) - cur.pos:
        raise cur.error(f"array count {count} cannot fit in the remaining "
                        f"{len(cur.data) - cur.pos} bytes", "array_count", at)
    return [_decode_scalar(cur, elem) for _ in range(count)]


def decode_kv(data: bytes | memoryview, base: int = 0) -> dict[str, Any]:
    """Decode a KV section; trailing bytes after the last entry are ignored (as upstream does).

    Args:
        data: exactly ``kv_length`` bytes.
        base: absolute file offset of ``data``, for error offsets.

    Returns:
        key -> value (str, int, :class:`UInt64`, float, bool, bytes, or list of those).

    Raises:
        HurrayFormatError: truncation, bad tags, bad UTF-8, duplicate keys, bad bool bytes.
    """
    cur = _Cursor(data, base)
    count = cur.unpack("<I", "kv_count")
    # Every entry takes at least key_length(2) + key(1) + tag(1) + 1 payload byte.
    if count * 5 > len(data) - 4:
        raise cur.error(f"kv_count {count} cannot fit in kv_length {len(data)}", "kv_count", 0)
    out: dict[str, Any] = {}
    for _ in range(count):
        at = cur.pos
        key_len = cur.unpack("<H", "key_length")
        if key_len == 0:
            raise cur.error("key_length is 0; keys must be non-empty", "key_length", at)
        raw = cur.take(key_len, "key")
        try:
            key = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise cur.error(f"key is not valid UTF-8 ({exc.reason})", "key", at + 2) from None
        if key in out:
            raise cur.error(f"duplicate metadata key {key!r}", "key", at + 2)
        out[key] = _decode_value(cur)
    return out
