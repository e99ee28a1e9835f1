"""Planning dense layout conversions: per-dimension records for ``layout_axis_table``, the mover
choice (word width or packed sub-byte) and every 32-bit and buffer-extent check before launch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.addressing import offset_range
from hurray_gpu.format.descriptor.layouts import ColMajor, Hilbert, Morton, Strided, Tiled
from hurray_gpu.kernels.layout import REC_WORDS, ref_axis_entries
from hurray_gpu.runtime.cache import LRUCache

__all__ = ["DensePlan", "U32_LIMIT", "dims_of", "plan_dense"]

# Kernels index with u32: element counts, word offsets and bit positions stay below this.
U32_LIMIT = 1 << 32
DENSE_TAGS = (0x01, 0x02, 0x03, 0x04, 0x05, 0x40)
_MASK = 0xFFFFFFFF


@dataclass
class DensePlan:
    """Everything a dense gather launch needs (host values only; no device state).

    Attributes:
        addr: ``"sep"`` (per-axis tables) or ``"hil"`` (Hilbert).
        mover: ``"u8"``, ``"u16"``, ``"u32"`` (words) or ``"packed"`` (sub-byte).
        shape: the logical shape; count: its element count.
        records: per-dimension u32 records (sep only).
        regions: ``(d0, nd, entries, base)`` for the x, y and z tables (sep only).
        scalars: the gather kernel's scalars.
        span: every computed offset ``so`` lies in ``[0, span)``.
        doff: the byte where ``so = 0`` lies in buffer 0.
        xcontig: sep only: neighbours along the last axis are mostly neighbours in storage.
    """

    addr: str
    mover: str
    shape: tuple[int, ...]
    count: int
    records: np.ndarray = field(default_factory=lambda: np.zeros(REC_WORDS, np.uint32))
    regions: list[tuple[int, int, int, int]] = field(default_factory=list)
    scalars: dict[str, int] = field(default_factory=dict)
    span: int = 0
    doff: int = 0
    xcontig: bool = False


def dims_of(desc: Any) -> tuple[int, ...]:
    """The static shape of ``desc``.

    Raises:
        UnsupportedOpError: a dynamic dimension, or more than 2**32-1 elements.
    """
    if desc.is_dynamic:
        raise UnsupportedOpError("the shape has a dynamic dimension",
                                 fix="resolve the dynamic dimension before materializing.")
    dims = tuple(int(d) for d in desc.shape)
    if math.prod(dims) >= U32_LIMIT:
        raise UnsupportedOpError(f"{math.prod(dims)} elements exceed the kernels' 32-bit "
                                 "indexing", fix="materialize the tensor in parts.")
    return dims


def _implicit(dims: tuple[int, ...], col: bool) -> list[int]:
    out, acc = [0] * len(dims), 1
    for k in (range(len(dims)) if col else range(len(dims) - 1, -1, -1)):
        out[k] = acc if dims[k] > 1 else 0
        acc *= dims[k]
    return out


def _sub_strides(tag: int, dims: tuple[int, ...], explicit: tuple[int, ...]) -> list[int]:
    return list(explicit) if tag == 3 else _implicit(dims, tag == 2)


def _affine_records(levels: list[list[tuple[int, int]]], final: list[int],
                    dims: tuple[int, ...]) -> np.ndarray:
    rec = np.zeros((max(len(dims), 1), REC_WORDS), np.uint32)
    for k, n in enumerate(dims):
        rec[k, 0], rec[k, 1], rec[k, 2] = n, 0, len(levels)
        rec[k, 3] = final[k] & _MASK
        for lev, per_dim in enumerate(levels):
            tile, stride = per_dim[k]
            rec[k, 4 + 2 * lev], rec[k, 5 + 2 * lev] = tile, stride & _MASK
    return rec


def _tiled_records(t: Tiled, dims: tuple[int, ...]) -> np.ndarray:
    levels: list[list[tuple[int, int]]] = []
    cur, last = dims, t
    node: Tiled | None = t
    while node is not None:
        tile = tuple(int(v) for v in node.tile_shape)
        grid = tuple(-(-n // s) for n, s in zip(cur, tile, strict=True))
        elems = math.prod(tile)
        outer = _sub_strides(node.outer_layout, grid, tuple(node.outer_strides))
        if any(v >= U32_LIMIT for v in tile):
            raise UnsupportedOpError("tile extents beyond 32 bits", fix="use smaller tiles.")
        levels.append([(tile[k], outer[k] * elems) for k in range(len(dims))])
        cur, last, node = tile, node, node.inner
    final = _sub_strides(last.inner_layout, last.tile_shape, tuple(last.inner_strides))
    return _affine_records(levels, final, dims)


def _records(layout: Any, dims: tuple[int, ...]) -> np.ndarray:
    if isinstance(layout, Morton):
        rec = np.zeros((max(len(dims), 1), REC_WORDS), np.uint32)
        for k, n in enumerate(dims):
            rec[k, :5] = (n, 1, layout.bits[k], k, len(dims))
        return rec
    if isinstance(layout, Tiled):
        return _tiled_records(layout, dims)
    if isinstance(layout, Strided):
        return _affine_records([], list(layout.strides), dims)
    return _affine_records([], _implicit(dims, isinstance(layout, ColMajor)), dims)


def _regions(dims: tuple[int, ...], base: int) -> list[tuple[int, int, int, int]]:
    rank = len(dims)
    nx = dims[-1] if rank >= 1 else 1
    ny = dims[-2] if rank >= 2 else 1
    nz = math.prod(dims[:-2]) if rank >= 3 else 1
    return [(max(rank - 1, 0), min(rank, 1), nx, 0), (max(rank - 2, 0), int(rank >= 2), ny, 0),
            (0, max(rank - 2, 0), nz, base & _MASK)]


def _x_contiguous(records: np.ndarray, region: tuple[int, int, int, int]) -> bool:
    """Whether at least 3/4 of the first 4096 x-table steps are +1 (rows are storage runs,
    or tiles at least 4 elements wide)."""
    d0, nd, entries, _ = region
    head = ref_axis_entries(records, min(entries, 4096), d0, nd, 0).astype(np.int64)
    return head.size > 1 and 4 * int((np.diff(head) == 1).sum()) >= 3 * (head.size - 1)


def _word(item: int, byte_offset: int) -> int:
    for w in (4, 2, 1):
        if item % w == 0 and byte_offset % w == 0:
            return w
    return 1


def _check_extent(first: int, last: int, size: int, unit: str) -> None:
    if first < 0 or last > size:
        raise HurrayFormatError(
            f"the layout addresses {unit} [{first}, {last}) but buffer 0 holds {size}",
            field="buffers[0].byte_size",
            fix="make buffer 0 cover every element the layout addresses (and byte_offset).")
    if last >= U32_LIMIT:
        raise UnsupportedOpError(f"buffer 0 spans {last} {unit}, beyond 32-bit indexing",
                                 fix="split the tensor into parts under 4 GiB.")


# Plans depend only on (descriptor, buffer size): repeated conversions skip re-planning and the
# layout re-validation. Plans are shared, so callers never mutate them.
_PLANS: LRUCache[tuple[Any, int], DensePlan] = LRUCache(256)


def plan_dense(desc: Any, data_size: int) -> DensePlan:
    """Plan converting a dense tensor (row/col-major, strided, tiled, Morton, Hilbert).

    The plan is cached per ``(desc, data_size)`` and shared: treat it as read-only.

    Args:
        desc: the TensorDescriptor (layout fields are checked here again).
        data_size: bytes actually held by buffer 0.

    Returns:
        The plan.

    Raises:
        HurrayFormatError: invalid layout fields, or a layout that addresses bytes outside
            buffer 0 (checked before any launch).
        UnsupportedOpError: a non-dense layout, a type without a fixed width, or sizes beyond
            32-bit indexing.
    """
    key = (desc, int(data_size))
    try:
        plan = _PLANS.get(key)
    except TypeError:  # a descriptor holding an unhashable value is planned every time
        return _plan_dense(desc, int(data_size))
    if plan is None:
        plan = _plan_dense(desc, int(data_size))
        _PLANS.put(key, plan)
    return plan


def _plan_dense(desc: Any, data_size: int) -> DensePlan:
    if desc.layout_tag not in DENSE_TAGS:
        raise UnsupportedOpError(f"layout 0x{desc.layout_tag:02X} is not dense",
                                 fix="use the sparse, paged or composite materializers.")
    dims = dims_of(desc)
    lo, hi = offset_range(desc)  # validates the layout fields against the shape
    bits, count = desc.dtype.bits, math.prod(dims)
    if bits == 0:
        raise UnsupportedOpError(f"{desc.dtype.name} has no fixed bit width",
                                 fix="private types need an out-of-band agreement.")
    addr = "hil" if isinstance(desc.layout, Hilbert) else "sep"
    plan = DensePlan(addr, "packed" if bits < 8 else "", dims, count)
    sep = addr == "sep"
    if sep:
        plan.records = _records(desc.layout, dims).reshape(-1)
        plan.regions = _regions(dims, -lo)
        plan.xcontig = _x_contiguous(plan.records, plan.regions[0])
    else:
        plan.scalars.update(hp=int(desc.layout.order), hr=int(desc.layout.hilbert_rank))
    nx, ny, nz = (r[2] for r in _regions(dims, 0))
    plan.scalars.update(nx=nx, ny=ny, nz=nz)
    off = int(desc.byte_offset)
    span = hi - lo + 1 if count else 0
    if bits < 8:
        _check_extent(off * 8 + lo * bits, off * 8 + (lo + span) * bits, data_size * 8, "bits")
        per, width = (4, 3) if bits == 6 else (8 // bits, 1)
        # Shift offsets by a whole number of packing groups so bit = so * bits stays >= 0.
        shift = -(-max(-lo, 0) // per) * per
        doff = off - shift * bits // 8
        if doff < 0:
            raise HurrayFormatError("byte_offset is not aligned to the packing group",
                                    field="byte_offset",
                                    fix="align byte_offset to whole packing groups.")
        if sep:
            plan.regions = _regions(dims, shift)
        plan.scalars.update(n=count, bits=bits, epu=per, upb=width,
                            nunits=-(-count // per), doff=doff, nsrc=data_size)
        plan.span, plan.doff = shift + lo + span, doff
        return plan
    item = bits // 8
    word = _word(item, off + lo * item)
    _check_extent(off + lo * item, off + (lo + span) * item, data_size, "bytes")
    plan.mover = {4: "u32", 2: "u16", 1: "u8"}[word]
    plan.scalars.update(wpe=item // word, woff=(off + lo * item) // word,
                        nsrc=data_size // word)
    plan.span, plan.doff = span, off + lo * item
    return plan
