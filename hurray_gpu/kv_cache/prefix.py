"""Prefix caching of full KV pages: blake3 chain hashes, verified token ids, LRU reclaim.

A page's key is blake3(parent hash || its token ids); a hit also compares the token ids and
the parent page, so a hash collision can never share pages between different prefixes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import blake3
import numpy as np

__all__ = ["ROOT_HASH", "PrefixCache", "PrefixEntry", "page_hash"]

# Parent hash of a sequence's first page.
ROOT_HASH = bytes(32)
# Parent page id of a sequence's first page.
NO_PAGE = -1


def page_hash(parent: bytes, tokens: Sequence[int]) -> bytes:
    """blake3 of the parent page's hash followed by the token ids as little-endian i64."""
    hasher = blake3.blake3(b"hurray_gpu.kv_cache.page.v1")
    hasher.update(parent)
    hasher.update(np.asarray(tokens, dtype="<i8").tobytes())
    return hasher.digest()


@dataclass(frozen=True)
class PrefixEntry:
    """One cached full page: where it is and exactly which prefix it holds."""

    page: int
    parent_page: int
    tokens: tuple[int, ...]


class PrefixCache:
    """The hash table of full pages plus the LRU list of cached pages nobody uses.

    Args:
        hash_fn: the page hash (replaceable so tests can force collisions).
    """

    def __init__(self, hash_fn: Callable[[bytes, Sequence[int]], bytes] = page_hash) -> None:
        self.hash_fn = hash_fn
        self.table: dict[bytes, PrefixEntry] = {}
        self.by_page: dict[int, bytes] = {}
        self.idle: OrderedDict[int, None] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    def lookup(self, parent: bytes, parent_page: int,
               tokens: Sequence[int]) -> tuple[bytes, int | None]:
        """Return ``(hash, page)`` for a full page of ``tokens`` after ``parent``.

        ``page`` is None on a miss, and on a hash match whose tokens or parent differ.
        """
        key = self.hash_fn(parent, tokens)
        entry = self.table.get(key)
        if entry is not None and entry.parent_page == parent_page and \
                entry.tokens == tuple(int(t) for t in tokens):
            self.hits += 1
            return key, entry.page
        self.misses += 1
        return key, None

    def register(self, key: bytes, page: int, parent_page: int, tokens: Sequence[int]) -> bool:
        """Record ``page`` as holding ``tokens`` after ``parent_page``; False if not recorded.

        The first page stored under a hash keeps it: a later page with the same key (a
        duplicate prefill or a collision) is simply not cached.
        """
        if key in self.table or page in self.by_page:
            return False
        self.table[key] = PrefixEntry(page, parent_page, tuple(int(t) for t in tokens))
        self.by_page[page] = key
        return True

    def forget(self, page: int) -> None:
        """Drop ``page`` from the cache (its contents are about to change)."""
        key = self.by_page.pop(page, None)
        if key is not None:
            del self.table[key]
        self.idle.pop(page, None)

    def park(self, page: int) -> bool:
        """A cached page lost its last user: keep it for reuse. False if it is not cached."""
        if page not in self.by_page:
            return False
        self.idle[page] = None
        return True

    def revive(self, page: int) -> None:
        """A cached idle page has a user again."""
        self.idle.pop(page, None)

    def evict(self) -> int:
        """Reclaim the least recently idled page (it must then be reused at once)."""
        page, _ = self.idle.popitem(last=False)
        key = self.by_page.pop(page)
        del self.table[key]
        self.evictions += 1
        return page
