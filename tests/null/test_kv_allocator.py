"""The paged KV cache's host allocator: free list, reference counts, fork, COW, prefix cache."""

from __future__ import annotations

import pickle
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kv_cache import OutOfPagesError, PageAllocator, PrefixCache, page_hash
from hurray_gpu.kv_cache.decode_plan import plan_decode
from hurray_gpu.kv_cache.slot_map import dense_slots


def _append(alloc: PageAllocator, seqs: Sequence[int], counts: Sequence[int],
            layer: int = 0) -> list[int]:
    plan = alloc.plan_append(list(seqs), list(counts), layer)
    alloc.commit_append(plan)
    alloc.check()
    return plan.slots.tolist()


def _snapshot(alloc: PageAllocator) -> tuple:
    seqs = {k: (list(s.pages), list(s.lens), list(s.hashes)) for k, s in alloc.seqs.items()}
    idle = list(alloc.prefix.idle) if alloc.prefix else []
    return list(alloc.free_list), list(alloc.refcount), seqs, idle


def test_pages_are_handed_out_in_order_and_slots_follow_the_block_table() -> None:
    alloc = PageAllocator(num_pages=8, page_size=4, num_layers=2)
    a, b = alloc.add_sequence(), alloc.add_sequence()
    slots = _append(alloc, [a, b], [3, 6])
    assert alloc.seqs[a].pages == [0] and alloc.seqs[b].pages == [1, 2]
    assert slots == [0, 1, 2, 4, 5, 6, 7, 8, 9]
    assert alloc.seqs[b].lens == [6, 0]
    # Layer 1 writes the same positions through the same block table: no new pages.
    assert _append(alloc, [b], [6], layer=1) == [4, 5, 6, 7, 8, 9]
    assert len(alloc.free_list) == 5 and alloc.used == 3


def test_free_returns_pages_only_when_the_last_user_leaves() -> None:
    alloc = PageAllocator(num_pages=4, page_size=2, num_layers=1)
    a = alloc.add_sequence()
    _append(alloc, [a], [3])
    child = alloc.fork(a)
    assert alloc.refcount[:2] == [2, 2] and alloc.seqs[child].pages == [0, 1]
    alloc.free(a)
    alloc.check()
    assert alloc.refcount[:2] == [1, 1] and len(alloc.free_list) == 2
    alloc.free(child)
    alloc.check()
    assert alloc.used == 0 and len(alloc.free_list) == 4


def test_copy_on_write_copies_only_the_shared_partial_page() -> None:
    alloc = PageAllocator(num_pages=6, page_size=4, num_layers=1)
    a = alloc.add_sequence()
    _append(alloc, [a], [6])  # pages [0, 1], page 1 half full
    b = alloc.fork(a)
    plan = alloc.plan_append([b], [1], 0)
    assert plan.cow == [(1, 2)] and plan.slots.tolist() == [2 * 4 + 2]
    alloc.commit_append(plan)
    alloc.check()
    assert alloc.seqs[a].pages == [0, 1] and alloc.seqs[b].pages == [0, 2]
    assert alloc.refcount[:3] == [2, 1, 1]
    # The parent now owns page 1 alone: it writes in place.
    assert alloc.plan_append([a], [1], 0).cow == []


def test_both_sharers_appending_in_one_batch_copy_once() -> None:
    alloc = PageAllocator(num_pages=6, page_size=4, num_layers=1)
    a = alloc.add_sequence()
    _append(alloc, [a], [2])
    b = alloc.fork(a)
    plan = alloc.plan_append([a, b], [1, 1], 0)
    assert len(plan.cow) == 1  # the second writer then owns the original page alone
    alloc.commit_append(plan)
    alloc.check()
    assert sorted(alloc.seqs[a].pages + alloc.seqs[b].pages) == [0, 1]


def test_out_of_pages_changes_nothing_and_reports_counts() -> None:
    alloc = PageAllocator(num_pages=3, page_size=2, num_layers=1)
    a, b = alloc.add_sequence(), alloc.add_sequence()
    _append(alloc, [a], [3])
    before = _snapshot(alloc)
    with pytest.raises(OutOfPagesError) as info:
        alloc.plan_append([a, b], [1, 5], 0)
    assert (info.value.needed, info.value.available, info.value.total) == (3, 1, 3)
    assert "Fix:" in str(info.value)
    assert _snapshot(alloc) == before
    again = pickle.loads(pickle.dumps(info.value))
    assert isinstance(again, OutOfPagesError) and again.needed == 3


