"""Debug canary allocator (``HURRAY_GPU_DEBUG_BOUNDS=1``): guard bytes around every allocation,
checked after each kernel launch and on free; a changed byte raises :class:`BoundsViolation`.

Two wrappers, installed by :class:`~hurray_gpu.runtime.device.Device` when the flag is set at
its creation: :class:`CanaryAllocator` around the backend's allocator (it pads, arms, checks
and releases, through the wrapped allocator's public methods only), and :func:`guarded`, a
subclass of the backend's Program class whose launches are checked. Nothing else in the
runtime knows about canaries.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hurray_gpu.errors import BoundsViolation, HurrayGPUError
from hurray_gpu.format.descriptor.buffers import MemoryClass
from hurray_gpu.runtime.locks import OwnedLock
from hurray_gpu.runtime.memory import Allocation, Allocator
from hurray_gpu.runtime.program import Program
from hurray_gpu.runtime.stream import Event, Stream, current_stream

if TYPE_CHECKING:
    from hurray_gpu.runtime.device import Device

__all__ = ["MIN_PAD", "CanaryAllocator", "Guard", "guarded", "pattern"]

# Guard bytes on each side, at least. It is also CUDA's pointer alignment and the largest
# minStorageBufferOffsetAlignment Vulkan allows, so the user region starts as aligned as a
# fresh allocation; OpenCL devices may ask for more (Device.offset_alignment).
MIN_PAD = 256
# How long a checked launch waits for its stream before deferring the check. A stream held
# behind an event (another stream, another process) must not deadlock the launching thread;
# a deferred check runs once its launch is seen complete (next launch, copy-out or free).
SETTLE_S = 1.0
PAGE = 4096


@functools.lru_cache(maxsize=256)
def pattern(start: int, count: int) -> bytes:
    """The canary bytes at positions ``[start, start + count)`` of a padded allocation.

    Byte ``i`` is ``(167 * i + 0x5B) ^ (i >> 8)`` mod 256: position-dependent, and every
    256-byte block holds each value once, so storing any repeated value (zeros, ones, a float
    constant) over it changes it, and the canaries before and after a buffer differ.
    """
    i = np.arange(start, start + count, dtype=np.uint64)
    return (((i * 167 + 0x5B) ^ (i >> 8)) & 0xFF).astype(np.uint8).tobytes()


@dataclass(eq=False)
class Guard:
    """The layout of one padded allocation: ``before`` canary bytes, the user's ``nbytes``,
    then ``after`` canary bytes; ``root`` is the padded allocation, ``user`` the view of it the
    caller got, ``last_kernel`` the last kernel checked on it."""

    before: int
    nbytes: int
    after: int
    root: Allocation
    user: Allocation
    last_kernel: str = ""
    # Held while the canaries are read or the memory released: a deferred check drained by
    # one thread must not read a root another thread is freeing. Owned: a collection during a
    # check can finalise this very buffer on the checking thread, whose free then waits.
    lock: OwnedLock = field(default_factory=OwnedLock)

    @property
    def total(self) -> int:
        """Bytes really allocated."""
        return self.before + self.nbytes + self.after

    def sides(self) -> tuple[tuple[str, int, int], ...]:
        """``(side, start, count)`` of both canaries, in bytes from the allocation's start."""
        return (("before", 0, self.before), ("after", self.before + self.nbytes, self.after))


