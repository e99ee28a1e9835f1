"""The immutable TensorDescriptor value (Hurray spec, Metadata) and its convenience constructors."""

from __future__ import annotations

from dataclasses import dataclass

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.dtypes import DType, buffer_size, by_name, by_tag

from .buffers import DEVICE_ALIGNMENT, MIN_DATA_ALIGNMENT, BufferHandle, DeviceTag, MemoryClass
from .layouts import ColMajor, Composite, Layout, RowMajor, UnknownLayout
from .quant import Quantization
from .sections import CompositeMember, ExtensionType, Shard, Statistics
from .sizes import BufferSpec, layout_specs, prod, quant_specs

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
        from .layouts import Extension
        from .quant import RawQuantization

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
        from .codec import encode_descriptor

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
        from .validate import validate_descriptor

        validate_descriptor(desc, permissive=False)
        return desc