def test_unknown_freed_swapped_and_repeated_sequences_raise() -> None:
    alloc = PageAllocator(num_pages=4, page_size=2, num_layers=1)
    a = alloc.add_sequence()
    with pytest.raises(UnsupportedOpError, match="does not exist"):
        alloc.plan_append([99], [1], 0)
    with pytest.raises(UnsupportedOpError, match="twice"):
        alloc.plan_append([a, a], [1, 1], 0)
    alloc.free(a)
    with pytest.raises(UnsupportedOpError, match="does not exist"):
        alloc.fork(a)
    with pytest.raises(UnsupportedOpError):
        alloc.free(a)
    b = alloc.add_sequence()
    _append(alloc, [b], [3])
    alloc.swap_out(b, host_copy=b"data")
    alloc.check()
    assert alloc.used == 0
    with pytest.raises(UnsupportedOpError, match="swapped out"):
        alloc.plan_append([b], [1], 0)
    pages, host = alloc.swap_in(b)
    assert host == b"data" and len(pages) == 2 and alloc.seqs[b].lens == [3]
    alloc.check()


def test_swap_in_without_room_leaves_the_sequence_swapped() -> None:
    alloc = PageAllocator(num_pages=2, page_size=2, num_layers=1)
    a = alloc.add_sequence()
    _append(alloc, [a], [4])
    alloc.swap_out(a, host_copy="x")
    other = alloc.add_sequence()
    _append(alloc, [other], [1])
    with pytest.raises(OutOfPagesError):
        alloc.swap_in(a)
    assert alloc.seqs[a].swapped == "x"
    alloc.check()


# -- prefix cache ---------------------------------------------------------------------------

def _prefill(alloc: PageAllocator, tokens: list[int]) -> int:
    seq = alloc.add_sequence(tokens)
    cached = alloc.seqs[seq].lens[0]
    for layer in range(alloc.num_layers):
        _append(alloc, [seq], [len(tokens) - cached], layer)
    return seq


def test_prefix_hit_shares_full_pages_only() -> None:
    alloc = PageAllocator(num_pages=8, page_size=4, num_layers=2, prefix_cache=PrefixCache())
    tokens = list(range(10))
    a = _prefill(alloc, tokens)
    assert len(alloc.prefix.table) == 2  # two full pages; the third is partial
    b = alloc.add_sequence(tokens[:8] + [77, 78])
    assert alloc.seqs[b].pages == alloc.seqs[a].pages[:2]
    assert alloc.seqs[b].lens == [8, 8] and alloc.prefix.hits == 2
    alloc.check()
    c = alloc.add_sequence([0, 1, 2, 99] + tokens[4:])
    assert alloc.seqs[c].pages == [] and alloc.seqs[c].lens == [0, 0]


def test_cached_pages_outlive_their_sequence_and_are_evicted_lru() -> None:
    alloc = PageAllocator(num_pages=4, page_size=2, num_layers=1, prefix_cache=PrefixCache())
    a = _prefill(alloc, [1, 2, 3, 4])
    pages_a = list(alloc.seqs[a].pages)
    alloc.free(a)
    alloc.check()
    assert list(alloc.prefix.idle) == pages_a and alloc.available == 4
    b = alloc.add_sequence([1, 2, 3, 4, 5])  # revives both cached pages
    assert alloc.seqs[b].pages == pages_a and not alloc.prefix.idle
    alloc.free(b)
    c = _prefill(alloc, [9, 9, 9, 9, 9, 9])  # 3 pages: 2 free + evict the LRU cached page
    alloc.check()
    assert alloc.prefix.evictions == 1 and pages_a[0] in alloc.seqs[c].pages
    d = alloc.add_sequence([1, 2, 3, 4])
    assert alloc.seqs[d].pages == []  # the first page is gone, so the chain misses


def test_forced_hash_collision_never_shares_pages() -> None:
    prefix = PrefixCache(hash_fn=lambda parent, tokens: b"same" * 8)
    alloc = PageAllocator(num_pages=6, page_size=2, num_layers=1, prefix_cache=prefix)
    a = _prefill(alloc, [1, 2])
    b = alloc.add_sequence([3, 4])
    assert alloc.seqs[b].pages == [] and prefix.misses >= 1
    _append(alloc, [b], [2])
    assert alloc.seqs[b].pages != alloc.seqs[a].pages
    # Same tokens behind a different parent page must miss too.
    c = alloc.add_sequence([1, 2, 1, 2])
    assert alloc.seqs[c].pages == alloc.seqs[a].pages
    alloc.check()


def test_page_hash_depends_on_parent_and_tokens() -> None:
    root = bytes(32)
    assert page_hash(root, [1, 2]) == page_hash(root, [1, 2])
    assert page_hash(root, [1, 2]) != page_hash(root, [2, 1])
    assert page_hash(page_hash(root, [1, 2]), [3]) != page_hash(root, [3])


# -- property test: random operations keep every invariant ------------------------------------

