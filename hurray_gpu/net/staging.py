"""The ring of host slots a device get receives through (see :class:`Staging`): the host
holds a few slots, never the whole tensor, and each full slot's copy to the device overlaps
the receive of the next.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from hurray_gpu.parts import release
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.hostmem import aligned_empty
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.stream import Event, Stream

STAGING_SLOT = 8 << 20  # bytes per slot of the ring a device get receives through
STAGING_DEPTH = 3  # slots: one receiving while the others' copies to the device run

# Devices whose pinned memory proved to have no host view: their rings use plain host slots.
_UNMAPPED: weakref.WeakSet[Any] = weakref.WeakSet()


class Staging:
    """A ring of STAGING_DEPTH host slots a device get receives into, so the host holds a few
    slots, never the whole tensor, and each full slot's copy to the device overlaps the
    receive of the next.

    Where the device maps pinned memory into the process (Vulkan host-visible coherent memory,
    CUDA and ROCm pinned memory: :meth:`Allocator.host_view`), the slots are HOST_PINNED
    Buffers on the device: the socket writes into them in place and the device copies each
    to its destination on a stream of the ring's own (a DMA on a GPU), an event per slot
    saying when it may be refilled. Elsewhere (OpenCL, WebGPU) they are plain host memory
    that a worker thread copies in (``Buffer.copyin``).
    """

    def __init__(self, buffers: Sequence[Buffer], stream: Stream) -> None:
        self.buffers, self.stream = buffers, stream
        size = min(STAGING_SLOT, max((b.nbytes for b in buffers), default=0))
        # Per slot: what waits for its last copy (an event's synchronize, a future's result).
        self.pending: list[Any] = [None] * STAGING_DEPTH
        # the caller synchronised the host
        self.pinned, self.arrays = self._pin(stream.device, size)
        if not self.pinned:
            self.arrays = [aligned_empty(size) for _ in range(STAGING_DEPTH)]
            self.pool = ThreadPoolExecutor(1, thread_name_prefix="hurray-staging")

    def _pin(self, device: Any, size: int) -> tuple[list[Buffer], list[np.ndarray]]:
        """HOST_PINNED slots and their host views, or none when the device maps none."""
        if not size or MemoryClass.HOST_PINNED not in device.memory_classes \
                or device in _UNMAPPED:
            return [], []
        slots: list[Buffer] = []
        views: list[np.ndarray] = []
        try:
            while len(slots) < STAGING_DEPTH:
                slots.append(Buffer(device, size, MemoryClass.HOST_PINNED))
                view = device.allocator.host_view(slots[-1].allocation)
                if view is None:  # this device's pinned memory is not host-addressable
                    _UNMAPPED.add(device)
                    release(slots)
                    return [], []
                views.append(view)
        except BaseException:
            release(slots)
            raise
        return slots, views

    def views(self) -> Iterator[memoryview]:
        """The slots in turn; resuming after one queues its copy (the last one's: see
        :meth:`finish`)."""
        self.filling = self._fill()
        return self.filling

    def _fill(self) -> Iterator[memoryview]:
        k = 0
        for buf in self.buffers:
            for start in range(0, buf.nbytes, STAGING_SLOT):
                i, k = k % STAGING_DEPTH, k + 1
                if (prior := self.pending[i]) is not None:
                    prior()  # the slot's previous copy is done: reuse it
                n = min(STAGING_SLOT, buf.nbytes - start)
                yield self.arrays[i][:n].data
                self.pending[i] = self._copy(i, buf, start, n)

    def _copy(self, i: int, buf: Buffer, start: int, n: int) -> Any:
        """Queue slot ``i``'s first ``n`` bytes to ``buf`` at ``start``; returns its wait."""
        if not self.pinned:
            return self.pool.submit(buf.copyin, self.arrays[i][:n], start).result
        allocator = buf.device.allocator
        with self.stream:
            allocator.copy(allocator.view(buf.allocation, start, n),
                           allocator.view(self.pinned[i].allocation, 0, n))
            return Event(buf.device, timing=False).record(self.stream).synchronize

    def finish(self, received: bool) -> None:
        """Queue the last slot's copy (when all was ``received``), wait for every copy and
        free the slots (after a failure too: none is still in use when they go)."""
        try:
            if received:
                next(self.filling, None)
            for wait in self.pending:
                if wait is not None:
                    wait()
        finally:
            if self.pinned:
                try:
                    self.stream.synchronize()
                finally:
                    self.arrays = []
                    release(self.pinned)
            else:
                self.pool.shutdown()


__all__ = ["STAGING_DEPTH", "STAGING_SLOT", "Staging"]
