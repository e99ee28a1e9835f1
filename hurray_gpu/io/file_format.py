"""Byte layout of the ``.hrry`` (HRRYFILE) container: header, trailer and index (docs/format.md,
.hrry files).

Pure encode/decode of the container's own structures; tensors are framed in file_reader/writer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from itertools import pairwise

from ..errors import HurrayFormatError

FILE_MAGIC = b"HRRYFILE"
TRAILER_MAGIC = b"HRRY"
HEADER_SIZE = 64
TRAILER_SIZE = 40
MIN_FILE_SIZE = HEADER_SIZE + 8 + TRAILER_SIZE
CONTAINER_MAJOR, CONTAINER_MINOR = 1, 0
FLAG_HAS_KV_METADATA, FLAG_SORTED_INDEX, FLAG_HAS_INDEX_CRC32C = 0x1, 0x2, 0x4
KNOWN_FILE_FLAGS = 0x7
MIN_ALIGNMENT, MAX_ALIGNMENT, DEFAULT_ALIGNMENT = 4096, 2097152, 4096
COUNT_UNKNOWN = 0xFFFFFFFFFFFFFFFF
ENTRY_FIXED = 34
_HEADER = struct.Struct("<8sBB2sIIQQ28s")
_TRAILER = struct.Struct("<QQQII4s4s")
_ENTRY_TAIL = struct.Struct("<QIQQI")
_FIX_FILE = "the file is not a valid .hrry container; re-create it with a conforming writer."


def align_up(value: int, alignment: int) -> int:
    """Round ``value`` up to a multiple of ``alignment`` (a power of two)."""
    return (value + alignment - 1) & ~(alignment - 1)


def _err(message: str, field: str, offset: int, fix: str = _FIX_FILE) -> HurrayFormatError:
    return HurrayFormatError(message, field=field, offset=offset, fix=fix)


@dataclass(frozen=True)
class FileHeader:
    """The 64-byte file header."""

    file_flags: int
    alignment: int
    first_descriptor_offset: int = HEADER_SIZE
    tensor_count_hint: int = COUNT_UNKNOWN
    version_major: int = CONTAINER_MAJOR
    version_minor: int = CONTAINER_MINOR

    def encode(self) -> bytes:
        """Return the 64 header bytes."""
        return _HEADER.pack(FILE_MAGIC, self.version_major, self.version_minor, b"\0\0",
                            self.file_flags, self.alignment, self.first_descriptor_offset,
                            self.tensor_count_hint, b"\0" * 28)

    @classmethod
    def decode(cls, data: bytes | memoryview, file_size: int) -> FileHeader:
        """Decode and validate a header (with the reader checks beyond upstream's).

        Raises:
            HurrayFormatError: bad magic, version, flags, alignment, offsets or reserved bytes.
        """
        if len(data) < HEADER_SIZE:
            raise _err(f"file is {len(data)} bytes, shorter than the 64-byte header", "header", 0)
        magic, major, minor, res1, flags, align, first, hint, res2 = _HEADER.unpack_from(data, 0)
        if magic != FILE_MAGIC:
            raise _err(f"magic is {magic!r}, expected b'HRRYFILE'", "magic", 0)
        if major != CONTAINER_MAJOR:
            raise _err(f"container_version_major is {major}; only 1 is supported",
                       "container_version_major", 8, "upgrade hurray_gpu or re-save the file.")
        if flags & ~KNOWN_FILE_FLAGS:
            raise _err(f"file_flags 0x{flags:08X} sets reserved bits 3-31", "file_flags", 12)
        if minor == 0 and (any(res1) or any(res2)):
            at = 10 if any(res1) else 36
            raise _err("reserved header bytes are not zero", "_reserved", at)
        if align & (align - 1) or not MIN_ALIGNMENT <= align <= MAX_ALIGNMENT:
            raise _err(f"data_buffer_alignment {align} is not a power of two in "
                       f"[{MIN_ALIGNMENT}, {MAX_ALIGNMENT}]", "data_buffer_alignment", 16)
        if first < HEADER_SIZE or first % 8 or first > file_size - TRAILER_SIZE:
            raise _err(f"first_descriptor_offset {first} must be >= 64, 8-aligned and inside the "
                       f"file", "first_descriptor_offset", 20)
        return cls(flags, align, first, hint, major, minor)


@dataclass(frozen=True)
class Trailer:
    """The 40-byte trailer at ``file_size - 40``."""

    index_offset: int
    index_length: int
    kv_offset: int
    kv_length: int
    index_crc32c: int

    @property
    def has_kv(self) -> bool:
        """KV is present iff both kv fields are non-zero, whatever flag bit 0 says."""
        return self.kv_offset != 0 and self.kv_length != 0

    def encode(self) -> bytes:
        """Return the 40 trailer bytes."""
        return _TRAILER.pack(self.index_offset, self.index_length, self.kv_offset,
                             self.kv_length, self.index_crc32c, b"\0" * 4, TRAILER_MAGIC)

    @classmethod
    def decode(cls, data: bytes | memoryview, file_size: int, header: FileHeader) -> Trailer:
        """Decode and validate the trailer against the file size and header.

        Args:
            data: the last 40 bytes of the file.
            file_size: total file size.
            header: the decoded header.

        Raises:
            HurrayFormatError: bad magic, reserved bytes, or regions outside the file.
        """
        base = file_size - TRAILER_SIZE
        idx_off, idx_len, kv_off, kv_len, crc, res, magic = _TRAILER.unpack_from(data, 0)
        if magic != TRAILER_MAGIC:
            raise _err(f"trailer magic is {magic!r}, expected b'HRRY' (file truncated?)",
                       "trailer_magic", base + 36)
        if header.version_minor == 0 and any(res):
            raise _err("trailer reserved bytes are not zero", "_reserved", base + 32)
        if not header.file_flags & FLAG_HAS_INDEX_CRC32C and crc != 0:
            raise _err(f"index_crc32c is 0x{crc:08X} but HAS_INDEX_CRC32C is clear; it must be 0",
                       "index_crc32c", base + 28)
        if idx_off < header.first_descriptor_offset or idx_len < 8 or idx_len > base - idx_off:
            raise _err(f"index [{idx_off}, +{idx_len}) is not inside [first_descriptor_offset="
                       f"{header.first_descriptor_offset}, {base})", "index_offset", base)
        trailer = cls(idx_off, idx_len, kv_off, kv_len, crc)
        if trailer.has_kv and (kv_off < header.first_descriptor_offset
                               or kv_len > idx_off - kv_off):
            raise _err(f"KV section [{kv_off}, +{kv_len}) is not between the header and the "
                       f"index at {idx_off}", "kv_offset", base + 16)
        return trailer


@dataclass(frozen=True)
class IndexEntry:
    """One index entry: where a named tensor's descriptor and data are."""

    name: str
    descriptor_offset: int
    descriptor_length: int
    data_offset: int
    data_length: int
    flags: int = 0

    def encode(self) -> bytes:
        """Return ``name_length u16 | name | descriptor_offset u64 | ... | flags u32``."""
        raw = self.name.encode("utf-8")
        return (struct.pack("<H", len(raw)) + raw
                + _ENTRY_TAIL.pack(self.descriptor_offset, self.descriptor_length,
                                   self.data_offset, self.data_length, self.flags))


def encode_index(entries: list[IndexEntry]) -> bytes:
    """Encode ``entry_count u64`` followed by the entries in the given order."""
    return struct.pack("<Q", len(entries)) + b"".join(e.encode() for e in entries)


def _entry_error(message: str, field: str, at: int) -> HurrayFormatError:
    return _err(message, field, at)


def decode_index(data: bytes | memoryview, base: int, region_end: int, header: FileHeader
                 ) -> list[IndexEntry]:
    """Decode and validate the index (entries in stored order).

    Args:
        data: exactly ``index_length`` bytes.
        base: absolute offset of the index, for error offsets.
        region_end: end of the tensor region (KV offset, or the index offset); every
            descriptor and data range must end at or before it.
        header: the decoded header.

    Returns:
        The entries.

    Raises:
        HurrayFormatError: truncation, bad or duplicate names, ranges outside the region,
            overlapping descriptor or data ranges, non-zero flags (minor 0), or trailing
            bytes.
    """
    (count,) = struct.unpack_from("<Q", data, 0)
    size = len(data)
    if count > (size - 8) // (ENTRY_FIXED + 1):
        raise _entry_error(f"entry_count {count} cannot fit in index_length {size}",
                           "entry_count", base)
    entries: list[IndexEntry] = []
    at: list[int] = []  # absolute offset of each entry's descriptor_offset field
    seen: set[str] = set()
    pos, first, strict = 8, header.first_descriptor_offset, header.version_minor == 0
    unpack_tail = _ENTRY_TAIL.unpack_from
    for _ in range(count):
        if pos + 2 > size:
            raise _entry_error("index truncated inside an entry", "name_length", base + pos)
        (name_len,) = struct.unpack_from("<H", data, pos)
        if name_len == 0:
            raise _entry_error("name_length is 0; names must be non-empty", "name_length",
                               base + pos)
        if pos + 2 + name_len + 32 > size:
            raise _entry_error("index truncated inside an entry", "name", base + pos)
        try:
            name = bytes(data[pos + 2 : pos + 2 + name_len]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _entry_error(f"tensor name is not valid UTF-8 ({exc.reason})", "name",
                               base + pos + 2) from None
        if name in seen:
            raise _entry_error(f"duplicate tensor name {name!r}", "name", base + pos + 2)
        seen.add(name)
        tail = pos + 2 + name_len
        d_off, d_len, data_off, data_len, flags = unpack_tail(data, tail)
        _check_entry(name, d_off, d_len, data_off, data_len, flags, first, region_end,
                     strict, base + tail)
        entries.append(IndexEntry(name, d_off, d_len, data_off, data_len, flags))
        at.append(base + tail)
        pos = tail + 32
    if pos != size:
        raise _entry_error(f"index has {size - pos} trailing bytes after its last entry",
                           "index_length", base + pos)
    _check_disjoint(entries, at)
    return entries


def _check_disjoint(entries: list[IndexEntry], at: list[int]) -> None:
    """Reject index entries whose descriptor or data ranges overlap (O(n log n)).

    Every tensor owns its descriptor and data bytes: aliased entries would make a reader copy
    the same bytes once per entry (memory amplification). Zero-length data ranges (composite
    heads and all-empty tensors) are never read, so they overlap nothing.

    Raises:
        HurrayFormatError: two ranges overlap (an entry's own descriptor and data included).
    """
    spans = []
    for i, e in enumerate(entries):
        spans.append((e.descriptor_offset, e.descriptor_offset + e.descriptor_length, i, 0))
        if e.data_length:
            spans.append((e.data_offset, e.data_offset + e.data_length, i, 1))
    spans.sort()
    kinds, fields = ("descriptor", "data"), ("descriptor_offset", "data_offset")
    for prev, cur in pairwise(spans):
        if cur[0] < prev[1]:
            # Blame the entry stored later in the index: it is the one re-using bytes.
            first, later = sorted((prev, cur), key=lambda span: (span[2], span[3]))
            a, b = entries[first[2]], entries[later[2]]
            raise _err(
                f"tensor {b.name!r}: {kinds[later[3]]} [{later[0]}, {later[1]}) overlaps the "
                f"{kinds[first[3]]} [{first[0]}, {first[1]}) of tensor {a.name!r}; index "
                "entries must not share descriptor or data bytes", fields[later[3]],
                at[later[2]] + 12 * later[3],
                "give every index entry its own descriptor and data ranges; re-create the "
                "file with a conforming writer.")


def _check_entry(name: str, d_off: int, d_len: int, data_off: int, data_len: int, flags: int,
                 first: int, region_end: int, strict: bool, at: int) -> None:
    if d_len < 20:
        raise _entry_error(f"tensor {name!r}: descriptor_length {d_len} is below 20",
                           "descriptor_length", at + 8)
    if d_off < first or d_len > region_end - d_off:
        raise _entry_error(f"tensor {name!r}: descriptor [{d_off}, +{d_len}) is outside the "
                           f"tensor region [{first}, {region_end})", "descriptor_offset", at)
    # A zero-length data range is never read (heads, all-empty tensors), so only real data is
    # bounds-checked; spec-literal writers may leave a head's data_offset unpadded.
    if data_len and (data_off < first or data_len > region_end - data_off):
        raise _entry_error(f"tensor {name!r}: data [{data_off}, +{data_len}) is outside the "
                           f"tensor region [{first}, {region_end})", "data_offset", at + 12)
    if strict and flags != 0:
        raise _entry_error(f"tensor {name!r}: index entry flags are 0x{flags:08X}; they must be 0",
                           "flags", at + 28)