_OPS = st.lists(st.tuples(st.sampled_from("aAfxsSc"), st.integers(0, 50), st.integers(0, 9)),
                max_size=60)


@settings(max_examples=60, deadline=None)
@given(ops=_OPS, prefix=st.booleans())
def test_random_operations_keep_invariants(ops: list[tuple[str, int, int]],
                                           prefix: bool) -> None:
    alloc = PageAllocator(num_pages=12, page_size=3, num_layers=2,
                          prefix_cache=PrefixCache() if prefix else None)
    lens: dict[int, list[int]] = {}
    for op, pick, n in ops:
        live = sorted(alloc.seqs)
        target = live[pick % len(live)] if live else None
        try:
            if op == "a" or target is None:
                seq = alloc.add_sequence([pick % 3] * n)
                lens[seq] = list(alloc.seqs[seq].lens)
            elif op == "A":
                layer = pick % 2
                _append(alloc, [target], [n], layer)
                lens[target][layer] += n
            elif op == "f":
                lens[alloc.fork(target)] = list(lens[target])
            elif op == "x":
                alloc.free(target)
                del lens[target]
            elif op == "s":
                alloc.swap_out(target, host_copy=n)
            elif op == "S":
                alloc.swap_in(target)
            else:
                alloc.overwritten([pick % alloc.num_pages])
        except (OutOfPagesError, UnsupportedOpError):
            pass
        alloc.check()
        assert {k: s.lens for k, s in alloc.seqs.items()} == lens
    for seq in list(alloc.seqs):
        alloc.free(seq)
    alloc.check()
    assert alloc.used == 0 and alloc.available == alloc.num_pages


def _plan_facts(plan: object) -> tuple:
    p = plan  # an AppendPlan
    return (p.slots.tolist(), p.cow, p.cow_rows, p.new_pages, p.replaced,  # type: ignore
            p.take_free, p.evict, p.counts, p.uniform)  # type: ignore[attr-defined]


@settings(max_examples=60, deadline=None)
@given(ops=_OPS, prefix=st.booleans())
def test_decode_plan_equals_the_general_plan(ops: list[tuple[str, int, int]],
                                             prefix: bool) -> None:
    """One token per sequence takes a NumPy-free path: it must plan exactly the same."""
    alloc = PageAllocator(num_pages=14, page_size=3, num_layers=2,
                          prefix_cache=PrefixCache() if prefix else None)
    for op, pick, n in ops:
        live = sorted(alloc.seqs)
        target = live[pick % len(live)] if live else None
        try:
            if op in "aA" or target is None:
                seq = alloc.add_sequence([pick % 3] * n)
                _append(alloc, [seq], [n % 7], pick % 2)
            elif op == "f":
                alloc.fork(target)
            elif op == "x":
                alloc.free(target)
            elif op == "s":
                alloc.swap_out(target, host_copy=n)
            elif op == "S":
                alloc.swap_in(target)
            else:  # a decode step over a few live sequences (the swapped ones raise)
                batch = live[pick % len(live):][: n + 1]
                layer = n % 2
                try:
                    general = _plan_facts(alloc._plan_general(batch, [1] * len(batch), layer))
                except (OutOfPagesError, UnsupportedOpError) as exc:
                    with pytest.raises(type(exc)):
                        plan_decode(alloc, batch, layer)
                    continue
                assert _plan_facts(plan_decode(alloc, batch, layer)) == general
                _append(alloc, batch, [1] * len(batch), layer)
        except (OutOfPagesError, UnsupportedOpError):
            pass
        alloc.check()


@settings(max_examples=80, deadline=None)
@given(tables=st.lists(st.tuples(st.integers(0, 14), st.integers(0, 2)), max_size=6),
       page_size=st.sampled_from([1, 3, 4]))
def test_dense_slot_map_follows_each_block_table(tables: list[tuple[int, int]],
                                                 page_size: int) -> None:
    """Gather's slot map (per page grids, tails cut) equals the token-by-token definition."""
    lens = np.array([n for n, _ in tables], np.int64)
    sizes = np.array([-(-n // page_size) + extra for n, extra in tables], np.int64)
    flat = np.random.default_rng(len(tables)).permutation(200)[:int(sizes.sum())]
    want, start = [], 0
    for n, size in zip(lens.tolist(), sizes.tolist(), strict=True):
        table = flat[start:start + size]
        start += size
        want += [int(table[p // page_size]) * page_size + p % page_size for p in range(n)]
    tables_in = np.split(flat, np.cumsum(sizes)[:-1]) if sizes.size else []
    got = dense_slots([t.tolist() for t in tables_in], lens.tolist(), page_size)
    assert got.dtype == np.uint32 and got.tolist() == want
