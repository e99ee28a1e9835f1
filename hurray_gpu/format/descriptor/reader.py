"""Bounds-checked little-endian reader and writer for Hurray descriptors.

Every read checks the remaining input first, so hostile counts fail fast with HurrayFormatError.
"""

from __future__ import annotations

import struct
from typing import NoReturn

from hurray_gpu.errors import HurrayFormatError

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_I32 = struct.Struct("<i")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")

U32_MAX = 0xFFFFFFFF
U64_MAX = 0xFFFFFFFFFFFFFFFF


def fail(message: str, field: str, offset: int | None, fix: str) -> NoReturn:
    """Raise the one error type of the codec.

    Args:
        message: what is wrong, including the bad value.
        field: the wire field name.
        offset: absolute byte offset of the field, or None.
        fix: the ``Fix:`` hint.

    Raises:
        HurrayFormatError: always.
    """
    raise HurrayFormatError(message, field=field, offset=offset, fix=fix)


class Reader:
    """Cursor over ``data[pos:end]``; never reads at or past ``end``.

    Args:
        data: the input bytes.
        pos: absolute start offset.
        end: absolute end offset (exclusive); must be ``<= len(data)``.
    """

    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int, end: int) -> None:
        self.data = data
        self.pos = pos
        self.end = end

    def remaining(self) -> int:
        """Return the number of bytes left before ``end``."""
        return self.end - self.pos

    def need(self, n: int, field: str) -> int:
        """Check that ``n`` bytes remain; return the current offset.

        Raises:
            HurrayFormatError: when fewer than ``n`` bytes remain.
        """
        pos = self.pos
        if n > self.end - pos:
            fail(
                f"truncated descriptor: {field} needs {n} bytes but only "
                f"{max(self.end - pos, 0)} remain",
                field, pos,
                "the descriptor is cut short or descriptor_length is too small; "
                "re-send the complete descriptor.",
            )
        return pos

    def u8(self, field: str) -> int:
        """Read a u8."""
        pos = self.need(1, field)
        self.pos = pos + 1
        return self.data[pos]

    def u16(self, field: str) -> int:
        """Read a little-endian u16."""
        pos = self.need(2, field)
        self.pos = pos + 2
        return _U16.unpack_from(self.data, pos)[0]

    def u32(self, field: str) -> int:
        """Read a little-endian u32."""
        pos = self.need(4, field)
        self.pos = pos + 4
        return _U32.unpack_from(self.data, pos)[0]

    def i32(self, field: str) -> int:
        """Read a little-endian i32."""
        pos = self.need(4, field)
        self.pos = pos + 4
        return _I32.unpack_from(self.data, pos)[0]

    def u64(self, field: str) -> int:
        """Read a little-endian u64."""
        pos = self.need(8, field)
        self.pos = pos + 8
        return _U64.unpack_from(self.data, pos)[0]

    def f32(self, field: str) -> float:
        """Read a little-endian f32."""
        pos = self.need(4, field)
        self.pos = pos + 4
        return _F32.unpack_from(self.data, pos)[0]

    def f64(self, field: str) -> float:
        """Read a little-endian f64 (bit pattern preserved, NaN payloads included)."""
        pos = self.need(8, field)
        self.pos = pos + 8
        return _F64.unpack_from(self.data, pos)[0]

    def raw(self, n: int, field: str) -> bytes:
        """Read ``n`` raw bytes (checked before copying)."""
        pos = self.need(n, field)
        self.pos = pos + n
        return bytes(self.data[pos:pos + n])

    def array(self, fmt: str, count: int, size: int, field: str) -> tuple[int, ...]:
        """Read ``count`` values of struct code ``fmt`` (``size`` bytes each).

        The length is checked against the remaining input before anything is allocated.
        """
        pos = self.need(count * size, field)
        self.pos = pos + count * size
        if count == 0:
            return ()
        return struct.unpack_from(f"<{count}{fmt}", self.data, pos)

    def zeros(self, n: int, field: str) -> None:
        """Read ``n`` reserved bytes and reject any that is non-zero."""
        pos = self.need(n, field)
        self.pos = pos + n
        chunk = self.data[pos:pos + n]
        if any(chunk):
            bad = next(i for i, b in enumerate(chunk) if b)
            fail(
                f"reserved byte {field} is 0x{chunk[bad]:02X}, must be 0x00",
                field, pos + bad,
                "reserved bytes must be written as zero; the producer is non-conforming.",
            )


class Writer:
    """Little-endian append-only byte builder."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def u8(self, value: int) -> None:
        """Append a u8."""
        self.buf.append(value)

    def u16(self, value: int) -> None:
        """Append a u16."""
        self.buf += _U16.pack(value)

    def u32(self, value: int) -> None:
        """Append a u32."""
        self.buf += _U32.pack(value)

    def i32(self, value: int) -> None:
        """Append an i32."""
        self.buf += _I32.pack(value)

    def u64(self, value: int) -> None:
        """Append a u64."""
        self.buf += _U64.pack(value)

    def f32(self, value: float) -> None:
        """Append an f32."""
        self.buf += _F32.pack(value)

    def f64(self, value: float) -> None:
        """Append an f64."""
        self.buf += _F64.pack(value)

    def raw(self, data: bytes) -> None:
        """Append raw bytes."""
        self.buf += data

    def zeros(self, n: int) -> None:
        """Append ``n`` zero bytes."""
        self.buf += bytes(n)

    def array(self, fmt: str, values: tuple[int, ...]) -> None:
        """Append ``values`` packed with struct code ``fmt``."""
        if values:
            self.buf += struct.pack(f"<{len(values)}{fmt}", *values)
