"""Planning and launching the layout kernels: a dense layout as separable axis records and
regions (the gather's tables), the block-paged page walk, device buffers for a tensor, the
dense gather itself, and wrapping results as row-major Tensors; plus the host-side code reads
``element`` and the sparse checks use.
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.addressing import byte_positions, offset_range
from hurray_gpu.format.descriptor.layouts import ColMajor, Hilbert, Morton, Strided, Tiled
from hurray_gpu.format.dtypes import DType, buffer_size
from hurray_gpu.kernels.layout import AXIS_TABLE, REC_WORDS, gather_kernel, ref_axis_entries
from hurray_gpu.kernels.layout_paged import CHECK_PAGED
from hurray_gpu.ops.plan import clear_prepared, dense_descriptor
from hurray_gpu.parts import make_tensor
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.cache import LRUCache

__all__ = [
    "DensePlan", "PagedWalk", "U32_LIMIT", "alloc_out", "axis_tables", "blocks", "cached_tables",
    "clear_table_cache", "codes_at", "dense_launch", "dense_result",
    "device_buffers", "dims_of", "pack_codes", "paged_walk", "plan_dense", "run_dense",
]


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
        xcontig: sep only: neighbours along the last axis are mostly neighbours in storage
            (1), and every one of them is (2: a row is one storage run).
        ycontig: the same along the second-last axis (column-major: 2).
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
    xcontig: int = 0
    ycontig: int = 0


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


def _contiguous(records: np.ndarray, region: tuple[int, int, int, int]) -> int:
    """2 when the first 4096 steps of a region's table are all +1 (x: rows are storage runs),
    1 when at least 3/4 of them are (x: tiles at least 4 elements wide), else 0."""
    d0, nd, entries, _ = region
    head = ref_axis_entries(records, min(entries, 4096), d0, nd, 0).astype(np.int64)
    ones = int((np.diff(head) == 1).sum())
    return 0 if head.size <= 1 or 4 * ones < 3 * (head.size - 1) else \
        2 if ones == head.size - 1 else 1


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
        plan.xcontig = _contiguous(plan.records, plan.regions[0])
        plan.ycontig = _contiguous(plan.records, plan.regions[1])
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


def device_buffers(t: Any, dev: Any) -> list[Buffer]:
    """``t``'s buffers, checked: each holds at least what its handle declares.

    Raises:
        HurrayFormatError: a buffer holds fewer bytes than its handle declares.
    """
    out = list(t.buffers)
    for i, (b, h) in enumerate(zip(out, t.descriptor.buffers, strict=True)):
        if b.nbytes < h.byte_size:
            raise HurrayFormatError(
                f"buffers[{i}] holds {b.nbytes} bytes but the descriptor declares {h.byte_size}",
                field=f"buffers[{i}].byte_size", fix="pass exactly byte_size bytes per buffer.")
    return out


# Axis tables are a pure function of the plan's records and regions: cached per device, so a
# repeated conversion launches only the gather. Small tables only (the cache holds at most
# _TABLE_CACHE_ENTRIES * _TABLE_CACHE_WORDS * 4 bytes per device).
_TABLE_CACHE_ENTRIES = 64
_TABLE_CACHE_WORDS = 1 << 16
_TABLE_CACHES: weakref.WeakKeyDictionary[Any, LRUCache[Any, list[Buffer]]] = (
    weakref.WeakKeyDictionary())
_TABLE_LOCK = threading.Lock()
# Host C runs a thread's work items one after another in chunks of this many (LONG_ITEMS in
# the host renderer): blocks are sized so every core still gets whole chunks.
_HOST_CHUNK = 128
_HOST_THREADS = max(os.cpu_count() or 1, 1)


def _table_cache(dev: Any) -> LRUCache[Any, list[Buffer]]:
    with _TABLE_LOCK:
        cache = _TABLE_CACHES.get(dev)
        if cache is None:
            cache = LRUCache(_TABLE_CACHE_ENTRIES)
            _TABLE_CACHES[dev] = cache
        return cache


def clear_table_cache() -> None:
    """Drop every cached axis table, and the prepared calls that hold some (tests use it to
    see the table kernel launch)."""
    with _TABLE_LOCK:
        _TABLE_CACHES.clear()
    clear_prepared()


def cached_tables(dev: Any, key: Any, words: int, build: Any) -> list[Buffer]:
    """Read-only device tables for ``key`` on ``dev``: ``build()`` once, cached when small.

    Args:
        dev: the device.
        key: a hashable description of the tables' contents.
        words: their total u32 words (tables over ``_TABLE_CACHE_WORDS`` are not cached).
        build: returns the tables as Buffers (never written afterwards).
    """
    cache = _table_cache(dev) if words <= _TABLE_CACHE_WORDS else None
    hit = cache.get(key) if cache is not None else None
    if hit is not None:
        return hit
    tables = build()
    if cache is not None:
        cache.put(key, tables)
    return tables


def axis_tables(dev: Any, records: np.ndarray, regions: list[tuple[int, int, int, int]], *,
                wait: bool = False) -> tuple[list[Buffer], float]:
    """The x, y and z axis tables of ``regions`` on ``dev`` (cached when small).

    Args:
        dev: the device.
        records: per-dimension u32 records (``DensePlan.records``).
        regions: ``(d0, nd, entries, base)`` per table.
        wait: synchronise each table launch and return the elapsed seconds.

    Returns:
        The three table Buffers (read-only: they may be shared) and the kernel seconds.
    """
    rec = np.ascontiguousarray(records, np.uint32)
    key = (rec.tobytes(), tuple(regions))
    small = sum(max(r[2], 1) for r in regions) <= _TABLE_CACHE_WORDS
    cache = _table_cache(dev) if small else None
    hit = cache.get(key) if cache is not None else None
    if hit is not None:
        return hit, 0.0
    lp = Buffer.from_bytes(dev, rec)
    tables, took = [], 0.0
    for d0, nd, entries, base in regions:
        table = Buffer(dev, 4 * max(entries, 1))
        took += dev.run(AXIS_TABLE, dst=table, lp=lp, n=entries, d0=d0, nd=nd, base=base,
                        dat=0, wait=wait) or 0.0
        tables.append(table)
    if cache is not None:
        cache.put(key, tables)
    return tables, took


def blocks(dev: Any, plan: DensePlan) -> tuple[int, int]:
    """Elements per work item ``(bx, by)`` of the blocked separable gather on ``dev``.

    GPUs (and pocl/lavapipe, which vectorise across work items) take one element per item
    (and run the per-element kernel instead). Host C runs items in sequence, each a block
    walked in 8 x 8 groups (multiples of 8, so groups line up with tiles): whole rows when
    every row is one storage run (few streams for the prefetcher), as many as still leave
    every core chunks of items; when rows are runs of tiles, 64 x 64 for outer tiles at least
    64 rows tall (nested tiles: a block inside one tile) and 128 x 32 otherwise (a band of
    whole tiles); 128 x 128 when columns are runs (column-major, 16 x 16 transposes: each
    column's lines are read whole while the block's rows are written); else 64 x 64 (Morton:
    one storage run). A launch that is one chunk of items anyway takes a whole slice per item
    (so no core loses work: each output row is then written in one run, and the block's table
    scans run once).
    """
    if getattr(dev, "dialect", "") != "c":
        return 1, 1
    nx, ny = int(plan.scalars["nx"]), int(plan.scalars["ny"])
    if plan.xcontig == 2:
        by = min(8, ny)
        row = max(64, plan.count // (_HOST_CHUNK * _HOST_THREADS * by))
        bx = min(nx, -(-row // 8) * 8)
    else:
        yrec = plan.records.reshape(-1, REC_WORDS)[max(len(plan.shape) - 2, 0)]
        tall = plan.xcontig and len(plan.shape) >= 2 and yrec[1] == 0 and yrec[2] and \
            yrec[4] >= 64
        bx, by = (128, 32) if plan.xcontig and not tall else (128, 128) if plan.ycontig \
            else (64, 64)
    if -(-nx // bx) * -(-ny // by) * int(plan.scalars["nz"]) <= _HOST_CHUNK:
        # One chunk: one thread runs every item anyway, so one item per slice scans each
        # table once (measured at 2^16 f32: 5-19% less CPU per call, the most for nested tiles).
        return nx, ny
    return min(bx, nx), min(by, ny)


def dense_launch(dev: Any, plan: DensePlan, *, wait: bool = False
                 ) -> tuple[Any, dict[str, Any], float]:
    """The gather kernel of ``plan`` on ``dev``, its arguments but ``dst`` and ``src`` (the
    axis tables built, or taken from the cache when small) and the seconds the tables took
    when ``wait``."""
    args: dict[str, Any] = dict(plan.scalars)
    took = 0.0
    addr = plan.addr
    if addr == "sep":
        tables, took = axis_tables(dev, plan.records, plan.regions, wait=wait)
        args.update(tx=tables[0], ty=tables[1], tz=tables[2])
        if plan.mover != "packed" and getattr(dev, "dialect", "") == "c":
            addr, (args["bx"], args["by"]) = "sepblk", blocks(dev, plan)
    return gather_kernel(addr, plan.mover), args, took


def run_dense(dev: Any, plan: DensePlan, src: Buffer, out: Buffer, *,
              wait: bool = False) -> float:
    """Gather ``src`` (a dense layout) into row-major ``out`` as ``plan`` says.

    Args:
        dev: the device holding both buffers.
        plan: from :func:`~hurray_gpu.ops.layout_plan.plan_dense`.
        src: buffer 0 of the tensor.
        out: at least ``count`` elements (packed units for sub-byte types).
        wait: synchronise and return the elapsed kernel seconds.

    Returns:
        Elapsed seconds when ``wait`` (else 0.0).
    """
    if plan.count == 0:
        return 0.0
    kernel, args, took = dense_launch(dev, plan, wait=wait)
    return took + (dev.run(kernel, dst=out, src=src, wait=wait, **args) or 0.0)


def dense_result(dev: Any, dtype: Any, shape: tuple[int, ...], out: Buffer) -> Any:
    """A row-major Tensor over ``out`` (trimmed to the dtype's exact size) on ``dev``."""
    size = buffer_size(dtype, math.prod(shape))
    if out.nbytes != size:
        out = out.view(0, size)
    desc, raw = dense_descriptor(dtype, tuple(shape), dev.tag)
    return make_tensor(desc, [out], raw=raw)


def alloc_out(dev: Any, plan: DensePlan, dtype: Any) -> Buffer:
    """The output Buffer of a dense plan: whole packed units, at least one byte."""
    if plan.mover == "packed":
        nbytes = int(plan.scalars["nunits"]) * int(plan.scalars["upb"])
    else:
        nbytes = buffer_size(dtype, plan.count)
    return Buffer(dev, max(nbytes, 1))


def _fail(message: str, field: str, fix: str) -> HurrayFormatError:
    return HurrayFormatError(message, field=field, fix=fix)


def _token_starts(lens: np.ndarray, sp: np.ndarray, ps: int, total: int) -> np.ndarray:
    pages = np.diff(sp)
    over = np.flatnonzero(lens > pages * ps)
    if over.size:
        s = int(over[0])
        raise _fail(f"seq_lens[{s}] = {int(lens[s])} exceeds its {int(pages[s])} pages x "
                    f"page_size {ps}", "seq_lens", "a sequence holds at most pages*page_size.")
    if int(lens.sum()) != total:
        raise _fail(f"seq_lens sum to {int(lens.sum())} but shape[0] is {total}", "seq_lens",
                    "pass one token count per sequence, summing to shape[0].")
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.uint32)


