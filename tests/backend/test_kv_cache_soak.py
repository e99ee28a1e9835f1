"""Randomized soak of PagedKVCache on the cpu backend against a per-sequence token-list model.

``HURRAY_GPU_SOAK_OPS`` sets the operation count of each run. The suite (ci/test.sh) leaves it
unset and runs 2,000 operations; ci/fuzz.sh runs 100,000 (its ``--soak-ops``).
Every operation is followed by the invariant check; contents are compared at checkpoints.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kv_cache import OutOfPagesError, PagedKVCache

OPS = int(os.environ.get("HURRAY_GPU_SOAK_OPS", "2000"))
CHECK_EVERY = 200
LAYERS, PAGES, PAGE_SIZE = 2, 48, 4
MAX_SEQS = 24  # live sequences; at the cap, adds and forks become other operations
VALUE_BIT = 1 << 31


class Soak:
    """One soak run: the cache, the model (token ids per sequence and layer), the rng."""

    def __init__(self, seed: int, prefix: bool) -> None:
        self.rng = np.random.default_rng(seed)
        self.cache = PagedKVCache("cpu", LAYERS, 1, 1, num_pages=PAGES, page_size=PAGE_SIZE,
                                  dtype="uint32", enable_prefix_cache=prefix)
        self.model: dict[int, list[list[int]]] = {}
        self.next_token = 1
        self.counts: Counter[str] = Counter()  # operations that really ran, by kind

    def pick(self, resident: bool = True) -> int | None:
        live = [s for s in self.model
                if not resident or self.cache.allocator.seqs[s].swapped is None]
        return int(self.rng.choice(live)) if live else None

    def add(self) -> None:
        tokens = [int(t) for t in self.rng.integers(0, 3, int(self.rng.integers(0, 9)))]
        seq = self.cache.add_sequence(tokens if self.rng.random() < 0.5 else None)
        cached = self.cache.seq_len(seq)
        assert cached == 0 or self.cache.prefix_cache is not None
        # A prefix hit holds tokens written by an earlier sequence: read them back once.
        self.model[seq] = [[] for _ in range(LAYERS)]
        if cached:
            for layer in range(LAYERS):
                k = self.cache.gather(seq, layer)[0].numpy().reshape(-1)
                # Written earlier by some sequence with the same prompt prefix.
                assert k.size == cached and np.all((k > 0) & (k < self.next_token))
                self.model[seq][layer] = [int(x) for x in k]

    def append(self) -> bool:
        live = [s for s in self.model if self.cache.allocator.seqs[s].swapped is None]
        if not live:
            return False
        batch = [int(s) for s in self.rng.permutation(live)[:int(self.rng.integers(1, 5))]]
        counts = [int(c) for c in self.rng.integers(0, 4, len(batch))]
        # Half the time a whole decode step: the same batch into every layer in turn (the
        # allocator reuses the first layer's plan for the others).
        layers = range(LAYERS) if self.rng.random() < 0.5 else [int(self.rng.integers(LAYERS))]
        for layer in layers:
            ids = np.arange(self.next_token, self.next_token + sum(counts), dtype=np.uint32)
            k = ids.reshape(-1, 1, 1)
            self.cache.append(batch, layer, k, k | np.uint32(VALUE_BIT), counts=counts)
            self.next_token += sum(counts)
            at = 0
            for seq, n in zip(batch, counts, strict=True):
                self.model[seq][layer] += [int(x) for x in ids[at:at + n]]
                at += n
        return True

    def step(self) -> None:
        op = self.rng.random()
        done: str | None = None
        try:
            if not self.model or (op < 0.2 and len(self.model) < MAX_SEQS):
                self.add()
                done = "add"
            elif op < 0.6:
                done = "append" if self.append() else None
            elif op < 0.7 and len(self.model) < MAX_SEQS and (seq := self.pick()) is not None:
                child = self.cache.fork(seq)
                self.model[child] = [list(rows) for rows in self.model[seq]]
                done = "fork"
            elif op < 0.8 and (seq := self.pick(resident=False)) is not None:
                self.cache.free(seq)
                del self.model[seq]
                done = "free"
            elif op < 0.87 and (seq := self.pick()) is not None:
                self.cache.swap_out(seq)
                done = "swap_out"
            elif op < 0.94:
                done = "swap_in" if self.swap_in() else None
            else:
                done = "copy_blocks" if self.copy_to_free_page() else None
        except OutOfPagesError:
            done = "out_of_pages"
        if done is not None:
            self.counts[done] += 1
        self.cache.check_invariants()

    def swap_in(self) -> bool:
        swapped = [s for s, st in self.cache.allocator.seqs.items() if st.swapped is not None]
        if swapped:
            self.cache.swap_in(int(self.rng.choice(swapped)))
        return bool(swapped)

    def copy_to_free_page(self) -> bool:
        free = self.cache.allocator.free_list
        used = [p for p, r in enumerate(self.cache.allocator.refcount) if r]
        if free and used:  # a copy into a free page changes no sequence's contents
            self.cache.copy_blocks([(int(self.rng.choice(used)), free[0])])
        return bool(free and used)

    def verify(self) -> None:
        seqs = [s for s in self.model if self.cache.allocator.seqs[s].swapped is None]
        for layer in range(LAYERS):
            k, v, cu = self.cache.gather(seqs, layer)
            want = np.array([t for s in seqs for t in self.model[s][layer]], np.uint32)
            assert np.array_equal(k.numpy().reshape(-1), want)
            assert np.array_equal(v.numpy().reshape(-1), want | np.uint32(VALUE_BIT))
            assert cu[-1] == want.size


@pytest.mark.parametrize("prefix", [False, True])
def test_soak_keeps_invariants_contents_and_leaks_nothing(prefix: bool) -> None:
    assert OPS > 0, f"HURRAY_GPU_SOAK_OPS={OPS}: set a positive operation count"
    soak = Soak(seed=1234 + prefix, prefix=prefix)
    for i in range(OPS):
        soak.step()
        if i % CHECK_EVERY == CHECK_EVERY - 1:
            soak.verify()
    soak.verify()
    if OPS >= 1000:  # long enough that every kind of operation (and a full pool) must occur
        assert set(soak.counts) == {"add", "append", "fork", "free", "swap_out", "swap_in",
                                    "copy_blocks", "out_of_pages"}, soak.counts
    for seq in list(soak.model):
        soak.cache.free(seq)
    soak.cache.check_invariants()
    assert soak.cache.allocator.used == 0 and soak.cache.num_free_pages == PAGES
    with pytest.raises(UnsupportedOpError):
        soak.cache.free(10**9)
