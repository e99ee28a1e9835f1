"""Row transfers: host memory views of one sequence's K and V rows in one layer, in token
order, for a socket to send from or receive into directly (no gather or scatter copy).

A read transfer views rows already stored; a write transfer reserves new rows (pages taken,
copy-on-write done) that become part of the sequence only when it is committed. While a
transfer is open its sequence cannot be freed, forked or swapped out (its pages stay where
the views point), and a write transfer's layer takes no other append.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["RowViews", "row_runs"]


def row_runs(pools: tuple[np.ndarray, np.ndarray], slots: np.ndarray,
             row_bytes: int) -> list[memoryview]:
    """Views of the key pool's rows at ``slots`` (in order), then the value pool's: one view
    per run of consecutive slots, so pages that follow each other in the pool are one view."""
    if not slots.size:
        return []
    breaks = np.flatnonzero(np.diff(slots) != 1) + 1
    starts = np.concatenate(([0], breaks)).tolist()
    ends = np.concatenate((breaks, [slots.size])).tolist()
    first = slots[starts].tolist()
    views = []
    for pool in pools:
        data = pool.data
        views += [data[f * row_bytes:(f + e - s) * row_bytes]
                  for f, s, e in zip(first, starts, ends, strict=True)]
    return views


class RowViews:
    """An open row transfer (see :meth:`PagedKVCache.read_rows` and
    :meth:`PagedKVCache.write_rows`).

    Attributes:
        views: writable byte views, the key rows in token order then the value rows: their
            concatenation is the ``[2, tokens, heads, head_dim]`` array a gather of the rows
            would stack.
        tokens: rows per role.
        nbytes: bytes of all views.

    Use it as a context manager (leaving without an exception commits, with one releases),
    or call :meth:`commit` or :meth:`release` once; later calls do nothing.
    """

    __slots__ = ("views", "tokens", "nbytes", "_done")

    def __init__(self, views: list[memoryview], tokens: int, nbytes: int,
                 done: Callable[[bool], None]) -> None:
        self.views, self.tokens, self.nbytes = views, tokens, nbytes
        self._done: Callable[[bool], None] | None = done

    def commit(self) -> None:
        """End the transfer; a write's rows become part of the sequence (its length grows)."""
        self._end(True)

    def release(self) -> None:
        """End the transfer; a write's rows are dropped (the sequence keeps its length)."""
        self._end(False)

    def _end(self, commit: bool) -> None:
        done, self._done = self._done, None
        self.views = []
        if done is not None:
            done(commit)

    def __enter__(self) -> RowViews:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        self._end(exc_type is None)

    def __del__(self) -> None:  # an abandoned transfer must not pin its sequence forever
        if getattr(self, "_done", None) is not None:
            self._end(False)
