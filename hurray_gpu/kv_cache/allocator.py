"""The host-side page allocator of a paged KV cache: free list, reference counts, sequences.

Every mutating operation is planned first and committed only when it cannot fail, so an
error (out of pages, bad sequence) leaves the allocator exactly as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kv_cache.decode_plan import plan_decode
from hurray_gpu.kv_cache.prefix import NO_PAGE, ROOT_HASH, PrefixCache
from hurray_gpu.kv_cache.state import (
    MAX_SEQ_TOKENS,
    AppendPlan,
    OutOfPagesError,
    Reusable,
    SeqState,
)

__all__ = ["MAX_SEQ_TOKENS", "AppendPlan", "OutOfPagesError", "PageAllocator", "SeqState"]


class PageAllocator:
    """Pages, reference counts and block tables; no device memory.

    Args:
        num_pages: pages in the pool.
        page_size: tokens per page.
        num_layers: layers sharing each page id (one block table per sequence).
        prefix_cache: keep full pages for reuse by later sequences with the same prefix.
    """

    def __init__(self, num_pages: int, page_size: int, num_layers: int,
                 prefix_cache: PrefixCache | None = None) -> None:
        self.num_pages, self.page_size, self.num_layers = num_pages, page_size, num_layers
        self.refcount = [0] * num_pages
        self.free_list = list(range(num_pages - 1, -1, -1))  # pop() hands out page 0 first
        self.seqs: dict[int, SeqState] = {}
        self.prefix = prefix_cache
        self._next_id = 0
        # Bumped by every change to block tables or reference counts: a cached plan made at
        # an older version may be stale.
        self.version = 0
        self._reusable: Reusable | None = None

    # -- queries -------------------------------------------------------------------------
    @property
    def available(self) -> int:
        """Pages free now plus cached pages that could be reclaimed."""
        return len(self.free_list) + (len(self.prefix.idle) if self.prefix else 0)

    @property
    def used(self) -> int:
        """Pages with at least one user."""
        return sum(1 for r in self.refcount if r > 0)

    def seq(self, seq_id: int, *, resident: bool = True) -> SeqState:
        """The state of ``seq_id``.

        Raises:
            UnsupportedOpError: unknown or freed sequence, or (``resident``) swapped out.
        """
        state = self.seqs.get(seq_id) if isinstance(seq_id, int) else None
        if state is None:
            raise UnsupportedOpError(f"sequence {seq_id!r} does not exist (never added or freed)",
                                     fix="use an id returned by add_sequence or fork.")
        if resident and state.swapped is not None:
            raise UnsupportedOpError(f"sequence {seq_id} is swapped out",
                                     fix="call swap_in(seq_id) first.")
        return state

    # -- sequences -----------------------------------------------------------------------
    def add_sequence(self, token_ids: Sequence[int] | None = None) -> int:
        """Start a sequence, reusing cached full pages of ``token_ids`` when possible."""
        state = SeqState([], [0] * self.num_layers, [int(t) for t in token_ids or ()])
        if self.prefix is not None and state.tokens:
            self._reuse_prefix(state)
        return self._add(state)

    def _add(self, state: SeqState) -> int:
        seq_id = self._next_id
        self._next_id += 1
        self.version += 1
        self.seqs[seq_id] = state
        return seq_id

    def _reuse_prefix(self, state: SeqState) -> None:
        assert self.prefix is not None
        parent, parent_page, ps = ROOT_HASH, NO_PAGE, self.page_size
        for j in range(len(state.tokens) // ps):
            key, page = self.prefix.lookup(parent, parent_page, state.tokens[j * ps:(j + 1) * ps])
            if page is None:
                break
            self._incref(page)
            state.pages.append(page)
            state.hashes.append(key)
            parent, parent_page = key, page
        state.lens = [len(state.pages) * ps] * self.num_layers

    def fork(self, seq_id: int) -> int:
        """A new sequence sharing every page of ``seq_id`` (no data copy)."""
        parent = self.seq(seq_id)
        if self.prefix is None:  # _incref without the prefix cache, for a whole table
            rc = self.refcount
            for page in parent.pages:
                rc[page] += 1
        else:
            for page in parent.pages:
                self._incref(page)
        return self._add(SeqState(list(parent.pages), list(parent.lens), list(parent.tokens),
                                  list(parent.hashes)))

    def free(self, seq_id: int) -> None:
        """Drop ``seq_id``; its pages return to the pool when nobody else uses them."""
        state = self.seq(seq_id, resident=False)
        if self.prefix is None:  # _decref without the prefix cache, for a whole table
            rc, free = self.refcount, self.free_list
            for page in state.pages:
                rc[page] -= 1
                if not rc[page]:
                    free.append(page)
        else:
            for page in state.pages:
                self._decref(page)
        del self.seqs[seq_id]
        self.version += 1

    # -- pages ---------------------------------------------------------------------------
    def _incref(self, page: int) -> None:
        self.version += 1
        if self.refcount[page] == 0 and self.prefix is not None:
            self.prefix.revive(page)
        self.refcount[page] += 1

    def _decref(self, page: int) -> None:
        self.version += 1
        self.refcount[page] -= 1
        if self.refcount[page] == 0 and not (self.prefix is not None and self.prefix.park(page)):
            self.free_list.append(page)

    def _peek(self, count: int) -> tuple[list[int], int, list[int]]:
        """The next ``count`` pages to hand out: (pages, taken from free list, evicted)."""
        if count > self.available:
            raise OutOfPagesError(count, self.available, self.num_pages)
        take = min(count, len(self.free_list))
        pages = self.free_list[len(self.free_list) - take:][::-1]
        evict = list(self.prefix.idle)[:count - take] if self.prefix else []
        return pages + evict, take, evict

    def _take(self, take: int, evict: list[int]) -> None:
        del self.free_list[len(self.free_list) - take:]
        for page in evict:
            assert self.prefix is not None
            got = self.prefix.evict()
            assert got == page, "the LRU order changed between plan and commit"

    def take_pages(self, count: int) -> list[int]:
        """Hand out ``count`` pages with reference count 1, or raise OutOfPagesError."""
        pages, take, evict = self._peek(count)
        self.version += 1
        self._take(take, evict)
        for page in pages:
            self.refcount[page] = 1
        return pages

    def release_pages(self, pages: Sequence[int]) -> None:
        """Drop one reference to each of ``pages``."""
        for page in pages:
            self._decref(page)

    # -- append --------------------------------------------------------------------------
    def plan_append(self, seq_ids: Sequence[int], counts: Sequence[int],
                    layer: int, reuse: bool = True) -> AppendPlan:
        """Plan writing ``counts[i]`` tokens of ``layer`` to ``seq_ids[i]`` (nothing changes).

        Shared pages the write touches are copied first (copy-on-write); new pages cover
        the tokens past each sequence's capacity. The same batch appended to the next layer
        reuses the last plan (a decode step computes its slots once for all layers) unless
        ``reuse`` is False (:meth:`attach` takes a fresh plan).

        Raises:
            UnsupportedOpError: unknown, freed, swapped or repeated sequences; too many tokens.
            OutOfPagesError: the pool cannot supply the pages.
        """
        key = (tuple(seq_ids), tuple(counts))
        reused = self._reuse(key, layer) if reuse else None
        if reused is not None:
            return reused
        if len(set(key[0])) != len(key[0]):
            raise UnsupportedOpError("a sequence appears twice in one append",
                                     fix="pass each sequence once, with all its tokens.")
        if key[1].count(1) == len(key[1]):  # decode: the same plan, built without NumPy
            plan = plan_decode(self, list(key[0]), layer)
        else:
            plan = self._plan_general(seq_ids, counts, layer)
        plan.key = key
        return plan

    def _plan_general(self, seq_ids: Sequence[int], counts: Sequence[int],
                      layer: int) -> AppendPlan:
        """The plan for any counts (see :meth:`plan_append`); ``key`` is set by the caller."""
        states = [self.seq(s) for s in seq_ids]
        ps, rc = self.page_size, self.refcount
        refs: dict[int, int] = {}
        need, uniform = 0, True
        work: list[tuple[int, SeqState, int, list[int], int]] = []
        for seq_id, state, count in zip(seq_ids, states, counts, strict=True):
            start = state.lens[layer]
            if start + count > MAX_SEQ_TOKENS:
                raise UnsupportedOpError(f"sequence {seq_id} would exceed {MAX_SEQ_TOKENS} tokens",
                                         fix="end the sequence or start a new one.")
            uniform = uniform and state.lens.count(start) == self.num_layers
            shared = []
            if count:
                for j in range(start // ps, min(len(state.pages), (start + count - 1) // ps + 1)):
                    page = state.pages[j]
                    if rc[page] + refs.get(page, 0) > 1:
                        shared.append(j)
                        refs[page] = refs.get(page, 0) - 1
            grow = max(0, -(-(start + count) // ps) - len(state.pages))
            need += len(shared) + grow
            work.append((seq_id, state, start, shared, grow))
        fresh, take, evict = self._peek(need)
        plan = self._build_plan(work, counts, layer, fresh, take, evict)
        plan.states, plan.uniform = states, uniform
        return plan

    def _reuse(self, key: tuple[tuple[int, ...], tuple[int, ...]],
               layer: int) -> AppendPlan | None:
        """The last plan again for another layer, when nothing else changed since.

        Valid when the batch is the same, every layer had the same length when it was made
        (so this layer starts where that one did), and no table or reference count changed:
        its copy-on-write and new pages are then already in place for every layer.
        """
        last = self._reusable
        if last is None or last.version != self.version or layer in last.done or \
                last.plan.key != key:
            return None
        p = last.plan
        return AppendPlan(p.slots, [], {}, {}, 0, [], p.counts, layer, states=p.states, key=key,
                          uniform=True, reused=True, upload=p.upload)

    def _build_plan(self, work: list[tuple[int, SeqState, int, list[int], int]],
                    counts: Sequence[int], layer: int, fresh: list[int], take: int,
                    evict: list[int]) -> AppendPlan:
        ps, at = self.page_size, 0  # fresh[at] is the next page to hand out
        plan = AppendPlan(np.zeros(0, np.int64), [], {}, {}, take, evict, {}, layer)
        flat: list[int] = []  # the pages each sequence writes, back to back
        # Per sequence: rows of its pages in `flat` skipped before its first token (the rest
        # of the previous sequence's last page, then the head of its own first page).
        skip: list[int] = []
        skipped = 0
        for (seq_id, state, start, shared, grow), count in zip(work, counts, strict=True):
            table = state.pages
            if shared or grow:
                table = list(table)
                replaced = {}
                for j in shared:
                    new = fresh[at]
                    at += 1
                    plan.cow.append((table[j], new))
                    # Only the rows this sequence holds (in any layer) need copying.
                    plan.cow_rows.append(min(ps, max(0, state.length - j * ps)))
                    replaced[j] = table[j] = new
                added = fresh[at:at + grow]  # one slice: a long prefill adds thousands
                at += grow
                table += added
                plan.new_pages[seq_id], plan.replaced[seq_id] = added, replaced
            if count:
                first, last = start // ps, (start + count - 1) // ps
                flat.extend(table[first:last + 1])
                skipped += start - first * ps
                skip.append(skipped)
                skipped += (last + 1) * ps - start - count
            else:
                skip.append(skipped)
            plan.counts[seq_id] = count
        per_seq = np.asarray(counts, dtype=np.int64)
        total = int(per_seq.sum())
        if total:
            # Every row of the written pages, back to back, then the rows the tokens take:
            # token k of sequence i is row k + skip[i] of them (a few passes over the
            # tokens, not one per index term: this dominated a long prefill's planning).
            rows = (np.asarray(flat, dtype=np.int64)[:, None] * ps
                    + np.arange(ps, dtype=np.int64)).ravel()
            plan.slots = rows[np.arange(total, dtype=np.int64)
                              + np.repeat(np.asarray(skip, dtype=np.int64), per_seq)]
        return plan

    def commit_append(self, plan: AppendPlan) -> None:
        """Apply a plan from :meth:`plan_append` (no allocator call may come in between)."""
        if plan.reused:
            assert self._reusable is not None
            layer = plan.layer
            if plan.key[1].count(1) == len(plan.key[1]):  # decode: one token each
                for state in plan.states:
                    state.lens[layer] += 1
            else:
                for state, count in zip(plan.states, plan.key[1], strict=True):
                    state.lens[layer] += count
            self._reusable.done.add(plan.layer)
            return
        self._take(plan.take_free, plan.evict)
        if self.prefix is None:
            self._commit_tables(plan)
        else:
            self._commit_with_prefix(plan)
        self.version += 1
        self._reusable = Reusable(self.version, plan, {plan.layer}) \
            if plan.uniform and self.prefix is None else None

    def attach(self, plan: AppendPlan) -> None:
        """Commit a fresh (not reused) plan's pages, copy-on-write replacements and new
        pages, but not its lengths: its rows are written afterwards, outside the caller's
        lock, and :meth:`extend` then makes them part of the sequence."""
        assert not plan.reused
        self._take(plan.take_free, plan.evict)
        self._plan_tables(plan)
        self.version += 1
        self._reusable = None

    def _plan_tables(self, plan: AppendPlan) -> None:
        """Put a plan's copy-on-write replacements and new pages into its sequences' tables
        (only sequences with either have entries: ``replaced`` and ``new_pages`` share keys)."""
        rc = self.refcount
        for seq_id, added in plan.new_pages.items():
            state = self.seqs[seq_id]
            for j, new in plan.replaced[seq_id].items():
                rc[new] = 1
                self._decref(state.pages[j])
                state.pages[j] = new
            for new in added:
                rc[new] = 1
            state.pages += added

    def extend(self, seq_id: int, layer: int, count: int) -> None:
        """``count`` more rows of ``seq_id`` in ``layer`` (pages :meth:`attach` gave it)."""
        state = self.seqs[seq_id]
        state.lens[layer] += count
        self.version += 1
        if self.prefix is not None:
            self._register_full_pages(state)

    def _commit_tables(self, plan: AppendPlan) -> None:
        """Commit without a prefix cache: only sequences with new pages touch tables."""
        self._plan_tables(plan)
        layer = plan.layer
        for state, count in zip(plan.states, plan.key[1], strict=True):
            state.lens[layer] += count

    def _commit_with_prefix(self, plan: AppendPlan) -> None:
        self._plan_tables(plan)
        for seq_id, count in plan.counts.items():
            state = self.seqs[seq_id]
            state.lens[plan.layer] += count
            self._register_full_pages(state)

    def _register_full_pages(self, state: SeqState) -> None:
        assert self.prefix is not None
        ps = self.page_size
        full = min(min(state.lens) // ps, len(state.tokens) // ps, len(state.pages))
        for j in range(len(state.hashes), full):
            parent = state.hashes[j - 1] if j else ROOT_HASH
            parent_page = state.pages[j - 1] if j else NO_PAGE
            chunk = state.tokens[j * ps:(j + 1) * ps]
            key = self.prefix.hash_fn(parent, chunk)
            self.prefix.register(key, state.pages[j], parent_page, chunk)
            state.hashes.append(key)

    # -- swap and page copies ------------------------------------------------------------
    def swap_out(self, seq_id: int, host_copy: object) -> list[int]:
        """Mark ``seq_id`` swapped (its data now in ``host_copy``) and release its pages."""
        state = self.seq(seq_id)
        pages = list(state.pages)
        self.version += 1
        state.swapped, state.swapped_pages = host_copy, len(pages)
        state.pages, state.hashes = [], []
        self.release_pages(pages)
        return pages

    def swap_in(self, seq_id: int) -> tuple[list[int], object]:
        """Give swapped ``seq_id`` fresh pages; returns them and the host copy to upload."""
        state = self.seq(seq_id, resident=False)
        if state.swapped is None:
            raise UnsupportedOpError(f"sequence {seq_id} is not swapped out",
                                     fix="call swap_in only after swap_out.")
        pages = self.take_pages(state.swapped_pages)
        host, state.swapped, state.pages = state.swapped, None, pages
        if self.prefix is not None:
            self._register_full_pages(state)
        return pages, host

    def overwritten(self, pages: Sequence[int]) -> None:
        """Pages whose contents changed outside append: they leave the prefix cache."""
        self.version += 1
        if self.prefix is None:
            return
        changed = set(pages)
        for page in changed:
            was_idle = page in self.prefix.idle
            self.prefix.forget(page)
            if was_idle:
                self.free_list.append(page)
        for state in self.seqs.values():
            cut = next((j for j, p in enumerate(state.pages[:len(state.hashes)])
                        if p in changed), None)
            if cut is not None:
                del state.hashes[cut:]

    # -- invariants ----------------------------------------------------------------------
    def check(self) -> None:
        """Assert the bookkeeping invariants (used by tests and the soak).

        Raises:
            AssertionError: reference counts differ from uses, a page is both free and used,
                or free + idle + used != num_pages.
        """
        uses = [0] * self.num_pages
        for state in self.seqs.values():
            for page in state.pages:
                uses[page] += 1
        assert uses == self.refcount, "reference counts differ from uses"
        free = set(self.free_list)
        assert len(free) == len(self.free_list), "a page is in the free list twice"
        idle = set(self.prefix.idle) if self.prefix else set()
        used = {p for p, r in enumerate(uses) if r}
        assert not (free & used) and not (idle & used) and not (free & idle), \
            "a page is both free and used"
        assert len(free) + len(idle) + len(used) == self.num_pages, "pages leaked"
        if self.prefix is not None:
            assert set(self.prefix.by_page) >= idle
            assert all(self.prefix.table[k].page == p for p, k in self.prefix.by_page.items())

    # -- import --------------------------------------------------------------------------
    def adopt(self, tables: Sequence[Sequence[int]], lens: Sequence[Sequence[int]]) -> list[int]:
        """Add sequences that already live in the pool (an import); returns their ids.

        Args:
            tables: each sequence's page ids (validated by the caller; may alias).
            lens: each sequence's token count per layer.
        """
        ids = []
        self.version += 1
        for pages, per_layer in zip(tables, lens, strict=True):
            for page in pages:
                self.refcount[page] += 1
            ids.append(self._add(SeqState([int(p) for p in pages], [int(n) for n in per_layer])))
        used = {p for p, r in enumerate(self.refcount) if r}
        self.free_list = [p for p in range(self.num_pages - 1, -1, -1) if p not in used]
        return ids
