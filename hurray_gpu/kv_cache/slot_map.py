"""Gather slot maps: every token's pool slot from the block tables, in a few NumPy passes.

Split from cache.py; the gather kernels read these slots (u32, PAD_SLOT for padding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from hurray_gpu.kernels.paged import PAD_SLOT
from hurray_gpu.kv_cache.state import SeqState

__all__ = ["GatherPlan", "dense_slots", "slot_map"]


@dataclass
class GatherPlan:
    """A dense gather's slots of one batch, on the device, made at allocator ``version``.

    Block tables are shared by every layer and change only with the version, so the plan
    holds for any layer whose lengths are still ``lens``: a decode step gathers every layer
    (and a benchmark the same layer) with one slot map. ``states`` are the sequences' records,
    alive as long as the version holds.
    """

    version: int
    states: list[SeqState]
    lens: list[int]
    parts: list[tuple[int, Any]]  # the slots on the device, per pool window (upload_slots)
    tokens: int
    cu_seqlens: np.ndarray  # int64, num_seqs + 1 entries

    def holds(self, version: int, layer: int) -> bool:
        """Whether the plan is still exact for ``layer`` at allocator ``version``."""
        return version == self.version and [st.lens[layer] for st in self.states] == self.lens


def dense_slots(tables: Sequence[Sequence[int]], lens: Sequence[int], ps: int) -> np.ndarray:
    """u32 slots of every token: the used pages of each block table, less the unwritten tail
    of each last page.

    The first slot and token count of each used page are listed in Python (whole-list
    operations, a few per sequence), then expanded to tokens in one NumPy pass: a decode
    step's gather calls this every step, and per-call NumPy overhead dominated the former
    ten passes at a few hundred tokens.
    """
    firsts: list[int] = []
    counts: list[int] = []
    for table, n in zip(tables, lens, strict=True):
        used = -(-n // ps)
        if used:
            firsts += table[:used]
            counts += [ps] * (used - 1)
            counts.append(n - (used - 1) * ps)
    count = np.array(counts, np.int64)
    ends = np.cumsum(count)
    total = int(ends[-1]) if count.size else 0
    # Token i of a page starting at token e holds slot first * ps + (i - e).
    base = np.array(firsts, np.int64) * ps - (ends - count)
    return (np.repeat(base, count) + np.arange(total, dtype=np.int64)).astype(np.uint32)


def slot_map(states: Sequence[SeqState], layer: int, ps: int,
             pad_to: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(slots, lens)`` of ``states`` in ``layer``, sequence by sequence.

    With ``pad_to`` each sequence covers ``pad_to`` positions, PAD_SLOT past its end.
    """
    lens = np.fromiter((st.lens[layer] for st in states), np.int64, len(states))
    if pad_to is None:
        return dense_slots([st.pages for st in states], lens.tolist(), ps), lens
    sizes = np.fromiter((len(st.pages) for st in states), np.int64, len(states))
    flat = np.fromiter(chain.from_iterable(st.pages for st in states), np.int64,
                       int(sizes.sum()))
    width = np.full(len(states), pad_to, np.int64)
    total = int(width.sum())
    pos = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(width) - width, width)
    live = pos < np.repeat(lens, width)
    page = np.zeros(total, np.int64)
    page[live] = flat[(np.repeat(np.cumsum(sizes) - sizes, width) + pos // ps)[live]]
    return np.where(live, page * ps + pos % ps, PAD_SLOT), lens
