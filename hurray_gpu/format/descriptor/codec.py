"""Decode and encode Hurray tensor descriptors (Hurray spec, Metadata; docs/format.md,
Descriptor decoding).

The wire walk is structural (what upstream's decoder checks); ``validate_descriptor`` then
enforces the remaining spec MUSTs.
"""

from __future__ import annotations

import struct

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.dtypes import DType, by_tag

from .buffers import HANDLE_SIZE, decode_handle, encode_handle
from .layouts import UnknownLayout, decode_layout, encode_layout, layout_tag_problem
from .model import (
    DYNAMIC,
    HAS_COMPOSITE_MEMBER,
    HAS_EXTENSION_TYPE,
    HAS_QUANTIZATION,
    HAS_SHARD,
    HAS_STATISTICS,
    TensorDescriptor,
)
from .quant import Quantization, decode_quantization, encode_quantization
from .reader import Reader, Writer, fail
from .sections import (
    CompositeMember,
    ExtensionType,
    Shard,
    Statistics,
    decode_extension_type,
    decode_member,
    decode_shard,
    decode_statistics,
    encode_sections,
)
from .validate import MAX_RANK, Where, validate_descriptor

MAGIC = b"HRRY"
HEADER_SIZE = 20
_HEADER = struct.Struct("<4sBBIIBBI")
_RESERVED_FLAGS = ~0x1F & 0xFFFFFFFF
Data = bytes | bytearray | memoryview


def peek_descriptor_length(data: Data, offset: int = 0) -> int:
    """Read ``descriptor_length`` from the first 10 bytes (enough to skip a descriptor).

    Raises:
        HurrayFormatError: when fewer than 10 bytes remain, the magic is wrong or the length
            is below 20.
    """
    if len(data) - offset < 10 or offset < 0:
        fail("fewer than 10 bytes for a descriptor header", "descriptor_length", offset,
             "pass the complete descriptor.")
    if bytes(data[offset:offset + 4]) != MAGIC:
        fail(f"bad magic {bytes(data[offset:offset + 4])!r}, expected b'HRRY'", "magic",
             offset, "this is not a Hurray tensor descriptor.")
    length = struct.unpack_from("<I", data, offset + 6)[0]
    if length < HEADER_SIZE:
        fail(f"descriptor_length {length} is below the 20-byte header", "descriptor_length",
             offset + 6, "write the total descriptor size, header included.")
    return length


def decode_descriptor(data: Data, *, permissive: bool = False) -> TensorDescriptor:
    """Decode exactly one descriptor occupying all of ``data``.

    Args:
        data: the descriptor bytes; trailing bytes after ``descriptor_length`` are an error.
        permissive: accept unknown type/layout/scheme tags and skip the checks the spec lets a
            permissive reader skip (the data must then not be interpreted).

    Returns:
        The validated TensorDescriptor.

    Raises:
        HurrayFormatError: for any malformed or non-conforming input.
    """
    desc, used = decode_descriptor_prefix(data, 0, permissive=permissive)
    if used != len(data):
        fail(f"{len(data) - used} bytes follow the {used}-byte descriptor", "descriptor_length",
             used, "pass exactly one descriptor, or use decode_descriptor_prefix.")
    return desc


def decode_descriptor_prefix(data: Data, offset: int = 0, *,
                             permissive: bool = False) -> tuple[TensorDescriptor, int]:
    """Decode the descriptor starting at ``offset``; bytes after it are left alone.

    Args:
        data: a buffer holding the descriptor at ``offset``.
        offset: absolute start of the descriptor.
        permissive: as for ``decode_descriptor``.

    Returns:
        ``(descriptor, descriptor_length)``.

    Raises:
        HurrayFormatError: for any malformed or non-conforming input.
    """
    if isinstance(data, memoryview) and (data.format != "B" or data.ndim != 1):
        data = data.cast("B")
    if len(data) - offset < HEADER_SIZE or offset < 0:
        fail(f"only {max(len(data) - offset, 0)} bytes for the 20-byte header", "header",
             offset, "pass the complete descriptor.")
    magic, major, minor, length, flags, ttag, ltag, rank = _HEADER.unpack_from(data, offset)
    _check_fixed(magic, major, length, flags, rank, len(data) - offset, offset)
    dtype = _dtype(ttag, permissive, offset)
    r = Reader(data, offset + HEADER_SIZE, offset + length)
    marks = {"h": offset, "shape": r.pos}
    shape = tuple(None if v == DYNAMIC else v for v in r.array("Q", rank, 8, "shape"))
    marks["byte_offset"] = r.pos
    byte_offset = r.u64("byte_offset")
    marks["layout"] = r.pos
    problem = layout_tag_problem(ltag)
    if problem is not None:
        if ltag in (0x00, 0xFF) or not permissive:
            fail(f"layout_tag 0x{ltag:02X} {problem}", "layout_tag", offset + 15,
                 "use an assigned layout tag (Hurray spec, Memory Layout: Named Layout Tags).")
        unknown = UnknownLayout(ltag, flags, r.raw(r.remaining(), "layout"))
        desc = TensorDescriptor(dtype, shape, unknown, (), byte_offset,
                                version_major=major, version_minor=minor)
        validate_descriptor(desc, permissive=True, where=Where(marks))
        return desc, length
    layout = decode_layout(r, ltag, rank)
    marks["buffer_count"] = r.pos
    count = r.u8("buffer_count")
    r.need(HANDLE_SIZE * count, "buffers")
    marks["buffers"] = r.pos
    buffers = tuple(decode_handle(r, i) for i in range(count))
    quant, shard, stats, ext, member = _decode_sections(r, flags, rank, permissive, marks)
    trailing = _finish(r, minor, length, offset)
    desc = TensorDescriptor(dtype, shape, layout, buffers, byte_offset, quant, shard, stats,
                            ext, member, major, minor, trailing)
    validate_descriptor(desc, permissive=permissive, where=Where(marks))
    return desc, length


