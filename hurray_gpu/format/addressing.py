"""NumPy reference for Hurray dense-layout addressing (Hurray spec, Memory Layout): the oracle of
the layout-conversion kernels. Sparse and paged references live in addressing_sparse/_paged.

Offsets are logical element offsets relative to ``byte_offset`` (they may be negative for
strided layouts). To turn an offset ``off`` into a byte position, see ``byte_positions``:
whole-byte types: ``byte = byte_offset + off * bits/8``; 1/2/4-bit types with P = 8/bits
elements per byte: ``byte = byte_offset + off // P`` and ``bit = (off % P) * bits`` (LSB-first);
6-bit types are addressed per 3-byte group: ``byte = byte_offset + (off // 4) * 3`` and the
element is bits ``[6*(off % 4), 6*(off % 4) + 6)`` of the little-endian 24-bit group word.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.descriptor.layouts import (
    MAX_TILED_DEPTH,
    ColMajor,
    Hilbert,
    Layout,
    Morton,
    RowMajor,
    Strided,
    Tiled,
)
from hurray_gpu.format.descriptor.model import TensorDescriptor
from hurray_gpu.format.dtypes import DType

from .addressing_checks import (
    INT64_MAX,
    MAX_DENSE_ELEMENTS,
    as_index_array,
    check_dense_shape,
    fail,
    static_shape,
)
from .addressing_curves import hilbert_coords, hilbert_index, morton_code
from .addressing_paged import block_paged_lookup, block_paged_to_dense
from .addressing_sparse import coo_to_dense, csc_to_dense, csf_to_dense, csr_to_dense

__all__ = [
    "MAX_DENSE_ELEMENTS", "block_paged_lookup", "block_paged_to_dense", "byte_positions",
    "coo_to_dense", "csc_to_dense", "csf_to_dense", "csr_to_dense", "dense_offsets",
    "element_offsets", "hilbert_coords", "hilbert_index", "morton_code", "offset_range",
    "storage_elements",
]

DenseLayout = RowMajor | ColMajor | Strided | Tiled | Morton | Hilbert
_INT64_MIN = -(1 << 63)


def _resolve(source: TensorDescriptor | Layout,
             shape: Sequence[int | None] | None) -> tuple[DenseLayout, tuple[int, ...]]:
    if isinstance(source, TensorDescriptor):
        if shape is not None and tuple(shape) != tuple(source.shape):
            fail(f"shape {tuple(shape)} differs from the descriptor's {source.shape}", "shape",
                 "omit shape (None) or pass the descriptor's own shape.")
        layout, shape = source.layout, source.shape
    else:
        layout = source
        if shape is None:
            fail("shape is required with a bare layout", "shape",
                 "pass the tensor shape, or a TensorDescriptor.")
    if not isinstance(layout, (RowMajor, ColMajor, Strided, Tiled, Morton, Hilbert)):
        raise UnsupportedOpError(
            f"layout {type(layout).__name__} (tag 0x{layout.TAG:02X}) has no element-offset "
            "formula", fix="use coo/csr/csc/csf_to_dense or block_paged_lookup for sparse and "
            "paged layouts; private layouts need an out-of-band agreement.")
    dims = static_shape(shape)
    _check_layout(layout, dims)
    return layout, dims


def _check_i64s(values: Sequence[int], field: str, rank: int, *, positive: bool) -> None:
    if len(values) != rank:
        fail(f"{field} has {len(values)} entries for rank {rank}", field,
             f"write exactly one {field} entry per dimension.")
    for k, v in enumerate(values):
        lo = 1 if positive else _INT64_MIN
        if not lo <= v <= INT64_MAX:
            fail(f"{field}[{k}] = {v} is outside [{lo}, 2**63)", field,
                 f"use {field} entries that fit a signed 64-bit integer"
                 + (" and are >= 1." if positive else "."))


def _tiled_chain(t: Tiled, rank: int) -> list[Tiled]:
    chain: list[Tiled] = []
    node: Tiled | None = t
    while node is not None:
        if len(chain) == MAX_TILED_DEPTH:
            fail(f"tiled layout nests deeper than {MAX_TILED_DEPTH} blocks", "inner_layout",
                 "flatten the tiling to at most 8 tiled blocks (top level + 7 nested).")
        _check_i64s(node.tile_shape, "tile_shape", rank, positive=True)
        if int(np.prod(node.tile_shape, dtype=object)) > INT64_MAX:
            fail(f"tile {node.tile_shape} holds more than 2**63-1 elements", "tile_shape",
                 "use tiles whose element count fits a signed 64-bit integer.")
        if node.outer_layout not in (1, 2, 3) or node.inner_layout not in (1, 2, 3, 4):
            fail(f"tiled outer/inner layout 0x{node.outer_layout:02X}/0x"
                 f"{node.inner_layout:02X} is invalid", "outer_layout",
                 "outer must be 0x01-0x03 and inner 0x01-0x04.")
        if node.outer_layout == 3:
            _check_i64s(node.outer_strides, "outer_strides", rank, positive=False)
        if node.inner_layout == 3:
            _check_i64s(node.inner_strides, "inner_strides", rank, positive=False)
        if (node.inner_layout == 4) != (node.inner is not None):
            fail("inner_layout 0x04 and the nested tiled block must come together",
                 "inner_layout", "set inner_layout = 0x04 exactly when a nested block follows.")
        if node.inner is not None and not isinstance(node.inner, Tiled):
            fail(f"nested block is {type(node.inner).__name__}, not Tiled", "inner_layout",
                 "a nested inner layout must be a full tiled block.")
        chain.append(node)
        node = node.inner
    return chain


def _check_layout(layout: DenseLayout, dims: tuple[int, ...]) -> None:
    rank = len(dims)
    if rank == 0 and not isinstance(layout, RowMajor):
        fail(f"{type(layout).__name__} layout on a scalar", "rank",
             "scalars must be row-major (hurray data-model: Scalar Tensors).")
    if isinstance(layout, Strided):
        _check_i64s(layout.strides, "strides", rank, positive=False)
    elif isinstance(layout, Tiled):
        _tiled_chain(layout, rank)
    elif isinstance(layout, Morton):
        _check_i64s(layout.bits, "morton_bits", rank, positive=True)
        for k, (n, b) in enumerate(zip(dims, layout.bits, strict=True)):
            if b < 64 and n > 1 << b:
                fail(f"shape[{k}] = {n} exceeds 2**morton_bits[{k}] = {1 << b}",
                     "morton_bits", "raise morton_bits[k] to ceil(log2(shape[k])).")
    elif isinstance(layout, Hilbert):
        if layout.hilbert_rank != rank or rank < 2 or not 1 <= layout.order <= 63:
            fail(f"Hilbert order {layout.order}, hilbert_rank {layout.hilbert_rank} do not "
                 f"fit rank {rank}", "hilbert_rank",
                 "write hilbert_rank = rank >= 2 and 1 <= hilbert_order <= 63.")
        for k, n in enumerate(dims):
            if n != 1 << layout.order:
                fail(f"shape[{k}] = {n} is not 2**hilbert_order = {1 << layout.order}",
                     "hilbert_order", "Hilbert layouts need every dimension equal 2**order.")


def _implicit_strides(dims: Sequence[int], col_major: bool) -> list[int]:
    strides = [0] * len(dims)
    acc = 1
    order = range(len(dims)) if col_major else range(len(dims) - 1, -1, -1)
    for k in order:
        # An extent-1 dimension only ever sees index 0; a zero stride keeps int64 in range.
        strides[k] = acc if dims[k] > 1 else 0
        acc *= dims[k]
    return strides


def _simple_strides(tag: int, dims: Sequence[int], explicit: Sequence[int]) -> list[int]:
    """Strides of a row-major (0x01), col-major (0x02) or strided (0x03) sub-layout."""
    return list(explicit) if tag == 3 else _implicit_strides(dims, tag == 2)


def _strided_range(dims: Sequence[int], strides: Sequence[int]) -> tuple[int, int]:
    lo = sum(min(0, s * (n - 1)) for n, s in zip(dims, strides, strict=True))
    hi = sum(max(0, s * (n - 1)) for n, s in zip(dims, strides, strict=True))
    return lo, hi


def _tile_grid(dims: Sequence[int], tile: Sequence[int]) -> list[int]:
    return [-(-n // t) for n, t in zip(dims, tile, strict=True)]


def _tiled_range(t: Tiled, dims: Sequence[int]) -> tuple[int, int]:
    grid = _tile_grid(dims, t.tile_shape)
    elems = int(np.prod(t.tile_shape, dtype=object))
    olo, ohi = _strided_range(grid, _simple_strides(t.outer_layout, grid, t.outer_strides))
    if t.inner is not None:
        ilo, ihi = _tiled_range(t.inner, t.tile_shape)
    else:
        ilo, ihi = _strided_range(t.tile_shape, _simple_strides(
            t.inner_layout, t.tile_shape, t.inner_strides))
    return olo * elems + ilo, ohi * elems + ihi


def _morton_max(bits: Sequence[int]) -> int:
    rank = len(bits)
    top = max((b - 1) * rank + d for d, b in enumerate(bits))
    if top >= 63:
        fail(f"Morton code bit {top} does not fit a 63-bit offset", "morton_bits",
             "use fewer Morton bits (every code must stay below 2**63).")
    return sum(_spread((1 << b) - 1, rank, d) for d, b in enumerate(bits))


def _spread(value: int, rank: int, d: int) -> int:
    out, b = 0, 0
    while value >> b:
        out |= ((value >> b) & 1) << (b * rank + d)
        b += 1
    return out


def offset_range(source: TensorDescriptor | Layout,
                 shape: Sequence[int | None] | None = None) -> tuple[int, int]:
    """Inclusive (min, max) element offset the data buffer must cover; (0, -1) if empty.

    Whole tiles (tiled) and the full Morton code space (max code over ``morton_bits``,
    docs/format.md, Descriptor decoding) are covered, so ``max`` may exceed the largest offset
    of a valid element.

    Args:
        source: a TensorDescriptor, or a dense layout object (then ``shape`` is required).
        shape: the logical shape (must match the descriptor's when both are given).

    Returns:
        ``(lo, hi)`` as Python ints.

    Raises:
        HurrayFormatError: invalid layout fields, dynamic shape, or offsets beyond int64.
        UnsupportedOpError: for sparse, paged, composite or private layouts.
    """
    layout, dims = _resolve(source, shape)
    if 0 in dims:
        return (0, -1)
    if isinstance(layout, Strided):
        lo, hi = _strided_range(dims, layout.strides)
    elif isinstance(layout, Tiled):
        lo, hi = _tiled_range(layout, dims)
    elif isinstance(layout, Morton):
        lo, hi = 0, _morton_max(layout.bits)
    else:
        lo, hi = 0, int(np.prod(dims, dtype=object)) - 1
    if lo < _INT64_MIN or hi > INT64_MAX:
        fail(f"element offsets span [{lo}, {hi}], beyond signed 64-bit", "layout",
             "use strides/tiles whose offsets fit a signed 64-bit integer.")
    return lo, hi


def storage_elements(source: TensorDescriptor | Layout,
                     shape: Sequence[int | None] | None = None) -> int:
    """Elements the data buffer must hold: ``hi - lo + 1`` of ``offset_range`` (0 if empty).

    Row/col-major and Hilbert: prod(shape); strided: the spec's range_elements; tiled:
    prod(ceil(shape/t)) * prod(t) for row/col sub-layouts (strided sub-layouts use their range);
    Morton: max code + 1, which is 2**sum(bits) when all bits are equal.
    Agrees with ``TensorDescriptor.required_buffer_sizes`` (descriptor/sizes.py).

    Raises:
        HurrayFormatError, UnsupportedOpError: as ``offset_range``.
    """
    lo, hi = offset_range(source, shape)
    return hi - lo + 1


def _indices(idx: object, dims: tuple[int, ...]) -> np.ndarray:
    x = as_index_array(idx, "indices")
    rank = len(dims)
    if x.ndim == 0 or x.shape[-1] != rank:
        fail(f"indices has shape {x.shape}; the last axis must be the rank {rank}", "indices",
             f"pass indices as an integer array of shape [..., {rank}].")
    for k, n in enumerate(dims):
        col = x[..., k].reshape(-1)
        bad = np.flatnonzero(col >= n)
        if bad.size:
            fail(f"indices[{int(bad[0])}, {k}] = {int(col[bad[0]])} is out of range for "
                 f"shape[{k}] = {n}", "indices", f"every index along dimension {k} must be "
                 f"< {n}.")
    return x


def _affine(x: np.ndarray, strides: Sequence[int]) -> np.ndarray:
    out = np.zeros(x.shape[:-1], dtype=np.int64)
    for k, s in enumerate(strides):
        out += x[..., k] * np.int64(s)
    return out


def _tiled_offsets(t: Tiled, dims: Sequence[int], x: np.ndarray) -> np.ndarray:
    out = np.zeros(x.shape[:-1], dtype=np.int64)
    node: Tiled | None = t
    cur: Sequence[int] = dims
    last = t
    while node is not None:
        tile = np.asarray(node.tile_shape, dtype=np.int64)
        grid = _tile_grid(cur, node.tile_shape)
        elems = int(np.prod(node.tile_shape, dtype=object))
        outer = _affine(x // tile, _simple_strides(node.outer_layout, grid, node.outer_strides))
        out += outer * np.int64(elems)
        x, cur, last, node = x % tile, node.tile_shape, node, node.inner
    inner = _simple_strides(last.inner_layout, last.tile_shape, last.inner_strides)
    return out + _affine(x, inner)


def element_offsets(source: TensorDescriptor | Layout, shape: Sequence[int | None] | None,
                    indices: object) -> np.ndarray:
    """Logical element offset (relative to ``byte_offset``) of each multi-index.

    Args:
        source: a TensorDescriptor, or a dense layout object (RowMajor, ColMajor, Strided,
            Tiled, Morton, Hilbert).
        shape: the logical shape; may be None when ``source`` is a descriptor.
        indices: integer array [..., rank]; every index must lie inside ``shape``.

    Returns:
        int64 array [...] of offsets (see the module docstring for bytes and bits).

    Raises:
        HurrayFormatError: invalid layout fields for the shape, a dynamic shape, an
            out-of-range index or offsets beyond int64.
        UnsupportedOpError: for sparse, paged, composite or private layouts.
    """
    layout, dims = _resolve(source, shape)
    x = _indices(indices, dims)
    if x.size == 0:
        return np.zeros(x.shape[:-1], dtype=np.int64)
    offset_range(layout, dims)  # rejects offsets that would overflow int64
    if isinstance(layout, (RowMajor, ColMajor)):
        return _affine(x, _implicit_strides(dims, isinstance(layout, ColMajor)))
    if isinstance(layout, Strided):
        return _affine(x, layout.strides)
    if isinstance(layout, Tiled):
        return _tiled_offsets(layout, dims, x)
    if isinstance(layout, Morton):
        return morton_code(x, layout.bits)
    return hilbert_index(x, layout.order, layout.hilbert_rank)


def dense_offsets(descriptor: TensorDescriptor, *,
                  max_elements: int = MAX_DENSE_ELEMENTS) -> np.ndarray:
    """Every element's offset, shaped like the tensor: the layout-conversion gather map.

    ``row_major_out.flat[i] = data[offsets.flat[i]]`` (offsets in elements, relative to
    ``byte_offset``).

    Args:
        descriptor: a dense TensorDescriptor with a static shape.
        max_elements: refuse tensors with more elements (checked before allocating).

    Returns:
        int64 array of shape ``descriptor.shape``.

    Raises:
        HurrayFormatError, UnsupportedOpError: as ``element_offsets``; also when the tensor has
            more than ``max_elements`` elements.
    """
    layout, dims = _resolve(descriptor, None)
    if check_dense_shape(dims, max_elements) == 0:
        return np.zeros(dims, dtype=np.int64)
    if isinstance(layout, Hilbert):
        grid = np.indices(dims, dtype=np.int64)
        return element_offsets(layout, dims, np.moveaxis(grid, 0, -1))
    # Every other dense layout is additively separable: off(i) = sum_k off(i_k e_k).
    out = np.zeros(dims, dtype=np.int64)
    rank = len(dims)
    for k, n in enumerate(dims):
        axis = np.zeros((n, rank), dtype=np.int64)
        axis[:, k] = np.arange(n, dtype=np.int64)
        part = element_offsets(layout, dims, axis)
        out += part.reshape([n if j == k else 1 for j in range(rank)])
    return out


def byte_positions(dtype: DType, offsets: object, byte_offset: int = 0
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Byte and bit position of element offsets (Hurray spec, Memory Layout: Sub-Byte Types).

    Args:
        dtype: the element type (bits >= 8, 1/2/4, or 6).
        offsets: integer array of element offsets (may be negative for strided layouts).
        byte_offset: the descriptor's byte_offset (a byte boundary for sub-byte types).

    Returns:
        ``(byte, bit)`` int64 arrays: whole-byte types: bit is 0; 1/2/4-bit: the LSB-first
        bit inside ``byte``; 6-bit: ``byte`` is the start of the 3-byte group and ``bit`` the
        element's position inside the little-endian 24-bit group word.

    Raises:
        HurrayFormatError: for a type with no fixed bit width (private/unknown).
    """
    off = as_index_array(offsets, "offsets", allow_negative=True)
    bits = dtype.bits
    if bits == 0:
        fail(f"type {dtype} has no fixed bit width", "type_tag",
             "private types need the extension section's bit_width.")
    if bits >= 8:
        return np.int64(byte_offset) + off * np.int64(bits // 8), np.zeros_like(off)
    if bits == 6:
        return np.int64(byte_offset) + (off // 4) * 3, (off % 4) * 6
    per = 8 // bits
    return np.int64(byte_offset) + off // per, (off % per) * bits
