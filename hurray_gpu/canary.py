"""Debug canary allocator (``HURRAY_GPU_DEBUG_BOUNDS=1``): guard bytes around every allocation,
checked after each kernel launch and on free; a changed byte raises :class:`BoundsViolation`.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hurray_gpu.errors import BoundsViolation, HurrayGPUError
from hurray_gpu.format.descriptor.buffers import MemoryClass

if TYPE_CHECKING:
    from hurray_gpu.device import Allocation, Allocator, Device
    from hurray_gpu.sync.event import Event
    from hurray_gpu.sync.stream import Stream

__all__ = ["MIN_PAD", "Canary", "Guard", "named_buffers", "pattern"]

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
    then ``after`` canary bytes; ``last_kernel`` is the last kernel checked on it."""

    before: int
    nbytes: int
    after: int
    last_kernel: str = ""

    @property
    def total(self) -> int:
        """Bytes really allocated."""
        return self.before + self.nbytes + self.after

    def sides(self) -> tuple[tuple[str, int, int], ...]:
        """``(side, start, count)`` of both canaries, in bytes from the allocation's start."""
        return (("before", 0, self.before), ("after", self.before + self.nbytes, self.after))


class Canary:
    """The canary policy of one allocator: pads, arms, checks and releases guarded buffers.

    The user sees a view (``offset = pad``) of a padded root allocation; both carry the
    :class:`Guard`. Kernels get exactly the user region, so an out-of-bounds access lands in
    the canary. Peer memory is never padded: other devices address it by handle from byte 0.

    Args:
        allocator: the allocator whose backend hooks read and write the canaries.
    """

    def __init__(self, allocator: Allocator) -> None:
        self.allocator = allocator
        self._pad = 0
        self._pending: list[tuple[Event, str, list[tuple[str, Allocation]]]] = []
        self._lock = threading.Lock()
        self._stream: Stream | None = None

    @property
    def stream(self) -> Stream:
        """A private stream for canary reads and writes.

        The user's current stream may be held behind an event; canary I/O happens only on
        memory no queued work touches (fresh, or after its launch completed), so it never
        waits for the user's streams and cannot deadlock on them.
        """
        if self._stream is None:
            from hurray_gpu.sync.stream import Stream

            with self._lock:
                if self._stream is None:
                    self._stream = Stream(self.allocator.device)
        return self._stream

    @property
    def pad(self) -> int:
        """Canary bytes on each side: a multiple of MIN_PAD and of the device's view alignment.

        Read lazily: backends build their allocator before the device knows its limits.
        """
        if not self._pad:
            align = max(1, int(self.allocator.device.offset_alignment))
            self._pad = math.lcm(MIN_PAD, align)
        return self._pad

    def pad_for(self, memory_class: MemoryClass) -> int:
        """Canary bytes per side for ``memory_class``: whole pages for host_pinned memory,
        which every backend hands out page aligned."""
        return math.lcm(self.pad, PAGE) if memory_class == MemoryClass.HOST_PINNED else self.pad

    def guards(self, memory_class: MemoryClass) -> bool:
        """True when allocations of ``memory_class`` are padded."""
        return memory_class != MemoryClass.PEER

    def padded_size(self, nbytes: int, memory_class: MemoryClass) -> int:
        """Bytes to really allocate for a guarded ``nbytes`` buffer."""
        return nbytes + 2 * self.pad_for(memory_class)

    def wrap(self, raw: Any, nbytes: int, memory_class: MemoryClass, fresh: bool) -> Allocation:
        """Return the user's view of the padded ``raw``, arming the canaries when ``fresh``.

        A pooled root keeps its canaries: the pool is keyed by the padded size, so its layout
        is the same, and they were checked (and re-armed if changed) when it was freed.
        Re-arming would have to wait for streams still using it.
        """
        from hurray_gpu.device import Allocation

        pad = self.pad_for(memory_class)
        guard = Guard(pad, nbytes, pad)
        root = Allocation(raw, guard.total, memory_class, guard=guard)
        if fresh:
            self._arm(root)
        user = self.allocator._offset(raw, guard.before, nbytes)
        return Allocation(user, nbytes, memory_class, base=root, offset=guard.before, guard=guard)

    def _arm(self, root: Allocation) -> None:
        alloc = self.allocator
        with self.stream:
            for _, start, count in root.guard.sides():  # type: ignore[union-attr]
                data = memoryview(pattern(start, count))
                alloc._copyin(alloc._offset(root.raw, start, count), data)

    def find(self, root: Allocation) -> tuple[str, int] | None:
        """The first corrupted canary byte of ``root``: ``(side, offset from the user's byte
        0)``, or None when both canaries are intact."""
        guard: Guard = root.guard  # type: ignore[assignment]
        alloc = self.allocator
        for side, start, count in guard.sides():
            got = bytearray(count)
            with self.stream:
                alloc._copyout(memoryview(got), alloc._offset(root.raw, start, count))
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
            root = allocation.root
            guard = root.guard
            if guard is None or root.freed or id(root) in seen:
                continue
            seen.add(id(root))
            guard.last_kernel = kernel
            found = self.find(root)
            if found is not None:
                self._arm(root)
                first = first or BoundsViolation(kernel, name, found[0], found[1], guard.nbytes)
        if first is not None:
            raise first

    def after_launch(self, device: Device, kernel: str,
                     named: list[tuple[str, Allocation]]) -> None:
        """Check a launch's buffers once its stream has run it (deferred if it does not
        finish within SETTLE_S), and any earlier deferred launch that has finished since.

        Raises:
            BoundsViolation: a canary changed.
        """
        event = _record(device)
        with self._lock:
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
        with self._lock:
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

    def release(self, allocation: Allocation) -> None:
        """Free the user's ``allocation``: check its canaries, then pool its padded root.

        Raises:
            BoundsViolation: a canary changed since the last check (the memory is still freed).
        """
        root: Allocation = allocation.base  # type: ignore[assignment]
        guard: Guard = root.guard  # type: ignore[assignment]
        allocation.freed = root.freed = True
        try:
            # Work still queued on it (a stream held behind an event) may yet write it: the
            # check is skipped then, and the buffer's next owner's first check covers it.
            found = self.find(root) if _settle(_record(self.allocator.device)) else None
            if found is not None:
                self._arm(root)
        finally:
            self.allocator._release(root.raw, root.nbytes, root.memory_class)
        if found is not None:
            last = guard.last_kernel or "none"
            raise BoundsViolation(
                f"(unknown; detected on free, last kernel checked: {last})", "(freed buffer)",
                found[0], found[1], guard.nbytes,
                fix="something wrote outside the buffer after its last checked kernel: look "
                    "for launches that bypass Program, or raw writes through a view.")


def _record(device: Device) -> Event:
    from hurray_gpu.sync.stream import current_stream

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


def named_buffers(kernel: Any, buffers: Sequence[Allocation]) -> list[tuple[str, Allocation]]:
    """``(parameter name, allocation)`` for each buffer argument of a launch of ``kernel``."""
    return [(p.name, a) for p, a in zip(kernel.buffers, buffers, strict=True)]
