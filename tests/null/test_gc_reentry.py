"""A garbage collection inside a locked section frees buffers without deadlocking.

Python collects garbage cycles on whichever thread allocates, inside a locked section too, and
a collected buffer frees its memory from its finaliser on that thread. These tests place a
collection at a fixed point inside each section a finaliser's free needs (the allocator pool's
and a debug canary's), with a garbage cycle holding a live allocation, and run the section on a
worker thread: a deadlock shows as a thread that never finishes (each test uses a private
allocator, so a stuck thread holds nothing the rest of the suite needs).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import Any

import pytest

import hurray_gpu as hg
from hurray_gpu.backends.cpu import CPUAllocator
from hurray_gpu.backends.null import NullAllocator, NullDevice
from hurray_gpu.errors import HurrayGPUError
from hurray_gpu.runtime import canary as canary_mod
from hurray_gpu.runtime.canary import CanaryAllocator
from hurray_gpu.runtime.locks import OwnedLock
from hurray_gpu.runtime.memory import Allocation, Allocator

JOIN_S = 30.0


class _Doomed:
    """A garbage cycle holding an allocation; freeing it is its finaliser's job, as a
    collected Buffer's is."""

    def __init__(self, allocator: Allocator, allocation: Allocation) -> None:
        self.me = self
        self.allocator, self.allocation = allocator, allocation

    def __del__(self) -> None:
        self.allocator.free(self.allocation)


def _doom(allocator: Allocator, allocation: Allocation) -> None:
    _Doomed(allocator, allocation)  # unreachable at once: only a collection frees it


class _CollectingPool(dict):  # type: ignore[type-arg]
    """The allocator's pool dict; armed, its next ``get`` (inside the pool's locked section in
    both take and free) runs a full collection first, as any allocation there may."""

    armed = False

    def get(self, key: Any, default: Any = None) -> Any:
        if self.armed:
            self.armed = False
            gc.collect()
        return super().get(key, default)


def _finishes(fn: Callable[[], object]) -> object:
    """Run ``fn`` on a daemon thread; its result, or a failure if it does not finish."""
    out: list[object] = []
    worker = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    worker.start()
    worker.join(JOIN_S)
    assert not worker.is_alive(), "deadlocked: a collection's free waited for its own thread"
    assert out, "the section raised (see the thread's traceback above)"
    return out[0]


def _pool_allocator() -> tuple[NullAllocator, _CollectingPool]:
    allocator = NullAllocator(NullDevice())
    pool = _CollectingPool()
    allocator._pool = pool
    return allocator, pool


@pytest.mark.parametrize("section", ["free", "take"])
def test_collection_inside_the_pool_section(section: str) -> None:
    allocator, pool = _pool_allocator()
    other = allocator.alloc(512)
    doomed = allocator.alloc(256)
    _doom(allocator, doomed)
    pool.armed = True
    if section == "free":
        _finishes(lambda: allocator.free(other))
        assert allocator.pooled_bytes == 768 and allocator.allocated_bytes == 0
    else:
        got = _finishes(lambda: allocator.alloc(256))
        assert isinstance(got, Allocation) and got.nbytes == 256
        # The collected allocation was pooled after the section: the next 256 reuses it.
        assert allocator.pooled_bytes == 256 and allocator.allocated_bytes == 768
        again = allocator.alloc(256)
        assert again.raw is doomed.raw and allocator.pooled_bytes == 0
    assert doomed.freed and not pool.armed


def test_collection_inside_a_canary_check_of_the_collected_buffer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The debug allocator checks a launch's buffers under each buffer's guard lock; the buffer
    # being checked may be garbage by then (the check was deferred), and the collection that
    # finalises it can run inside its own check.
    inner = CPUAllocator(hg.device("cpu"))
    debug = CanaryAllocator(inner)
    user = debug.alloc(256)
    root = user.root
    _doom(debug, user)
    real = canary_mod.pattern
    armed = [True]

    def collecting_pattern(start: int, count: int) -> bytes:  # called while the check reads
        if armed[0]:
            armed[0] = False
            gc.collect()
        return real(start, count)

    monkeypatch.setattr(canary_mod, "pattern", collecting_pattern)
    _finishes(lambda: debug.check("kernel", [("out", user)]))
    assert not armed[0] and user.freed and root.freed
    assert inner.allocated_bytes == 0 and inner.pooled_bytes == root.nbytes


def test_owned_lock_defers_until_release_and_refuses_a_second_hold() -> None:
    lock, ran = OwnedLock(), []
    with lock:
        assert lock.held_here() and not lock.enter()
        lock.defer(ran.append, 1)
        assert ran == []
        assert _finishes(lock.held_here) is False  # another thread is not the holder
        with pytest.raises(HurrayGPUError, match="Fix: take it with enter"):
            lock.__enter__()
    assert ran == [1] and not lock.held_here() and lock.enter()
    lock.release()


def test_a_deferred_failure_is_a_warning_not_an_error_of_the_section() -> None:
    lock = OwnedLock()

    def fails() -> None:
        raise ValueError("boom")

    with pytest.warns(RuntimeWarning, match="boom"), lock:
        lock.defer(fails)
