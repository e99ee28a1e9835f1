"""The primitive fields of VIR0: a bounds-checked reader over hostile bytes, and the
range-checked little-endian writers the encoders share.

The reader checks lengths before slicing; one depth counter serves nodes, exprs and
DataTypes. The writers refuse any value that does not fit its field.
"""

from __future__ import annotations

import struct

from vyre.errors import EncodeError, WireValidationError
from vyre.wire import MAX_DECODE_DEPTH, MAX_STRING_LEN

_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")
U32_MAX = 0xFFFFFFFF
U64_MAX = (1 << 64) - 1


# -- reading ---------------------------------------------------------------------------------


TRUNCATED = "truncated IR wire format. Fix: provide the complete Program bytes."
_DEPTH_WHAT = {
    "node": "Block/If/Loop structures",
    "expr": "Expr trees",
    "data_type": "DataType trees",
}


def utf8_error_text(exc: UnicodeDecodeError) -> str:
    """Rust's ``Utf8Error`` Display for the first invalid sequence Python found."""
    if exc.reason == "unexpected end of data":
        return f"incomplete utf-8 byte sequence from index {exc.start}"
    return f"invalid utf-8 sequence of {exc.end - exc.start} bytes from index {exc.start}"


class Reader:
    """A cursor over ``data[pos:end]`` (no copies) with typed little-endian reads.

    Args:
        data: the whole input buffer.
        pos: first readable byte.
        end: one past the last readable byte (default ``len(data)``).
    """

    __slots__ = ("data", "pos", "end", "depth")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        self.depth = 0

    @property
    def remaining(self) -> int:
        """Bytes left before ``end``."""
        return self.end - self.pos

    def at_end(self) -> bool:
        """Whether every byte has been consumed."""
        return self.pos == self.end

    def take(self, length: int) -> bytes:
        """Consume ``length`` bytes.

        Raises:
            WireValidationError: fewer than ``length`` bytes remain.
        """
        start = self.pos
        stop = start + length
        if stop > self.end:
            raise WireValidationError(TRUNCATED)
        self.pos = stop
        return self.data[start:stop]

    def skip(self, length: int) -> int:
        """Consume ``length`` bytes without copying; returns their start offset."""
        start = self.pos
        if start + length > self.end:
            raise WireValidationError(TRUNCATED)
        self.pos = start + length
        return start

    def u8(self) -> int:
        """One byte."""
        pos = self.pos
        if pos >= self.end:
            raise WireValidationError(TRUNCATED)
        self.pos = pos + 1
        return self.data[pos]

    def u32(self) -> int:
        """A little-endian u32."""
        pos = self.pos
        if pos + 4 > self.end:
            raise WireValidationError(TRUNCATED)
        self.pos = pos + 4
        return int(_U32.unpack_from(self.data, pos)[0])

    def i32(self) -> int:
        """A little-endian two's-complement i32."""
        pos = self.pos
        if pos + 4 > self.end:
            raise WireValidationError(TRUNCATED)
        self.pos = pos + 4
        return int(_I32.unpack_from(self.data, pos)[0])

    def u64(self) -> int:
        """A little-endian u64."""
        pos = self.pos
        if pos + 8 > self.end:
            raise WireValidationError(TRUNCATED)
        self.pos = pos + 8
        return int(_U64.unpack_from(self.data, pos)[0])

    def bounded_len(self, limit: int, label: str) -> int:
        """A u32 length, checked against ``limit`` before anything is allocated.

        Raises:
            WireValidationError: the value exceeds ``limit`` or the input is truncated.
        """
        value = self.u32()
        if value > limit:
            raise WireValidationError(
                f"Fix: {label} {value} exceeds IR wire-format limit {limit}; split the Program "
                "or reject this untrusted blob."
            )
        return value

    def string(self) -> str:
        """A ``wstr``: u32 byte length (at most 1 MiB), then UTF-8."""
        pos = self.pos
        if pos + 4 > self.end:
            raise WireValidationError(TRUNCATED)
        length = _U32.unpack_from(self.data, pos)[0]
        if length > MAX_STRING_LEN:
            self.pos = pos + 4
            raise WireValidationError(
                f"Fix: string length {length} exceeds IR wire-format limit {MAX_STRING_LEN}; "
                "split the Program or reject this untrusted blob."
            )
        stop = pos + 4 + length
        if stop > self.end:
            raise WireValidationError(TRUNCATED)
        self.pos = stop
        try:
            return str(self.data[pos + 4:stop], "utf-8")
        except UnicodeDecodeError as exc:
            raise WireValidationError(
                f"invalid UTF-8 in IR wire-format string: {utf8_error_text(exc)}. Fix: "
                "serialize valid Rust String values."
            ) from None

    def leb_u64(self) -> int:
        """An unsigned LEB128 of at most 10 bytes; overlong forms are accepted."""
        result = 0
        shift = 0
        data, end = self.data, self.end
        while True:
            pos = self.pos
            if pos >= end:
                raise WireValidationError(TRUNCATED)
            byte = data[pos]
            self.pos = pos + 1
            if shift == 63 and byte > 1:
                raise WireValidationError(
                    "TruncatedPayload: LEB128 integer exceeds u64. Fix: reject malformed wire "
                    "bytes."
                )
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def leb_u32(self) -> int:
        """A LEB128 value that must fit u32."""
        value = self.leb_u64()
        if value > 0xFFFFFFFF:
            raise WireValidationError(
                f"TruncatedPayload: LEB128 value {value} cannot fit u32 (out of range integral "
                "type conversion attempted). Fix: reject malformed wire bytes."
            )
        return value

    def leb_len(self, limit: int, label: str) -> int:
        """A LEB128 length checked against ``limit``."""
        value = self.leb_u64()
        if value > limit:
            raise WireValidationError(
                f"TruncatedPayload: {label} {value} exceeds limit {limit}. Fix: split the "
                "Program or reject this untrusted payload."
            )
        return value

    def leb_string(self) -> str:
        """An ``lstr``: LEB128 byte length (at most 1 MiB), then UTF-8."""
        raw = self.take(self.leb_len(MAX_STRING_LEN, "string length"))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WireValidationError(
                f"TruncatedPayload: invalid UTF-8 in string ({utf8_error_text(exc)}). Fix: "
                "serialize valid UTF-8 operation identifiers."
            ) from None

    def enter(self, what: str) -> None:
        """Increment the shared depth counter, failing at ``MAX_DECODE_DEPTH``.

        Args:
            what: ``"node"``, ``"expr"`` or ``"data_type"`` (selects the message).
        """
        if self.depth >= MAX_DECODE_DEPTH:
            raise WireValidationError(
                f"Fix: IR wire format exceeds maximum decode depth {MAX_DECODE_DEPTH}; flatten "
                f"deeply nested {_DEPTH_WHAT[what]} or reject this untrusted blob."
            )
        self.depth += 1

    def leave(self) -> None:
        """Decrement the shared depth counter."""
        self.depth -= 1

    def sub_reader(self, length: int) -> Reader:
        """Consume ``length`` bytes and return a fresh reader (depth 0) over them."""
        start = self.skip(length)
        return Reader(self.data, start, start + length)


# -- writing ---------------------------------------------------------------------------------


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
