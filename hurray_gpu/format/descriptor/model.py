"""The immutable TensorDescriptor value (Hurray spec, Metadata), its convenience constructors,
and its wire codec (docs/format.md, Descriptor decoding).

The wire walk is structural (what upstream's decoder checks); ``validate_descriptor`` then
enforces the remaining spec MUSTs.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

from hurray_gpu.errors import ArgumentTypeError, HurrayFormatError
from hurray_gpu.format.descriptor.buffers import (
    DEVICE_ALIGNMENT,
    HANDLE_SIZE,
    MIN_DATA_ALIGNMENT,
    BufferHandle,
    DeviceTag,
    MemoryClass,
    decode_handle,
    encode_handle,
)
from hurray_gpu.format.descriptor.layouts import (
    ColMajor,
    Composite,
    Extension,
    Layout,
    RowMajor,
    UnknownLayout,
    decode_layout,
    encode_layout,
    layout_tag_problem,
)
from hurray_gpu.format.descriptor.quant import (
    Quantization,
    RawQuantization,
    decode_quantization,
    encode_quantization,
)
from hurray_gpu.format.descriptor.reader import Reader, Writer, fail
from hurray_gpu.format.descriptor.sections import (
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
from hurray_gpu.format.descriptor.sizes import BufferSpec, layout_specs, prod, quant_specs
from hurray_gpu.format.descriptor.validate import MAX_RANK, Where, validate_descriptor
from hurray_gpu.format.dtypes import DType, buffer_size, by_name, by_tag

DYNAMIC = 0xFFFFFFFFFFFFFFFF  # wire sentinel of a dynamic dimension (None in ``shape``)
HAS_QUANTIZATION, HAS_SHARD, HAS_EXTENSION_TYPE = 0x01, 0x02, 0x04
HAS_STATISTICS, HAS_COMPOSITE_MEMBER = 0x08, 0x10


@dataclass(frozen=True, slots=True)
class TensorDescriptor:
    """One Hurray tensor descriptor (immutable; decode with ``decode_descriptor``).

    Attributes:
        dtype: the storage element type (``dtype.tag`` is the wire type_tag).
        shape: dimension sizes, dimension 0 outermost; ``None`` marks a dynamic dimension
            (wire value 0xFFFFFFFFFFFFFFFF). ``()`` is a scalar.
        layout: a typed layout object (RowMajor, Strided, Tiled, COO, ...).
        buffers: the buffer table.
        byte_offset: offset of element [0, ..., 0] from the start of buffer 0.
        quantization: None or a scheme object (PerTensorAffine, PerChannelAffine, ...).
        shard, statistics, extension_type, composite_member: optional sections, None if absent.
        version_major, version_minor: descriptor format version (1.0 when written here).
        trailing: bytes after the 1.0 sections of a minor > 0 descriptor, kept so that it
            re-encodes byte-identically (a writer of 1.0 descriptors leaves it empty).
    """

    dtype: DType
    shape: tuple[int | None, ...]
    layout: Layout = RowMajor()
    buffers: tuple[BufferHandle, ...] = ()
    byte_offset: int = 0
    quantization: Quantization | None = None
    shard: Shard | None = None
    statistics: Statistics | None = None
    extension_type: ExtensionType | None = None
    composite_member: CompositeMember | None = None
    version_major: int = 1
    version_minor: int = 0
    trailing: bytes = b""

    @property
    def rank(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def type_tag(self) -> int:
        """The wire type_tag."""
        return self.dtype.tag

    @property
    def layout_tag(self) -> int:
        """The wire layout_tag."""
        return self.layout.TAG

    @property
    def flags(self) -> int:
        """The header flags, derived from which optional sections are present."""
        if isinstance(self.layout, UnknownLayout):
            return self.layout.flags
        return ((HAS_QUANTIZATION if self.quantization is not None else 0)
                | (HAS_SHARD if self.shard is not None else 0)
                | (HAS_EXTENSION_TYPE if self.extension_type is not None else 0)
                | (HAS_STATISTICS if self.statistics is not None else 0)
                | (HAS_COMPOSITE_MEMBER if self.composite_member is not None else 0))

    @property
    def descriptor_length(self) -> int:
        """Total encoded length in bytes (header included)."""
        return len(self.encode(permissive=True))

    @property
    def is_dynamic(self) -> bool:
        """True when any dimension is dynamic."""
        return None in self.shape

    @property
    def element_count(self) -> int | None:
        """Product of the shape (1 for a scalar); None while any dimension is dynamic."""
        return prod(self.shape)

    @property
    def interpretable(self) -> bool:
        """False when the data must not be interpreted without an out-of-band agreement.

        That is: an unknown or private type tag, an unknown or private layout, or an
        unrecognised quantization scheme.
        """
        return (self.dtype.interpretable
                and not isinstance(self.layout, (UnknownLayout, Extension))
                and not isinstance(self.quantization, RawQuantization))

    @property
    def data_buffer_index(self) -> int | None:
        """Index of the data (dense) / values (sparse) / page_pool buffer; None for heads."""
        if isinstance(self.layout, (Composite, UnknownLayout)) or not self.buffers:
            return None
        return 0

    def buffer_specs(self) -> tuple[BufferSpec, ...]:
        """Role and required size of every buffer, in table order.

        Layout buffers come first (index 0 is the data/values/page_pool buffer), then the
        quantization parameter buffers. Buffers of a private layout are ``"opaque"``.

        Returns:
            One BufferSpec per buffer-table entry (a shared scale/zero-point buffer appears once).
        """
        if isinstance(self.layout, (Composite, UnknownLayout)):
            return ()
        specs = layout_specs(self.layout, self.shape, self.dtype, self.extension_type,
                             self.byte_offset)
        if self.layout.TAG >= 0xF0:
            specs = []
        if self.quantization is not None:
            specs += quant_specs(self.quantization, self.shape, self.layout)
        by_index = {s.index: s for s in specs}
        return tuple(by_index.get(i, BufferSpec(i, "opaque", None))
                     for i in range(len(self.buffers)))

    def required_buffer_sizes(self) -> tuple[int | None, ...]:
        """Minimum byte_size of each buffer (None = depends on contents or dynamic dims)."""
        return tuple(s.min_size for s in self.buffer_specs())

    def encode(self, *, permissive: bool = False) -> bytes:
        """Validate, then encode to wire bytes.

        Args:
            permissive: validate as a permissive reader would (needed to re-encode a
                descriptor that was decoded with ``permissive=True``).

        Returns:
            The descriptor bytes (``descriptor_length`` of them).

        Raises:
            HurrayFormatError: if the descriptor breaks a rule of the spec.
        """
        return encode_descriptor(self, permissive=permissive)

    @classmethod
    def dense(cls, dtype: DType | str | int, shape: tuple[int, ...] | list[int], *,
              buffers: tuple[BufferHandle, ...] | None = None, device_tag: int = DeviceTag.CPU,
              memory_class: int = MemoryClass.STANDARD, col_major: bool = False,
              sync_mode: int = 0, alignment: int | None = None) -> TensorDescriptor:
        """Build a valid row-major (or column-major) descriptor with one data buffer.

        Args:
            dtype: a DType, canonical name or type tag.
            shape: static dimension sizes.
            buffers: explicit buffer table; default one buffer of exactly the needed size.
            device_tag: device of the default buffer.
            memory_class: memory class of the default buffer.
            col_major: use column-major (0x02) instead of row-major (0x01).
            sync_mode: sync mode of the default buffer (CPU requires 0).
            alignment: default 64 on CPU and 4096 on devices (the spec's writer rule).

        Returns:
            The validated descriptor.

        Raises:
            HurrayFormatError: for an invalid dtype, shape or buffer.
        """
        dt = by_name(dtype) if isinstance(dtype, str) else (
            dtype if isinstance(dtype, DType) else by_tag(dtype))
        if not dt.interpretable:
            raise HurrayFormatError(
                f"dense() cannot size a buffer of {dt.name}", field="type_tag",
                fix="build private-type descriptors with an ExtensionType and explicit buffers.")
        dims = tuple(int(d) for d in shape)
        if buffers is None:
            align = alignment or (MIN_DATA_ALIGNMENT if device_tag == DeviceTag.CPU
                                  else DEVICE_ALIGNMENT)
            size = buffer_size(dt, prod(dims) or 0)
            buffers = (BufferHandle(size, align, device_tag, sync_mode, memory_class),)
        desc = cls(dt, dims, ColMajor() if col_major else RowMajor(), tuple(buffers))

        validate_descriptor(desc, permissive=False)
        return desc


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
    try:
        if not permissive and len(data) <= _MEMO_BYTES:
            return _decode_memo(bytes(data))
        return _decode_whole(data, permissive)
    except TypeError:  # checked here, off the hot path of valid bytes
        if isinstance(data, (bytes, bytearray, memoryview)):
            raise
        raise ArgumentTypeError(f"a descriptor is bytes, not {type(data).__name__}",
                                fix="pass the descriptor's wire bytes (t.descriptor_bytes)."
                                ) from None


def _decode_whole(data: Data, permissive: bool = False) -> TensorDescriptor:
    desc, used = decode_descriptor_prefix(data, 0, permissive=permissive)
    if used != len(data):
        fail(f"{len(data) - used} bytes follow the {used}-byte descriptor", "descriptor_length",
             used, "pass exactly one descriptor, or use decode_descriptor_prefix.")
    return desc


# Strict decodes of small descriptors are memoised by their bytes: a server and its clients
# decode the same few descriptors on every request, and a TensorDescriptor is immutable.
# Bounded (entries and bytes per entry); a descriptor that fails to decode is never stored.
_MEMO_BYTES = 2048
_decode_memo = functools.lru_cache(maxsize=256)(_decode_whole)


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
