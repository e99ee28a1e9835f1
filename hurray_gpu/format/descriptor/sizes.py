"""Required buffer sizes per layout and quantization scheme (docs/format.md, Buffer sizes).

Sizes are never computed through a dynamic dimension (None in the shape): the result is then None.
"""

from __future__ import annotations

from dataclasses import dataclass

from hurray_gpu.format.dtypes import DType, buffer_size, extension_buffer_size

from .layouts import (
    COO,
    CSC,
    CSF,
    CSR,
    BlockPaged,
    ColMajor,
    Hilbert,
    Layout,
    Morton,
    RowMajor,
    Strided,
    Tiled,
)
from .quant import MXFP, NF4, SCALE_TYPE_SIZES, PerBlockAffine, PerChannelAffine, Quantization
from .sections import ExtensionType

# Any requirement above this cannot be met by a u64 byte_size; avoids astronomically big ints.
TOO_BIG = 1 << 80
Shape = tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class BufferSpec:
    """What one buffer-table entry holds and how big it must be.

    Attributes:
        index: position in the buffer table.
        role: ``"data"`` (dense), ``"values"``, ``"indices"``, ``"col_indices"``, ``"row_ptr"``,
            ``"row_indices"``, ``"col_ptr"``, ``"pos_<L>"``, ``"crd_<L>"``, ``"page_pool"``,
            ``"block_table"``, ``"seq_ptr"``, ``"scales"``, ``"zero_points"``,
            ``"scales+zero_points"`` (shared buffer) or ``"opaque"`` (private layout or
            unrecognised scheme).
        min_size: the minimum byte_size (``byte_offset`` included for the data buffer), or None
            when it depends on buffer contents or a dynamic dimension.
        exact: True when byte_size must equal ``min_size`` exactly (unshared scale and
            zero-point buffers).
    """

    index: int
    role: str
    min_size: int | None
    exact: bool = False


def prod(values: Shape) -> int | None:
    """Product of ``values``; None if any is dynamic (None)."""
    out = 1
    for v in values:
        if v is None:
            return None
        out *= v
    return out


def nbytes(dtype: DType, ext: ExtensionType | None, n: int | None) -> int | None:
    """Bytes for ``n`` contiguous elements of ``dtype``; None when unknowable."""
    if n is None or dtype.unknown:
        return None
    if n >= TOO_BIG:
        return TOO_BIG
    if dtype.private:
        return None if ext is None else extension_buffer_size(ext.bit_width, n)
    return buffer_size(dtype, n)