def _explain(bt: Buffer, sp: Buffer, iw: int, npages: int) -> HurrayFormatError:
    """Name the first bad block-table or seq_ptr entry (after the device flagged one)."""
    dt = np.uint32 if iw == 1 else np.uint64
    table, ptr = bt.numpy(dt), sp.numpy(dt)
    bad = np.flatnonzero(table >= npages)
    if bad.size:
        k = int(bad[0])
        return _fail(f"block_table[{k}] = {int(table[k])} is not below num_pages {npages}",
                     "block_table", "every page id must be < num_pages.")
    if ptr[0] != 0 or ptr[-1] != table.size or (np.diff(ptr.astype(np.int64)) < 0).any():
        return _fail(f"seq_ptr {ptr.tolist()[:8]} breaks seq_ptr[0] = 0, non-decreasing, "
                     f"seq_ptr[num_seqs] = {table.size}", "seq_ptr",
                     "write a monotone seq_ptr from 0 to the block table length.")
    return _fail("an index entry is above 2**32", "block_table", "use 32-bit page ids.")


@dataclass(frozen=True)
class PagedWalk:
    """A block-paged tensor's validated lookup state on its device.

    Attributes:
        bufs: the tensor's device buffers (buffer 0 rebased past ``byte_offset``).
        iw: 32-bit words per table entry (1: u32 ids, 2: u64 ids).
        nbt, nseq: block-table entries and sequences.
        starts: the first logical token of each sequence, and the total (nseq + 1 entries).
        dims: the logical ``(total_tokens, heads, dim)``.
    """

    bufs: list[Buffer]
    iw: int
    nbt: int
    nseq: int
    starts: np.ndarray
    dims: tuple[int, int, int]