class CanaryAllocator(Allocator):
    """Wraps a backend allocator so that every allocation is padded with canaries.

    The caller gets a view (``offset = pad``) of a padded root allocation of the wrapped
    allocator. Kernels get exactly the user region, so an out-of-bounds access lands in a
    canary. Peer memory is never padded: other devices address it by handle from byte 0.
    Pooling, accounting and copies are the wrapped allocator's; only allocation, release and
    the checks are this class's.

    Args:
        inner: the backend allocator to wrap.
    """

    def __init__(self, inner: Allocator) -> None:  # no pool of its own: Allocator.__init__ unused
        self.inner = inner
        self.device = inner.device
        self._guards: dict[int, Guard] = {}  # id(root) -> its guard
        self._pad = 0
        self._pending: list[tuple[Event, str, list[tuple[str, Allocation]]]] = []
        # Reentrant: a Buffer collected while this lock is held (any allocation can run the
        # GC) frees itself through free(), on the same thread.
        self._mutex = threading.RLock()
        self._stream: Stream | None = None

    # -- the wrapped allocator's state -------------------------------------------------------
    host_memory = property(lambda self: self.inner.host_memory)  # type: ignore[assignment]
    stores_data = property(lambda self: self.inner.stores_data)  # type: ignore[assignment]
    allocated_bytes = property(lambda self: self.inner.allocated_bytes)  # type: ignore[assignment]
    pooled_bytes = property(lambda self: self.inner.pooled_bytes)  # type: ignore[assignment]
    peak_bytes = property(lambda self: self.inner.peak_bytes)  # type: ignore[assignment]
    alloc_count = property(lambda self: self.inner.alloc_count)  # type: ignore[assignment]

    # The pool settings are the wrapped allocator's, read and set through.
    pool_limit = property(lambda self: self.inner.pool_limit,  # type: ignore[assignment]
                          lambda self, v: setattr(self.inner, "pool_limit", v))
    pool_idle_budget = property(lambda self: self.inner.pool_idle_budget,  # type: ignore[assignment]
                                lambda self, v: setattr(self.inner, "pool_idle_budget", v))
    pool_idle_seconds = property(lambda self: self.inner.pool_idle_seconds,  # type: ignore[assignment]
                                 lambda self, v: setattr(self.inner, "pool_idle_seconds", v))

    @property
    def stream(self) -> Stream:
        """A private stream for canary reads and writes.

        The user's current stream may be held behind an event; canary I/O happens only on
        memory no queued work touches (fresh, or after its launch completed), so it never
        waits for the user's streams and cannot deadlock on them.
        """
        if self._stream is None:
            with self._mutex:
                if self._stream is None:
                    self._stream = Stream(self.device)
        return self._stream

    @property
    def pad(self) -> int:
        """Canary bytes on each side: a multiple of MIN_PAD and of the device's view alignment.

        Read lazily: backends build their allocator before the device knows its limits.
        """
        if not self._pad:
            align = max(1, int(self.device.offset_alignment))
            self._pad = math.lcm(MIN_PAD, align)
        return self._pad

    def pad_for(self, memory_class: MemoryClass) -> int:
        """Canary bytes per side for ``memory_class``: whole pages for host_pinned memory,
        which every backend hands out page aligned."""
        return math.lcm(self.pad, PAGE) if memory_class == MemoryClass.HOST_PINNED else self.pad

    # -- Allocator interface -----------------------------------------------------------------
    def alloc(self, nbytes: int, memory_class: MemoryClass | int | str = 0) -> Allocation:
        """Allocate ``nbytes`` padded with armed canaries; returns the caller's view."""
        mclass = self.inner.check_request(nbytes, memory_class)  # the caller's size
        if nbytes == 0 or mclass == MemoryClass.PEER:
            return self.inner.alloc(nbytes, mclass)
        pad = self.pad_for(mclass)
        root = self.inner.alloc(nbytes + 2 * pad, mclass)
        try:
            user = self.inner.view(root, pad, nbytes)
            guard = Guard(pad, nbytes, pad, root, user)
            self._arm(guard)
        except BaseException:
            self.inner.free(root)
            raise
        with self._mutex:
            self._guards[id(root)] = guard
        return user

    def take(self, nbytes: int, mclass: MemoryClass) -> Allocation:
        return self.alloc(nbytes, mclass)  # padded: the inner allocator's pool is not this one's

    def free(self, allocation: Allocation) -> None:
        """Free the caller's ``allocation``: check its canaries, then free its padded root.

        Raises:
            BoundsViolation: a canary changed since the last check (the memory is still freed).
        """
        root = allocation.root
        with self._mutex:
            guard = self._guards.get(id(root))
            if guard is not None and guard.user is allocation:
                del self._guards[id(root)]
        if guard is None:
            self.inner.free(allocation)
            return
        if guard.user is not allocation:
            return  # a view of a guarded buffer: nothing to free
        allocation.freed = True
        if not guard.lock.enter():  # finalised by a collection inside its own check
            guard.lock.defer(self._release, guard)
            return
        try:
            self._release(guard)
        finally:
            guard.lock.release()

    def _release(self, guard: Guard) -> None:
        """Under ``guard.lock``: check the canaries of a freed guard, free its padded root.

        Raises:
            BoundsViolation: a canary changed since the last check.
        """
        try:
            # Work still queued on it (a stream held behind an event) may yet write it: the
            # check is skipped then, and the memory's next owner gets fresh canaries.
            found = self.find(guard) if _settle(_record(self.device)) else None
        finally:
            self.inner.free(guard.root)
        if found is not None:
            last = guard.last_kernel or "none"
            raise BoundsViolation(
                f"(unknown; detected on free, last kernel checked: {last})", "(freed buffer)",
                found[0], found[1], guard.nbytes,
                fix="something wrote outside the buffer after its last checked kernel: look "
                    "for launches that bypass Program, or raw writes through a view.")

    def copyin(self, dest: Allocation, src: Any) -> None:
        self.inner.copyin(dest, src)

    def copyout(self, dest: Any, src: Allocation) -> None:
        self.inner.copyout(dest, src)
        self.drain()  # the host reads results: run finished deferred checks

    def copy(self, dest: Allocation, src: Allocation) -> None:
        self.inner.copy(dest, src)

    def view(self, allocation: Allocation, offset: int, nbytes: int) -> Allocation:
        return self.inner.view(allocation, offset, nbytes)

    def pieces(self, allocation: Allocation) -> Any:
        return self.inner.pieces(allocation)

    def host_array(self, allocation: Allocation) -> np.ndarray | None:
        return self.inner.host_array(allocation)

    def host_view(self, allocation: Allocation) -> np.ndarray | None:
        return self.inner.host_view(allocation)

    def wrap(self, array: np.ndarray) -> Allocation:
        return self.inner.wrap(array)

    def free_cache(self) -> None:
        self.inner.free_cache()

    def stats(self) -> dict[str, int]:
        return self.inner.stats()

    # -- checks --------------------------------------------------------------------------------
    def guard_of(self, allocation: Allocation) -> Guard | None:
        """The guard of the padded allocation ``allocation`` (or a view of it) lies in."""
        return self._guards.get(id(allocation.root))

    def _arm(self, guard: Guard) -> None:
        with self.stream:
            for _, start, count in guard.sides():
                part = self.inner.view(guard.root, start, count)
                self.inner.copyin(part, pattern(start, count))

    def find(self, guard: Guard) -> tuple[str, int] | None:
        """The first corrupted canary byte of ``guard``'s allocation: ``(side, offset from the
        user's byte 0)``, or None when both canaries are intact."""
        for side, start, count in guard.sides():
            got = bytearray(count)
            with self.stream:
                self.inner.copyout(got, self.inner.view(guard.root, start, count))
            want = pattern(start, count)
            if got == want:
                continue
            bad = np.flatnonzero(np.frombuffer(got, np.uint8) != np.frombuffer(want, np.uint8))
            if bad.size:
                return side, start + int(bad[0]) - guard.before
        return None

    def check(self, kernel: str, named: Iterable[tuple[str, Allocation]]) -> None:
        """Check the canaries of every buffer a launch of ``kernel`` used (device synced).

        Args:
            kernel: the kernel name.
            named: ``(parameter name, allocation)`` per buffer argument.

        Raises:
            BoundsViolation: a canary changed; it is re-armed, so the next launch is checked
                afresh.
        """
        seen: set[int] = set()
        first: BoundsViolation | None = None
        for name, allocation in named:
            guard = self.guard_of(allocation)
            if guard is None or id(guard) in seen:
                continue
            seen.add(id(guard))
            with guard.lock:
                if guard.root.freed:  # freed since (by another thread): its free checked it
                    continue
                guard.last_kernel = kernel
                found = self.find(guard)
                if found is not None:
                    self._arm(guard)
                    first = first or BoundsViolation(kernel, name, found[0], found[1],
                                                     guard.nbytes)
        if first is not None:
            raise first

    def after_launch(self, kernel: str, named: list[tuple[str, Allocation]]) -> None:
        """Check a launch's buffers once its stream has run it (deferred if it does not
        finish within SETTLE_S), and any earlier deferred launch that has finished since.

        Raises:
            BoundsViolation: a canary changed.
        """
        event = _record(self.device)
        with self._mutex:
            self._pending.append((event, kernel, named))
        _settle(event)
        self.drain()

    def drain(self) -> None:
        """Run the deferred checks whose launches have finished (never waits).

        Raises:
            BoundsViolation: the first changed canary found.
        """
        if not self._pending:
            return
        with self._mutex:
            ready = [item for item in self._pending if _done(item[0])]
            self._pending = [item for item in self._pending if not any(item is r for r in ready)]
        first: BoundsViolation | None = None
        for _, kernel, named in ready:
            try:
                self.check(kernel, named)
            except BoundsViolation as exc:
                first = first or exc
        if first is not None:
            raise first