def _check_fixed(magic: bytes, major: int, length: int, flags: int, rank: int, avail: int,
                 base: int) -> None:
    if magic != MAGIC:
        fail(f"bad magic {magic!r}, expected b'HRRY'", "magic", base,
             "this is not a Hurray tensor descriptor.")
    if major != 1:
        fail(f"version_major {major} is not supported (only 1)", "version_major", base + 4,
             "upgrade the reader, or re-export the tensor as Hurray 1.x.")
    if length < HEADER_SIZE:
        fail(f"descriptor_length {length} is below the 20-byte header", "descriptor_length",
             base + 6, "write the total descriptor size, header included.")
    if length > avail:
        fail(f"descriptor_length {length} exceeds the {avail} bytes available",
             "descriptor_length", base + 6, "the descriptor is truncated; re-send it whole.")
    if flags & _RESERVED_FLAGS:
        fail(f"flags 0x{flags:08X} set reserved bits 5-31", "flags", base + 10,
             "clear every descriptor flag bit above HAS_COMPOSITE_MEMBER (0x10).")
    if rank > MAX_RANK:
        fail(f"rank {rank} exceeds {MAX_RANK}", "rank", base + 16,
             "Hurray tensors have at most 64 dimensions.")


def _dtype(tag: int, permissive: bool, base: int) -> DType:
    try:
        return by_tag(tag, permissive=permissive)
    except HurrayFormatError as exc:
        raise HurrayFormatError(str(exc).split(" (field")[0], field="type_tag",
                                offset=base + 14, fix="use an assigned type_tag (Hurray "
                                "spec, Element Types) or a private tag 0xF0-0xFE.") from None


def _decode_sections(
    r: Reader, flags: int, rank: int, permissive: bool, marks: dict[str, int],
) -> tuple[Quantization | None, Shard | None, Statistics | None, ExtensionType | None,
           CompositeMember | None]:
    quant: Quantization | None = None
    shard: Shard | None = None
    stats: Statistics | None = None
    ext: ExtensionType | None = None
    member: CompositeMember | None = None
    if flags & HAS_QUANTIZATION:
        marks["quantization"] = r.pos + 4
        quant = decode_quantization(r, permissive)
    if flags & HAS_SHARD:
        marks["shard"] = r.pos
        shard = decode_shard(r, rank)
    if flags & HAS_STATISTICS:
        marks["statistics"] = r.pos
        stats = decode_statistics(r)
    if flags & HAS_EXTENSION_TYPE:
        marks["extension_type"] = r.pos
        ext = decode_extension_type(r)
    if flags & HAS_COMPOSITE_MEMBER:
        marks["composite_member"] = r.pos
        member = decode_member(r)
    return quant, shard, stats, ext, member


def _finish(r: Reader, minor: int, length: int, base: int) -> bytes:
    if r.pos == r.end:
        return b""
    if minor == 0:
        fail(f"descriptor_length {length} but the 1.0 sections end after {r.pos - base} bytes",
             "descriptor_length", base + 6,
             "write descriptor_length equal to the encoded size (trailing bytes need minor > 0).")
    return r.raw(r.remaining(), "trailing")


def encode_descriptor(d: TensorDescriptor, *, permissive: bool = False) -> bytes:
    """Validate ``d`` and encode it (see ``TensorDescriptor.encode``).

    Raises:
        HurrayFormatError: if ``d`` breaks a spec rule or a field does not fit its wire type.
    """
    validate_descriptor(d, permissive=permissive)
    w = Writer()
    try:
        _encode_into(w, d)
    except (struct.error, OverflowError, TypeError, ValueError) as exc:
        raise HurrayFormatError(f"a field does not fit its wire type: {exc}", field="encode",
                                fix="keep every field within its u8/u32/u64/i64 range.") from None
    struct.pack_into("<I", w.buf, 6, len(w.buf))
    return bytes(w.buf)


def _encode_into(w: Writer, d: TensorDescriptor) -> None:
    w.raw(_HEADER.pack(MAGIC, d.version_major, d.version_minor, 0, d.flags, d.dtype.tag,
                       d.layout.TAG, len(d.shape)))
    w.array("Q", tuple(DYNAMIC if v is None else v for v in d.shape))
    w.u64(d.byte_offset)
    encode_layout(w, d.layout)
    if isinstance(d.layout, UnknownLayout):
        return
    w.u8(len(d.buffers))
    for h in d.buffers:
        encode_handle(w, h)
    if d.quantization is not None:
        encode_quantization(w, d.quantization)
    encode_sections(w, d.shard, d.statistics, d.extension_type, d.composite_member)
    w.raw(d.trailing)
