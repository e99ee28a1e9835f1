"""Gather slot maps: every token's pool slot from the block tables, in a few NumPy passes.

Split from cache.py; the gather kernels read these slots (u32, PAD_SLOT for padding).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

from hurray_gpu.kernels.paged import PAD_SLOT
from hurray_gpu.kv_cache.state import SeqState

__all__ = ["dense_slots", "slot_map"]


def dense_slots(flat: np.ndarray, sizes: np.ndarray, lens: np.ndarray, ps: int) -> np.ndarray:
    """u32 slots of every token: the used pages of each table (``sizes`` pages each, back to
    back in ``flat``) as page x ps grids, less the unwritten tail of each last page.

    Per page, not per token, until the last two passes.
    """
    used = -(-lens // ps)
    ends = np.cumsum(used)
    count = int(ends[-1]) if used.size else 0
    pick = np.arange(count, dtype=np.int64) + np.repeat(np.cumsum(sizes) - sizes - ends + used,
                                                        used)
    fill = np.full(count, ps, np.int64)
    full = used > 0
    fill[ends[full] - 1] = lens[full] - (used[full] - 1) * ps
    grid = flat[pick].astype(np.uint32)[:, None] * np.uint32(ps) + np.arange(ps, dtype=np.uint32)
    return grid[np.arange(ps) < fill[:, None]]


def slot_map(states: Sequence[SeqState], layer: int, ps: int,
             pad_to: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(slots, lens)`` of ``states`` in ``layer``, sequence by sequence.

    With ``pad_to`` each sequence covers ``pad_to`` positions, PAD_SLOT past its end.
    """
    lens = np.fromiter((st.lens[layer] for st in states), np.int64, len(states))
    sizes = np.fromiter((len(st.pages) for st in states), np.int64, len(states))
    flat = np.fromiter(chain.from_iterable(st.pages for st in states), np.int64,
                       int(sizes.sum()))
    if pad_to is None:
        return dense_slots(flat, sizes, lens, ps), lens
    width = np.full(len(states), pad_to, np.int64)
    total = int(width.sum())
    pos = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(width) - width, width)
    live = pos < np.repeat(lens, width)
    page = np.zeros(total, np.int64)
    page[live] = flat[(np.repeat(np.cumsum(sizes) - sizes, width) + pos // ps)[live]]
    return np.where(live, page * ps + pos % ps, PAD_SLOT), lens