class _GuardedLaunch(Program):
    """Checks the canaries of every buffer argument once a launch has run.

    A launch that fails (e.g. a Vulkan window fault) is checked too: a changed canary is the
    more precise report, so BoundsViolation replaces the error (chained to it).
    """

    host_call = Program.host_call  # no unguarded shortcut

    def _launch(self, buffers: list[Allocation], scalars: Sequence[np.generic],
                global_size: tuple[int, int, int], local_size: tuple[int, int, int],
                wait: bool) -> float | None:
        canary: CanaryAllocator = self.device.allocator  # type: ignore[assignment]
        named = [(p.name, a) for p, a in zip(self.kernel.buffers, buffers, strict=True)]
        try:
            result = super()._launch(buffers, scalars, global_size, local_size, wait)
        except HurrayGPUError as exc:
            try:
                canary.after_launch(self.kernel.name, named)
            except BoundsViolation as violation:
                raise violation from exc
            raise
        canary.after_launch(self.kernel.name, named)
        return result


_GUARDED: dict[type[Program], type[Program]] = {}


def guarded(program_cls: type[Program]) -> type[Program]:
    """``program_cls`` with canary-checked launches (one class per backend Program class)."""
    cls = _GUARDED.get(program_cls)
    if cls is None:
        cls = _GUARDED[program_cls] = type(f"Guarded{program_cls.__name__}",
                                           (_GuardedLaunch, program_cls), {})
    return cls


def _record(device: Device) -> Event:
    return current_stream(device).record()


def _done(event: Event) -> bool:
    try:
        return event.query()
    except HurrayGPUError:  # the work failed: nothing more will change, check what it left
        return True


def _settle(event: Event) -> bool:
    """Poll ``event`` until it completes (True) or SETTLE_S seconds pass (False)."""
    deadline, delay = time.monotonic() + SETTLE_S, 1e-5
    while not _done(event):
        if time.monotonic() > deadline:
            return False
        time.sleep(delay)
        delay = min(2 * delay, 5e-3)
    return True