def paged_walk(t: Any, seq_lens: Sequence[int] | None) -> PagedWalk:
    """Check a block-paged tensor's block table and seq_ptr on its device, and ``seq_lens``.

    Raises:
        HurrayFormatError: bad block table / seq_ptr (found on the device), or seq_lens that
            do not fit the pages or the shape.
    """
    desc, dev, lay = t.descriptor, t.device, t.descriptor.layout
    total, heads, dim = dims_of(desc)
    bufs = device_buffers(t, dev)
    if desc.byte_offset:
        bufs[0] = bufs[0].view(int(desc.byte_offset), bufs[0].nbytes - int(desc.byte_offset))
    iw = 2 if lay.block_table_index_type else 1
    nbt, nseq = bufs[1].nbytes // (4 * iw), int(lay.num_seqs)
    if bufs[2].nbytes < 4 * iw * (nseq + 1) or bufs[1].nbytes % (4 * iw):
        raise _fail("seq_ptr or block_table has the wrong size", "seq_ptr",
                    "write num_seqs + 1 seq_ptr entries and whole block-table entries.")
    err = Buffer(dev, 4)
    err.copyin(np.zeros(1, np.uint32))
    dev.run(CHECK_PAGED, err=err, bt=bufs[1], sp=bufs[2], nbt=nbt, nseq=nseq,
            npages=int(lay.num_pages), iw=iw)
    if int(err.numpy(np.uint32)[0]):
        raise _explain(bufs[1], bufs[2], iw, int(lay.num_pages))
    sp = bufs[2].numpy(np.uint32 if iw == 1 else np.uint64)[: nseq + 1].astype(np.int64)
    lens_in = seq_lens if seq_lens is not None else getattr(t, "seq_lens", None)
    lens = (np.diff(sp) * lay.page_size if lens_in is None
            else np.asarray(lens_in, np.int64).reshape(-1))
    if lens.size != nseq:
        raise _fail(f"{lens.size} seq_lens for {nseq} sequences", "seq_lens",
                    "pass one token count per sequence.")
    starts = _token_starts(lens, sp, int(lay.page_size), total)
    return PagedWalk(bufs, iw, nbt, nseq, starts, (total, heads, dim))


