"""The decode step's append plan (one token per sequence) in one pass of plain Python.

It makes exactly the plan the general planner makes for counts of 1, without the NumPy
index arithmetic that costs more than the work for a few hundred tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kv_cache.state import MAX_SEQ_TOKENS, AppendPlan, SeqState

if TYPE_CHECKING:
    from hurray_gpu.kv_cache.allocator import PageAllocator

__all__ = ["plan_decode"]


def _states(alloc: PageAllocator, seq_ids: list[int]) -> list[SeqState]:
    """The resident states of ``seq_ids``; any bad id raises the allocator's typed error."""
    seqs = alloc.seqs
    if set(map(type, seq_ids)) <= {int}:
        states = [seqs.get(s) for s in seq_ids]
        # "is None", never "None in states": that compares each dataclass with None.
        if all(st is not None and st.swapped is None for st in states):
            return states  # type: ignore[return-value]
    return [alloc.seq(s) for s in seq_ids]  # raises for the first bad one


def plan_decode(alloc: PageAllocator, seq_ids: list[int], layer: int) -> AppendPlan:
    """Plan appending one token of ``layer`` to each of ``seq_ids`` (distinct, checked).

    Args:
        alloc: the allocator (nothing in it changes).

    Raises:
        UnsupportedOpError: unknown, freed or swapped sequences; a sequence already holding
            MAX_SEQ_TOKENS.
        OutOfPagesError: the pool cannot supply the pages.
    """
    states = _states(alloc, seq_ids)
    ps, rc, layers = alloc.page_size, alloc.refcount, alloc.num_layers
    refs: dict[int, int] = {}
    need, uniform = 0, True
    slots: list[int] = []
    add = slots.append
    special: list[tuple[int, int, int, bool]] = []  # (index, position, page index, shared)
    for i, state in enumerate(states):
        lens, pages = state.lens, state.pages
        start = lens[layer]
        if start >= MAX_SEQ_TOKENS:
            raise UnsupportedOpError(f"sequence {seq_ids[i]} would exceed {MAX_SEQ_TOKENS} "
                                     "tokens", fix="free or fork the sequence before it grows "
                                                   "this long.")
        if uniform and layers > 1 and lens.count(start) != layers:
            uniform = False
        j, at = divmod(start, ps)
        if j < len(pages):
            page = pages[j]
            # Planned copies only lower a count: a page with one user is not shared.
            if rc[page] > 1 and rc[page] + refs.get(page, 0) > 1:
                refs[page] = refs.get(page, 0) - 1
                need += 1
                special.append((i, start, j, True))
            add(page * ps + at)  # replaced below when shared
        else:
            need += j + 1 - len(pages)
            special.append((i, start, j, False))
            add(0)
    fresh, take, evict = alloc._peek(need)
    plan = AppendPlan(np.zeros(0, np.int64), [], {}, {}, take, evict,
                      dict.fromkeys(seq_ids, 1), layer)
    cursor = iter(fresh)
    for i, start, j, shared in special:
        state = states[i]
        table = list(state.pages)
        replaced = {}
        if shared:
            new = next(cursor)
            plan.cow.append((table[j], new))
            plan.cow_rows.append(min(ps, max(0, state.length - j * ps)))
            replaced[j] = table[j] = new
        added = [next(cursor) for _ in range(j + 1 - len(table))]
        table += added
        plan.new_pages[seq_ids[i]], plan.replaced[seq_ids[i]] = added, replaced
        slots[i] = table[j] * ps + start % ps
    plan.slots = np.array(slots, dtype=np.int64)
    plan.states, plan.uniform = states, uniform
    return plan
