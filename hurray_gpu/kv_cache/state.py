"""The host allocator's records: sequences, append plans, and the out-of-pages error.

Split from allocator.py, which re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hurray_gpu.errors import HurrayGPUError

__all__ = ["MAX_SEQ_TOKENS", "AppendPlan", "OutOfPagesError", "Reusable", "SeqState"]

# Most tokens one sequence may hold: keeps every slot index inside a u32.
MAX_SEQ_TOKENS = 2**31


class OutOfPagesError(HurrayGPUError, MemoryError):
    """The page pool cannot supply the pages an operation needs.

    Args:
        needed: pages the operation needs.
        available: pages free or reclaimable now.
        total: pages in the pool.
    """

    def __init__(self, needed: int, available: int, total: int, *, fix: str | None = None) -> None:
        self.needed, self.available, self.total = needed, available, total
        super().__init__(
            f"out of KV cache pages: need {needed}, {available} available of {total}.",
            fix=fix or "free or swap out sequences, or build the cache with more num_pages.")
        self._args = (needed, available, total)
        self._kwargs = {"fix": fix}


@dataclass
class SeqState:
    """One sequence: its block table, tokens written per layer, and prefix-cache state."""

    pages: list[int]
    lens: list[int]
    tokens: list[int] = field(default_factory=list)
    hashes: list[bytes] = field(default_factory=list)
    swapped: object | None = None
    swapped_pages: int = 0

    @property
    def length(self) -> int:
        """Tokens of the longest layer."""
        return max(self.lens, default=0)


@dataclass
class AppendPlan:
    """What an append will do: the slot of every token, page copies, pages taken."""

    slots: np.ndarray  # int64 slot of every token, in order
    cow: list[tuple[int, int]]
    new_pages: dict[int, list[int]]
    replaced: dict[int, dict[int, int]]
    take_free: int
    evict: list[int]
    counts: dict[int, int]
    layer: int
    states: list[SeqState] = field(default_factory=list)
    key: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
    uniform: bool = False  # every layer of every sequence had the same length when planned
    reused: bool = False  # a later layer of an already committed plan: lengths only
    upload: Any = None  # the slots on the device, kept by the cache for reuse
    cow_rows: list[int] = field(default_factory=list)  # rows of each cow page in use


@dataclass
class Reusable:
    """The last committed plan, reusable for the other layers of the same batch."""

    version: int
    plan: AppendPlan
    done: set[int]