def codes_at(raw: Any, dtype: DType, offsets: np.ndarray, byte_offset: int) -> np.ndarray:
    """The codes at element ``offsets``: [n, bytes] uint8 for whole bytes, [n] uint8 below 8.

    Callers have checked that every offset lies inside ``raw``.
    """
    data = np.concatenate([np.asarray(raw, np.uint8).reshape(-1), np.zeros(4, np.uint8)])
    byte, bit = byte_positions(dtype, offsets, byte_offset)
    if dtype.bits >= 8:
        return data[byte[:, None] + np.arange(dtype.bits // 8)]
    word = (data[byte].astype(np.uint32) | (data[byte + 1].astype(np.uint32) << 8)
            | (data[byte + 2].astype(np.uint32) << 16))
    return ((word >> bit.astype(np.uint32)) & ((1 << dtype.bits) - 1)).astype(np.uint8)


def pack_codes(codes: np.ndarray, dtype: DType) -> np.ndarray:
    """Hurray bytes of ``codes`` (as :func:`codes_at` returns them), trailing bits zero."""
    if dtype.bits >= 8:
        return np.ascontiguousarray(codes, np.uint8).reshape(-1)
    n = codes.shape[0]
    lanes = ((codes.astype(np.uint8)[:, None] >> np.arange(dtype.bits)) & 1).astype(np.uint8)
    packed = np.packbits(lanes.reshape(-1), bitorder="little")
    out = np.zeros(buffer_size(dtype, n), np.uint8)
    out[: packed.size] = packed[: out.size]
    return out