def byte_floor(dtype: DType, ext: ExtensionType | None, off: int) -> int | None:
    """Byte position (relative to byte_offset) of element offset ``off`` (may be negative)."""
    bits = ext.bit_width if dtype.private and ext is not None else dtype.bits
    if bits == 0:
        return None
    if bits == 6:
        return (off // 4) * 3
    return (off * bits) // 8


def _strided_range(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    lo = hi = 0
    for n, s in zip(shape, strides, strict=False):
        span = s * (n - 1)
        lo, hi = (lo + span, hi) if span < 0 else (lo, hi + span)
    return lo, hi


def _tiled_range(t: Tiled, shape: tuple[int, ...]) -> tuple[int, int]:
    grid = tuple(-(-n // k) for n, k in zip(shape, t.tile_shape, strict=False))
    tile_elems = prod(t.tile_shape) or 0
    if t.outer_layout == 0x03:
        olo, ohi = _strided_range(grid, t.outer_strides)
    else:
        olo, ohi = 0, (prod(grid) or 0) - 1
    if t.inner_layout == 0x03:
        ilo, ihi = _strided_range(t.tile_shape, t.inner_strides)
    elif t.inner_layout == 0x04 and t.inner is not None:
        ilo, ihi = _tiled_range(t.inner, t.tile_shape)
    else:
        ilo, ihi = 0, tile_elems - 1
    return olo * tile_elems + ilo, ohi * tile_elems + ihi


def _morton_max_code(bits: tuple[int, ...]) -> int:
    r = len(bits)
    if max(bits) * r > 80:
        return TOO_BIG
    # sum over d of sum_{b<B_d} 2^(b*r+d) in closed form
    return sum((1 << d) * ((1 << (b * r)) - 1) // ((1 << r) - 1) for d, b in enumerate(bits))


def element_range(layout: Layout, shape: Shape) -> tuple[int, int] | None:
    """Inclusive (min, max) element offsets a dense layout touches; None if unknowable.

    Returns (0, -1) for an empty tensor.
    """
    count = prod(shape)
    if count is None:
        return None
    if count == 0:
        return (0, -1)
    dims = tuple(v for v in shape if v is not None)
    if isinstance(layout, (RowMajor, ColMajor, Hilbert)):
        return (0, count - 1)
    if isinstance(layout, Strided):
        return _strided_range(dims, layout.strides)
    if isinstance(layout, Tiled):
        return _tiled_range(layout, dims)
    if isinstance(layout, Morton):
        return (0, _morton_max_code(layout.bits))
    return None


def layout_specs(layout: Layout, shape: Shape, dtype: DType, ext: ExtensionType | None,
                 byte_offset: int) -> list[BufferSpec]:
    """The layout's own buffers (data/values first) with their minimum sizes."""
    rank = len(shape)
    if isinstance(layout, (COO, CSR, CSC, CSF)):
        nnz = layout.nnz
        specs = [BufferSpec(0, "values", nbytes(dtype, ext, nnz))]
        if isinstance(layout, COO):
            return [*specs, BufferSpec(1, "indices", _mul(nnz * rank, 8))]
        if isinstance(layout, CSF):
            for lvl in range(rank):
                pos = 16 if lvl == 0 else None
                crd = _mul(nnz, 8) if lvl == rank - 1 else None
                specs += [BufferSpec(2 * lvl + 1, f"pos_{lvl}", pos),
                          BufferSpec(2 * lvl + 2, f"crd_{lvl}", crd)]
            return specs
        names = ("col_indices", "row_ptr") if isinstance(layout, CSR) else ("row_indices",
                                                                            "col_ptr")
        dim = shape[0 if isinstance(layout, CSR) else 1] if rank == 2 else None
        ptr = None if dim is None else _mul(dim + 1, 8)
        return [*specs, BufferSpec(1, names[0], _mul(nnz, 8)), BufferSpec(2, names[1], ptr)]
    if isinstance(layout, BlockPaged):
        width = 8 if layout.block_table_index_type else 4
        heads = prod(shape[1:]) if rank == 3 else None
        slots = None if heads is None else layout.num_pages * layout.page_size * heads
        return [BufferSpec(0, "page_pool", nbytes(dtype, ext, slots)),
                BufferSpec(1, "block_table", None),
                BufferSpec(2, "seq_ptr", (layout.num_seqs + 1) * width)]
    rng = element_range(layout, shape)
    if rng is None:
        return [BufferSpec(0, "data" if layout.TAG < 0xF0 else "opaque", None)]
    end = nbytes(dtype, ext, rng[1] + 1)
    return [BufferSpec(0, "data", None if end is None else byte_offset + end)]


def _mul(a: int | None, b: int) -> int | None:
    return None if a is None else a * b


def scale_count(q: Quantization, shape: Shape, layout: Layout) -> int | None:
    """Entries in the scale (and zero-point) buffer (docs/format.md, Block counts)."""
    if not isinstance(q, (PerChannelAffine, PerBlockAffine, NF4, MXFP)):
        return 0
    if q.axis >= len(shape) or shape[q.axis] is None:
        return None
    s = shape[q.axis]
    assert s is not None
    if isinstance(q, PerChannelAffine):
        return s
    if isinstance(layout, BlockPaged) and isinstance(q, PerBlockAffine):
        return layout.num_pages * layout.page_size
    others = prod(shape[:q.axis] + shape[q.axis + 1:])
    if others is None:
        return None
    per_axis = s // q.block_size if isinstance(q, MXFP) else -(-s // q.block_size)
    return per_axis * others


def quant_specs(q: Quantization, shape: Shape, layout: Layout) -> list[BufferSpec]:
    """Parameter-buffer specs for ``q`` (empty for per-tensor)."""
    if not isinstance(q, (PerChannelAffine, PerBlockAffine, NF4, MXFP)):
        return []
    n = scale_count(q, shape, layout)
    if isinstance(q, (NF4, MXFP)):
        width = 4 if isinstance(q, NF4) else 1
        return [BufferSpec(q.scale_buffer_index, "scales", _mul(n, width), True)]
    width = SCALE_TYPE_SIZES.get(q.scale_type_tag, 4)
    zidx = q.zero_point_buffer_index
    if zidx is None:
        return [BufferSpec(q.scale_buffer_index, "scales", _mul(n, width), True)]
    if zidx == q.scale_buffer_index:
        return [BufferSpec(zidx, "scales+zero_points", _mul(n, width + 4))]
    return sorted([BufferSpec(q.scale_buffer_index, "scales", _mul(n, width), True),
                   BufferSpec(zidx, "zero_points", _mul(n, 4), True)], key=lambda s: s.index)
