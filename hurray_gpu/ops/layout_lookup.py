"""Single-element lookup in sparse and block-paged host tensors (the spec's lookup algorithms:
binary search in sorted index arrays, the block table for paged KV)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.addressing import block_paged_lookup
from hurray_gpu.format.descriptor.layouts import COO, CSC, CSF, CSR, BlockPaged

__all__ = ["lookup_offset"]


def _u64(buf: Any, field: str) -> np.ndarray:
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
    coords = _u64(t.buffers[1], "indices").reshape(-1, rank)
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
    minor = _u64(t.buffers[1], "indices")
    ptr = _u64(t.buffers[2], "ptr")
    m = int(idx[major])
    if m + 1 >= ptr.size:
        raise HurrayFormatError("the pointer array is too short", field="ptr",
                                fix="write shape[major] + 1 pointer entries.")
    return _find(minor, int(ptr[m]), int(ptr[m + 1]), int(idx[1 - major]))


def _csf(t: Any, idx: np.ndarray) -> int | None:
    modes = t.descriptor.layout.mode_order
    node = 0
    for level, mode in enumerate(modes):
        pos = _u64(t.buffers[2 * level + 1], f"pos_{level}")
        crd = _u64(t.buffers[2 * level + 2], f"crd_{level}")
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
        bt = _u64(t.buffers[1], "block_table") if layout.block_table_index_type else \
            np.asarray(t.buffers[1], np.uint8).view("<u4")
        sp = _u64(t.buffers[2], "seq_ptr") if layout.block_table_index_type else \
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
