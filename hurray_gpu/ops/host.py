"""Layout conversions that run on the host: ``relayout`` (row-major to another dense layout),
``sparsify`` (to COO/CSR/CSC/CSF) and ``element`` (one element through any layout's index
structures).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_gpu.errors import ArgumentTypeError, HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.addressing import (
    block_paged_lookup,
    dense_offsets,
    element_offsets,
    offset_range,
)
from hurray_gpu.format.descriptor import BufferHandle, TensorDescriptor
from hurray_gpu.format.descriptor.layouts import (
    COO,
    CSC,
    CSF,
    CSR,
    DENSE_TAGS,
    BlockPaged,
    RowMajor,
)
from hurray_gpu.format.packing import unpack
from hurray_gpu.ops.dequantize import dequantize
from hurray_gpu.ops.layout_plan import codes_at, pack_codes
from hurray_gpu.ops.plan import moved_params
from hurray_gpu.parts import assemble, is_tensor, not_a_tensor

__all__ = ["element", "lookup_offset", "relayout", "sparsify"]


def _u64_entries(buf: Any, field: str) -> np.ndarray:
    raw = np.asarray(buf, np.uint8)
    if raw.size % 8:
        raise HurrayFormatError(f"{field} is not a whole number of u64 entries", field=field,
                                fix="index buffers hold little-endian u64 values.")
    return raw.view("<u8").astype(np.uint64)


def _find(sorted_vals: np.ndarray, lo: int, hi: int, key: int) -> int | None:
    """Position of ``key`` in ``sorted_vals[lo:hi]`` by binary search, or None."""
    if not 0 <= lo <= hi <= sorted_vals.size:
        raise HurrayFormatError(f"pointer range [{lo}, {hi}) is outside the index array",
                                field="ptr", fix="repair the pointer array.")
    at = lo + int(np.searchsorted(sorted_vals[lo:hi], np.uint64(key)))
    return at if at < hi and int(sorted_vals[at]) == key else None


def _coo(t: Any, idx: np.ndarray) -> int | None:
    rank = idx.size
    coords = _u64_entries(t.buffers[1], "indices").reshape(-1, rank)
    if t.descriptor.layout.is_sorted:
        lo, hi = 0, coords.shape[0]
        for d in range(rank):  # narrow the lexicographic range one dimension at a time
            col = coords[lo:hi, d]
            lo, hi = (lo + int(np.searchsorted(col, idx[d], "left")),
                      lo + int(np.searchsorted(col, idx[d], "right")))
        return lo if hi > lo else None
    hits = np.flatnonzero((coords == idx.astype(np.uint64)).all(1))
    return int(hits[0]) if hits.size else None


def _compressed(t: Any, idx: np.ndarray, major: int) -> int | None:
    minor = _u64_entries(t.buffers[1], "indices")
    ptr = _u64_entries(t.buffers[2], "ptr")
    m = int(idx[major])
    if m + 1 >= ptr.size:
        raise HurrayFormatError("the pointer array is too short", field="ptr",
                                fix="write shape[major] + 1 pointer entries.")
    return _find(minor, int(ptr[m]), int(ptr[m + 1]), int(idx[1 - major]))


def _csf(t: Any, idx: np.ndarray) -> int | None:
    modes = t.descriptor.layout.mode_order
    node = 0
    for level, mode in enumerate(modes):
        pos = _u64_entries(t.buffers[2 * level + 1], f"pos_{level}")
        crd = _u64_entries(t.buffers[2 * level + 2], f"crd_{level}")
        if node + 1 >= pos.size:
            raise HurrayFormatError(f"pos_{level} is too short", field=f"pos_{level}",
                                    fix="repair the CSF pos arrays.")
        found = _find(crd, int(pos[node]), int(pos[node + 1]), int(idx[mode]))
        if found is None:
            return None
        node = found
    return node


def lookup_offset(t: Any, idx: np.ndarray, seq_lens: Sequence[int] | None
                  ) -> tuple[Any, int, int] | None:
    """(buffer, byte_offset, element offset) of ``idx`` in a sparse/paged host tensor, or None
    for an implicit zero.

    Raises:
        HurrayFormatError: malformed index buffers.
    """
    layout = t.descriptor.layout
    if isinstance(layout, COO):
        at = _coo(t, idx)
    elif isinstance(layout, (CSR, CSC)):
        at = _compressed(t, idx, 0 if isinstance(layout, CSR) else 1)
    elif isinstance(layout, CSF):
        at = _csf(t, idx)
    elif isinstance(layout, BlockPaged):
        _, heads, dim = (int(d) for d in t.descriptor.shape)
        bt = _u64_entries(t.buffers[1], "block_table") if layout.block_table_index_type else \
            np.asarray(t.buffers[1], np.uint8).view("<u4")
        sp = _u64_entries(t.buffers[2], "seq_ptr") if layout.block_table_index_type else \
            np.asarray(t.buffers[2], np.uint8).view("<u4")
        lens = (np.diff(sp.astype(np.int64)) * layout.page_size if seq_lens is None
                else np.asarray(seq_lens, np.int64))
        starts = np.concatenate([[0], np.cumsum(lens)])
        seq = max(int(np.searchsorted(starts, idx[0], "right")) - 1, 0)
        flat = block_paged_lookup(bt, sp, layout.page_size, heads, dim, seq,
                                  idx[0] - starts[min(seq, starts.size - 1)], idx[1], idx[2],
                                  num_pages=layout.num_pages, seq_lens=seq_lens)
        return t.buffers[0], t.descriptor.byte_offset, int(np.asarray(flat).reshape(-1)[0])
    else:
        raise HurrayFormatError(f"layout 0x{t.descriptor.layout_tag:02X} has no lookup",
                                field="layout_tag", fix="use a dense, sparse or paged layout.")
    return None if at is None else (t.buffers[0], 0, at)


def _on_host(t: Any, what: str) -> Any:
    if not is_tensor(t):
        raise not_a_tensor(t, what)
    return t.to("cpu")


def _host_row_major(t: Any, what: str) -> tuple[Any, np.ndarray, tuple[int, ...]]:
    """(host tensor, row-major codes, shape) of a row-major tensor on any device."""
    host = _on_host(t, what)
    desc = host.descriptor
    if not isinstance(desc.layout, RowMajor):
        raise UnsupportedOpError(f"{host!r} is not row-major",
                                 fix="materialize() it to row-major first.")
    dims = tuple(int(d) for d in desc.shape)
    offs = np.arange(math.prod(dims), dtype=np.int64)
    return host, codes_at(host.buffers[0], desc.dtype, offs, desc.byte_offset), dims


def relayout(t: Any, layout: Any) -> Any:
    """Re-store a row-major tensor in a dense ``layout`` (quantization parameters kept).

    Args:
        t: a row-major Tensor (any device; the conversion runs on the host).
        layout: ColMajor, Strided, Tiled, Morton or Hilbert (any dense layout object).

    Returns:
        A Tensor on ``t``'s device whose buffer 0 stores the same elements in ``layout``
        (padding elements are zero; negative strides get a ``byte_offset``).

    Raises:
        HurrayFormatError: a layout invalid for the shape.
        UnsupportedOpError: ``t`` is not row-major.
    """
    host, codes, dims = _host_row_major(t, "hg.relayout")
    if getattr(layout, "TAG", None) not in DENSE_TAGS:
        raise ArgumentTypeError(f"relayout() takes a dense layout object, not {layout!r}",
                                fix="pass ColMajor(), Strided(...), Tiled(...), Morton(...) or "
                                    "Hilbert(...) from hurray_gpu.format.descriptor.")
    desc, dtype = host.descriptor, host.descriptor.dtype
    lo, hi = offset_range(layout, dims)
    per = {1: 8, 2: 4, 4: 2, 6: 4}.get(dtype.bits, 1)
    shift = -(-max(-lo, 0) // per) * per  # keep byte_offset on a packing-group boundary
    storage = np.zeros((shift + hi + 1, *codes.shape[1:]), np.uint8)
    probe = dataclasses.replace(desc, layout=layout)
    storage[dense_offsets(probe).reshape(-1) + shift] = codes
    data = pack_codes(storage, dtype)
    handle = dataclasses.replace(desc.buffers[0], byte_size=int(data.size))
    new = dataclasses.replace(desc, layout=layout, byte_offset=shift * dtype.bits // 8,
                              buffers=(handle, *desc.buffers[1:]))
    out = assemble(new, [data, *host.buffers[1:]])
    return out.to(t.device, memory_class=t.memory_class)


def _u64(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype="<u8").view(np.uint8)


def _sparse_parts(fmt: str, coords: np.ndarray, dims: tuple[int, ...],
                  mode_order: Sequence[int] | None) -> tuple[Any, np.ndarray, list[np.ndarray]]:
    """(layout, value order, index buffers) for nonzero ``coords`` [nnz, rank] (row-major)."""
    nnz = coords.shape[0]
    if fmt == "coo":
        return COO(nnz, 1), np.arange(nnz), [_u64(coords.reshape(-1))]
    if fmt in ("csr", "csc"):
        if len(dims) != 2:
            raise UnsupportedOpError(f"{fmt} needs rank 2", fix="use coo or csf.")
        major = 0 if fmt == "csr" else 1
        order = np.lexsort((coords[:, 1 - major], coords[:, major]))
        ptr = np.zeros(dims[major] + 1, np.int64)
        np.add.at(ptr, coords[order, major] + 1, 1)
        layout = CSR(nnz) if fmt == "csr" else CSC(nnz)
        return layout, order, [_u64(coords[order, 1 - major]), _u64(np.cumsum(ptr))]
    if fmt != "csf":
        raise UnsupportedOpError(f"unknown sparse format {fmt!r}",
                                 fix="use 'coo', 'csr', 'csc' or 'csf'.")
    modes = list(mode_order) if mode_order is not None else list(range(len(dims)))
    order = np.lexsort(tuple(coords[:, m] for m in reversed(modes)))
    perm = coords[order][:, modes]
    bufs: list[np.ndarray] = []
    parent_ids = np.zeros(nnz, np.int64)
    parents = 1
    for level in range(len(modes)):
        key = np.concatenate([parent_ids[:, None], perm[:, level: level + 1]], 1)
        new = np.ones(nnz, bool)
        new[1:] = (key[1:] != key[:-1]).any(1)
        ids = np.cumsum(new) - 1
        pos = np.zeros(parents + 1, np.int64)
        np.add.at(pos, parent_ids[new] + 1, 1)
        bufs += [_u64(np.cumsum(pos)), _u64(perm[new, level])]
        parent_ids, parents = ids, int(new.sum())
    return CSF(nnz, tuple(modes)), order, bufs


def sparsify(t: Any, fmt: str, *, mode_order: Sequence[int] | None = None,
             keep: Any = None) -> Any:
    """Build a sparse tensor holding the nonzero (or the chosen) elements of ``t``.

    By default unquantized tensors keep their nonzero codes and quantized ones the codes of
    the elements whose dequantized value is nonzero. Quantized tensors keep their parameter
    buffers verbatim after the layout's index buffers: every stored code keeps the parameters
    of its coordinate.

    Args:
        t: a row-major Tensor (any device; built on the host).
        fmt: ``"coo"`` (sorted), ``"csr"``, ``"csc"`` or ``"csf"`` (rank >= 3).
        mode_order: CSF only: the dimension stored at each level (default 0..rank-1).
        keep: a boolean array of ``t``'s shape selecting the elements to store (explicit
            zeros included), e.g. a quantized base's outliers; default: the nonzero ones.

    Returns:
        The sparse Tensor on ``t``'s device.

    Raises:
        UnsupportedOpError: a non-row-major tensor, or a bad format/rank.
        HurrayFormatError: the result breaks a rule of the spec (e.g. a bad mode_order).
    """
    host, codes, dims = _host_row_major(t, "hg.sparsify")
    desc = host.descriptor
    if keep is not None:
        mask = np.asarray(keep)
        if mask.dtype != np.bool_ or mask.shape != dims:
            raise UnsupportedOpError(f"keep must be a bool array of shape {dims}",
                                     fix="pass a boolean mask of the tensor's shape.")
        nonzero = np.flatnonzero(mask.reshape(-1))
    elif desc.quantization is None:
        nonzero = np.flatnonzero(codes.reshape(codes.shape[0], -1).any(1))
    else:

        nonzero = np.flatnonzero(dequantize(host).numpy().reshape(-1) != 0)
    coords = np.stack(np.unravel_index(nonzero, dims), 1).astype(np.int64) if dims else \
        np.zeros((nonzero.size, 0), np.int64)
    layout, order, index_bufs = _sparse_parts(fmt, coords, dims, mode_order)
    values = pack_codes(codes[nonzero[order]], desc.dtype)
    bufs = [values, *index_bufs]
    quant = desc.quantization
    if quant is not None:
        quant, params = moved_params(quant, len(bufs))
        bufs += [np.asarray(host.buffers[i], np.uint8) for i in params]
    handles = tuple(BufferHandle(int(b.size), 64) for b in bufs)
    new = TensorDescriptor(desc.dtype, dims, layout, handles, quantization=quant)
    return assemble(new, bufs).to(t.device, memory_class=t.memory_class)


def element(t: Any, index: Sequence[int], *, seq_lens: Sequence[int] | None = None) -> Any:
    """One logical element of ``t`` (storage value; quantized tensors are not dequantized).

    Uses the layout's own addressing: the offset formulas for dense layouts, binary search
    in sorted COO/CSR/CSC/CSF index arrays, and the block table for block-paged tensors.

    Args:
        t: a Tensor (any device; its buffers are read on the host).
        index: one index per dimension.
        seq_lens: block-paged only (see :func:`~hurray_gpu.ops.materialize.materialize`).

    Returns:
        A NumPy scalar of the storage type (zero for an implicit sparse element).

    Raises:
        HurrayFormatError: an index out of range or malformed index buffers.
        UnsupportedOpError: composite heads and types without a NumPy dtype.
    """
    host = _on_host(t, "hg.element")
    desc = host.descriptor
    if desc.layout_tag == 0x0B:
        raise UnsupportedOpError("a composite head has no elements of its own",
                                 fix="call element() on its members.")
    idx = np.asarray([int(i) for i in index], np.int64)
    dims = tuple(int(d) for d in desc.shape)
    if idx.size != len(dims) or (idx < 0).any() or (idx >= np.asarray(dims)).any():
        raise HurrayFormatError(f"index {tuple(index)} is outside shape {dims}", field="index",
                                fix="pass one in-range index per dimension.")
    off: int
    if desc.layout_tag in (0x01, 0x02, 0x03, 0x04, 0x05, 0x40):
        buf, boff = host.buffers[0], desc.byte_offset
        off = int(element_offsets(desc, None, idx))
    else:
        found = lookup_offset(host, idx, seq_lens)
        if found is None:
            return np.zeros(1, desc.dtype.numpy)[0]
        buf, boff, off = found
    code = codes_at(buf, desc.dtype, np.asarray([off], np.int64), boff)

    return unpack(pack_codes(code, desc.dtype), desc.dtype, 1)[0]
