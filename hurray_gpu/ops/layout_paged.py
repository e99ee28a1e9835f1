"""Block-paged -> dense [total_tokens, heads, dim] on the device, after validating the block
table and seq_ptr there (and seq_lens on the host, where it lives).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.dtypes import buffer_size
from hurray_gpu.kernels.layout_paged import CHECK_PAGED, paged_gather
from hurray_gpu.ops.layout_plan import U32_LIMIT, dims_of
from hurray_gpu.ops.layout_run import dense_result, device_buffers
from hurray_gpu.runtime.buffer import Buffer

__all__ = ["PagedWalk", "materialize_paged", "paged_walk"]


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


def materialize_paged(t: Any, dtype: str | None, seq_lens: Sequence[int] | None) -> Any:
    """Gather a block-paged tensor into its logical [total_tokens, heads, dim] view.

    Args:
        t: the block-paged Tensor (unquantized).
        dtype: None (keep the type) or a conversion for the result.
        seq_lens: tokens per sequence; default ``t.seq_lens`` (KV-cache exports), else every
            sequence's pages are taken as full.

    Raises:
        HurrayFormatError: bad block table / seq_ptr (found on the device), or seq_lens that
            do not fit the pages or the shape.
        UnsupportedOpError: quantized or sub-byte pools (``dequantize_paged`` reads those).
    """
    desc, dev, lay = t.descriptor, t.device, t.descriptor.layout
    if desc.quantization is not None or desc.dtype.bits < 8:
        raise UnsupportedOpError("quantized or sub-byte block-paged pools are not gathered",
                                 fix="materialize them with a float dtype (one fused pass).")
    walk = paged_walk(t, seq_lens)
    bufs, (total, heads, dim) = walk.bufs, walk.dims
    item = desc.dtype.bits // 8
    word = next(w for w in (4, 2, 1) if item % w == 0)
    npool = bufs[0].nbytes // word
    if npool >= U32_LIMIT or total * heads * dim * item >= U32_LIMIT:
        raise UnsupportedOpError("the pool exceeds 32-bit indexing", fix="split the cache.")
    out = Buffer(dev, max(buffer_size(desc.dtype, total * heads * dim), 1))
    ts = Buffer.from_bytes(dev, walk.starts.tobytes())
    dev.run(paged_gather({4: "u32", 2: "u16", 1: "u8"}[word]), dst=out, pool=bufs[0],
            bt=bufs[1], sp=bufs[2], ts=ts, row=heads * dim, ntok=total, nseq=walk.nseq,
            ps=int(lay.page_size), npages=int(lay.num_pages), nbt=walk.nbt, iw=walk.iw,
            wpe=item // word, npool=npool)
    result = dense_result(dev, desc.dtype, (total, heads, dim), out)
    if dtype is None or dtype == desc.dtype.name or math.prod((total, heads, dim)) == 0:
        return result
    from hurray_gpu.ops.materialize import _convert

    return _convert(result, dtype)
