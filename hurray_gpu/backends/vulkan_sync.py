"""Vulkan streams and events on timeline semaphores (Vulkan 1.2 core): a stream is the run of
submissions signalling its semaphore 1, 2, 3...; an event is a (semaphore, value) point.

Built on ``vulkan_context`` (the queue, memory and the submission helpers); ``vulkan`` (the
Device) builds on both.
"""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any

from hurray_gpu.backends.vulkan_context import (
    FENCE_TIMEOUT_NS,
    call,
    create_memory,
    destroy_memory,
    host_signal,
    no_collection,
    submit_info,
)
from hurray_gpu.errors import DeviceError, UnsupportedOpError
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.stream import Event, Stream, current_stream

__all__ = ["PoolPoints", "VkEvent", "VkStream", "counter", "create_timeline", "host_wait"]

_FIX_DRIVER = "check the Vulkan driver (vulkaninfo); a hung stream usually waits on an event " \
              "nothing will signal."


def create_timeline(ctx: Any, initial: int = 0) -> Any:
    """A new timeline VkSemaphore at ``initial`` (the caller destroys it)."""
    vk = ctx.vk
    kind = ctx._info("SEMAPHORE_TYPE_CREATE_INFO", semaphoreType=vk.VK_SEMAPHORE_TYPE_TIMELINE,
                     initialValue=initial)
    return call(vk.vkCreateSemaphore, ctx.device, ctx._info("SEMAPHORE_CREATE_INFO", pNext=kind),
                None)


def host_wait(ctx: Any, points: list[tuple[Any, int]], timeout_ns: int = FENCE_TIMEOUT_NS) -> None:
    """Block until every (timeline semaphore, value) point is reached (wait-before-signal ok).

    Raises:
        DeviceError: the wait timed out or the driver failed.
    """
    if not points:
        return
    vk = ctx.vk
    info = ctx._info("SEMAPHORE_WAIT_INFO", semaphoreCount=len(points),
                     pSemaphores=[s for s, _ in points], pValues=[v for _, v in points])
    try:
        vk.vkWaitSemaphores(ctx.device, info, timeout_ns)
    except vk.VkTimeout as exc:
        raise DeviceError(f"timeline semaphore wait timed out after {timeout_ns / 1e9:.0f} s",
                          fix=_FIX_DRIVER) from exc
    except (vk.VkError, vk.VkException) as exc:
        raise DeviceError(f"vkWaitSemaphores failed: {exc!r}", fix=_FIX_DRIVER) from exc


def counter(ctx: Any, semaphore: Any) -> int:
    """The current value of a timeline semaphore."""
    return int(call(ctx.vk.vkGetSemaphoreCounterValue, ctx.device, semaphore))


class _Points(list):  # type: ignore[type-arg]
    """Pending (semaphore, value) waits plus the lanes that own those semaphores: a lane
    destroys its semaphore when collected, so whoever holds the waits holds the lanes."""

    keep: list[Any]

    def __init__(self) -> None:
        super().__init__()
        self.keep = []


class _Item:
    __slots__ = ("cmd", "waits", "signal", "cleanup")

    def __init__(self, cmd: Any, waits: list[tuple[Any, int]], signal: tuple[Any, int],
                 cleanup: Callable[[], None] | None) -> None:
        self.cmd, self.waits, self.signal, self.cleanup = cmd, waits, signal, cleanup


class _Lane:
    """A stream's native state: its timeline semaphore and, off the default stream, a command
    pool, a fault word and the submitting thread. Events keep it alive for the semaphore."""

    def __init__(self, ctx: Any, threaded: bool) -> None:
        self.ctx = ctx
        self.sem = create_timeline(ctx)
        ctx.lanes.add(self)  # the device's close destroys what is left
        self.value = 0  # the last value promised to a submission
        # Reentrant: a collection inside a locked section may free a pooled Buffer, whose
        # free records an event on this same lane.
        self.lock = threading.RLock()
        self.waits = _Points()
        self.error: BaseException | None = None
        self.deferred: list[tuple[int, Callable[[], Any]]] = []  # frees due at a value
        self.pool: Any = None
        self.items: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.stopping = False
        if threaded:
            info = ctx._info("COMMAND_POOL_CREATE_INFO", queueFamilyIndex=ctx.queue_family,
                             flags=ctx.vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT)
            self.pool = call(ctx.vk.vkCreateCommandPool, ctx.device, info, None)
            self.fault = create_memory(ctx, 4, MemoryClass.HOST_PINNED)
            self.thread = threading.Thread(target=self._work, name="hurray-vk-stream",
                                           daemon=True)
            self.thread.start()

    def _work(self) -> None:
        while True:
            item = self.items.get()
            if item is None:
                break
            self._run(item)
            # Dropped before blocking for the next: a finished submission's waits hold other
            # streams' lanes (their semaphores), which an idle stream must not keep alive.
            del item
        self.purge(self.value)
        ctx = self.ctx
        if self.pool is not None and getattr(ctx, "device", None) is not None:
            ctx.vk.vkDestroyCommandPool(ctx.device, self.pool, None)
            destroy_memory(ctx, self.fault)
        self.pool = None

    def stop(self) -> None:
        """Let the thread finish the queued work, free the pool and exit (no host wait)."""
        with self.lock:
            stopping, self.stopping = self.stopping, True
        if self.thread is not None and not stopping:
            self.items.put(None)

    def _run(self, item: _Item) -> None:
        ctx, vk = self.ctx, self.ctx.vk
        submitted = False
        try:
            host_wait(ctx, item.waits)
            self.fault.mapped[:4] = 0  # type: ignore[index]
            fence = call(vk.vkCreateFence, ctx.device, ctx._info("FENCE_CREATE_INFO"), None)
            try:
                info = submit_info(ctx, item.cmd, item.waits, item.signal)
                with no_collection(), ctx.queue_lock:  # a finaliser's copy would submit too
                    call(vk.vkQueueSubmit, ctx.queue, 1, [info], fence)
                submitted = True
                call(vk.vkWaitForFences, ctx.device, 1, [fence], vk.VK_TRUE, FENCE_TIMEOUT_NS)
            finally:
                vk.vkDestroyFence(ctx.device, fence, None)
            if int(self.fault.mapped[:4].view("<u4")[0]):  # type: ignore[index]
                raise UnsupportedOpError(
                    "a kernel on this stream indexed outside its buffers; its outputs are "
                    "not valid", fix="check the kernel's extents() and index arithmetic.")
        except BaseException as exc:  # noqa: BLE001 - kept, raised by synchronize()
            with self.lock:
                self.error = self.error or exc
            if not submitted:  # waiters must not hang on a value nothing will signal
                with contextlib.suppress(Exception):
                    host_signal(ctx, *item.signal)
        finally:
            with self.lock:
                vk.vkFreeCommandBuffers(ctx.device, self.pool, 1, [item.cmd])
            self.purge(item.signal[1])
            if item.cleanup is not None:
                with contextlib.suppress(Exception):
                    item.cleanup()

    def enqueue(self, record: Callable[[Any], None], cleanup: Callable[[], None] | None) -> int:
        """Record ``record`` now, queue it for the thread; returns the value it signals."""
        ctx, vk = self.ctx, self.ctx.vk
        alloc = ctx._info("COMMAND_BUFFER_ALLOCATE_INFO", commandPool=self.pool,
                          level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1)
        fresh = _Points()
        with self.lock:
            if self.stopping:  # no thread would ever submit it: a later wait would hang
                raise DeviceError("work queued on a closed Vulkan stream",
                                  fix="queue it on an open stream, e.g. hg.Stream(device).")
            cmd = call(vk.vkAllocateCommandBuffers, ctx.device, alloc)[0]
            try:
                ctx.record_into(cmd, record)
            except BaseException:
                vk.vkFreeCommandBuffers(ctx.device, self.pool, 1, [cmd])
                raise
            with no_collection():  # values reach the thread in the order they are taken
                waits, self.waits = self.waits, fresh
                self.value += 1
                signal = (self.sem, self.value)
                self.items.put(_Item(cmd, waits, signal, cleanup))
        return signal[1]

    def defer(self, value: int, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the stream thread once the submission signalling ``value`` ran."""
        with self.lock:
            self.deferred.append((value, fn))

    def purge(self, reached: int) -> None:
        """Run (once) the deferred frees due at or before the ``reached`` value."""
        with self.lock:
            done = [f for v, f in self.deferred if v <= reached]
            self.deferred = [(v, f) for v, f in self.deferred if v > reached]
        for fn in done:
            with contextlib.suppress(Exception):
                fn()

    def close(self) -> None:
        """Finish the queued work and stop the thread, which frees the pool (idempotent).

        The semaphore stays: another stream's queued wait or an event may still name it (they
        hold the lane), so it goes with the lane (:meth:`release`, when collected) or the device.
        """
        self.stop()
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        ctx = self.ctx
        if getattr(ctx, "device", None) is None or self.sem is None:
            return
        host_wait(ctx, [(self.sem, self.value)])
        self.purge(self.value)

    def release(self) -> None:
        """Close, then destroy the semaphore: only once nothing can wait on it any more."""
        self.close()
        ctx = self.ctx
        if getattr(ctx, "device", None) is not None and self.sem is not None:
            ctx.vk.vkDestroySemaphore(ctx.device, self.sem, None)
            self.sem = None

    def __del__(self) -> None:
        # Only reachable once the thread has exited (it holds the lane) and no event or wait
        # holds it.
        with contextlib.suppress(Exception):
            self.release()


class VkStream(Stream):
    """A timeline of submissions; the default stream submits and waits on the calling thread.

    ``Event.wait(stream)`` adds the event's point to the wait list of the stream's next
    submission. A non-default stream hands its submissions to the queue from its own thread,
    in order, once their waits are signalled: the hardware queue is FIFO (lavapipe has one),
    so a submission blocked on a semaphore inside it would stall every other stream.
    """

    def __init__(self, device: Any = None, *, _default: bool = False) -> None:
        super().__init__(device, _default=_default)
        ctx = self.ctx = self.device.ctx  # type: ignore[attr-defined]
        if ctx.current is None:
            ctx.current = functools.partial(current_stream, self.device)
        self.lane = _Lane(ctx, threaded=not _default)
        ctx.streams.add(self)

    @property
    def handle(self) -> Any:
        """The stream's timeline VkSemaphore."""
        return self.lane.sem

    def enqueue(self, record: Callable[[Any], None], *,
                cleanup: Callable[[], None] | None = None, wait: bool = False) -> int:
        """Queue one command buffer recorded by ``record`` in stream order.

        Args:
            record: records the commands.
            cleanup: called once the work has completed.
            wait: block the host until it has completed (raising its error, if any).

        Returns:
            The timeline value the submission signals.
        """
        if self.is_default:
            return self.ctx.submit_on(record, self, cleanup)
        value = self.lane.enqueue(record, cleanup)
        if wait:
            host_wait(self.ctx, [(self.lane.sem, value)])
            self._raise_error()
        return value

    def add_wait(self, owner: _Lane, value: int) -> None:
        """Make this stream's next submission wait for ``owner``'s timeline at ``value`` (the
        waits hold ``owner``, so its semaphore outlives them)."""
        if value > 0:
            point = (owner.sem, value)
            with self.lane.lock:
                self.lane.waits.append(point)
                self.lane.waits.keep.append(owner)

    def take_waits(self) -> list[tuple[Any, int]]:
        """The pending waits, now owned by the caller's submission (the default stream's)."""
        fresh = _Points()
        with self.lane.lock:
            waits, self.lane.waits = self.lane.waits, fresh
        return waits

    def host_wait(self, points: list[tuple[Any, int]]) -> None:
        """Block the host until every (semaphore, value) point is reached."""
        host_wait(self.ctx, points)

    def next_signal(self) -> tuple[Any, int]:
        """The (semaphore, value) the next submission signals."""
        with self.lane.lock:
            self.lane.value += 1
            return self.lane.sem, self.lane.value

    def point(self) -> tuple[Any, int]:
        """(semaphore, value) reached once all work queued so far has completed."""
        return self.lane.sem, self.lane.value

    def synchronize(self) -> None:
        """Block until the queued work has completed; raise the first error it hit."""
        host_wait(self.ctx, [self.point()])
        self._raise_error()

    def query(self) -> bool:
        sem, value = self.point()
        return counter(self.ctx, sem) >= value

    def drain(self) -> None:
        """Wait for the queued work without raising its errors (device synchronize)."""
        with contextlib.suppress(DeviceError):
            host_wait(self.ctx, [self.point()])

    def close(self) -> None:
        """Finish the queued work and stop the stream's thread. Its timeline semaphore lives
        on while an event or another stream's queued wait names it."""
        self.lane.close()

    def __del__(self) -> None:
        # Events recorded here keep the lane (and its semaphore) alive; the thread goes now.
        with contextlib.suppress(Exception):
            self.lane.stop()

    def _raise_error(self) -> None:
        with self.lane.lock:
            error, self.lane.error = self.lane.error, None
        if error is not None:
            raise error


class VkEvent(Event):
    """A (timeline semaphore, value) point, with a timestamp query when timing."""

    _lane: Any = None
    _value = 0
    _query_pool: Any = None

    def _record(self, stream: Stream) -> None:
        vs: VkStream = stream  # type: ignore[assignment]
        ctx = vs.ctx
        if self.timing and self._timestamps(ctx):
            if self._query_pool is None:
                info = ctx._info("QUERY_POOL_CREATE_INFO",
                                 queryType=ctx.vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=1)
                self._query_pool = call(ctx.vk.vkCreateQueryPool, ctx.device, info, None)
            value = vs.enqueue(functools.partial(_write_timestamp, ctx.vk, self._query_pool))
        elif vs.lane.waits:
            # Waits added to the stream (Event.wait) belong to its next submission: an empty
            # one carries them, so the event also comes after them (as a CUDA event recorded
            # after cudaStreamWaitEvent); its last value alone would already be reached.
            value = vs.enqueue(_record_nothing)
        else:
            value = vs.lane.value
        self._lane, self._value = vs.lane, value

    @staticmethod
    def _timestamps(ctx: Any) -> bool:
        families = ctx.vk.vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical)
        return int(families[ctx.queue_family].timestampValidBits) > 0

    def _wait(self, stream: Stream) -> None:
        stream.add_wait(self._lane, self._value)  # type: ignore[attr-defined]

    def _synchronize(self) -> None:
        host_wait(self._lane.ctx, [(self._lane.sem, self._value)])

    def _query(self) -> bool:
        return counter(self._lane.ctx, self._lane.sem) >= self._value

    def _timestamp_ns(self) -> int:
        if self._query_pool is None:
            raise UnsupportedOpError(f"{self.device} has no timestamp queries on its queue",
                                     fix="time on the host (time.perf_counter) instead.")
        ctx = self._lane.ctx
        data = ctx.vk.ffi.new("uint64_t[1]")
        flags = ctx.vk.VK_QUERY_RESULT_64_BIT | ctx.vk.VK_QUERY_RESULT_WAIT_BIT
        call(ctx.vk.vkGetQueryPoolResults, ctx.device, self._query_pool, 0, 1, 8, data, 8, flags)
        return int(int(data[0]) * float(ctx.limits.timestampPeriod))

    def _release(self) -> None:
        pool, self._query_pool = self._query_pool, None
        lane, self._lane = self._lane, None
        ctx = self.device.ctx  # type: ignore[attr-defined]
        if pool is None or getattr(ctx, "device", None) is None:
            return
        destroy = functools.partial(ctx.vk.vkDestroyQueryPool, ctx.device, pool, None)
        if lane is None or counter(ctx, lane.sem) >= self._value:
            destroy()
        else:  # the timestamp write is still queued: free the pool once it has run
            lane.defer(self._value, destroy)
            lane.purge(counter(ctx, lane.sem))  # it may have run meanwhile


def _record_nothing(cmd: Any) -> None:
    """An empty command buffer: a submission that only waits and signals."""


def _write_timestamp(vk: Any, pool: Any, cmd: Any) -> None:
    vk.vkCmdResetQueryPool(cmd, pool, 0, 1)
    vk.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 0)


class PoolPoints:
    """Cross-stream safety for pooled buffers: a buffer freed while streams may still use it
    carries their timeline points; its next user's stream waits for them, and a real free
    waits for them on the host.

    The lanes are held weakly: a buffer idle in the pool must not keep another stream's
    semaphore alive, and a lane that is gone was closed, which waited for all its work, so
    its points are reached.
    """

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self._pending: dict[int, list[tuple[weakref.ref[_Lane], int]]] = {}

    def fence(self, raw: Any) -> None:
        """Remember where every non-default stream is now (only those with queued work)."""
        lanes = [s.lane for s in list(self.ctx.streams) if not s.is_default and not s.query()]
        if lanes:
            self._pending[id(raw)] = [(weakref.ref(lane), lane.value) for lane in lanes]

    def _live(self, points: list[tuple[weakref.ref[_Lane], int]]) -> list[tuple[_Lane, int]]:
        return [(lane, value) for ref, value in points
                if (lane := ref()) is not None and lane.sem is not None]

    def wait(self, raw: Any) -> None:
        """Order the current stream after the points remembered for ``raw``."""
        live = self._live(self._pending.pop(id(raw), []))
        if not live:
            return
        stream = self.ctx.current() if self.ctx.current is not None else None
        if stream is None:
            host_wait(self.ctx, [(lane.sem, value) for lane, value in live])
            return
        for lane, value in live:
            stream.add_wait(lane, value)

    def busy(self, raw: Any) -> bool:
        """True while a stream has not reached a point remembered for ``raw``."""
        return any(counter(self.ctx, lane.sem) < value
                   for lane, value in self._live(self._pending.get(id(raw), [])))

    def forget(self, raw: Any) -> None:
        """Before a real free: wait for the remembered points on the host."""
        live = self._live(self._pending.pop(id(raw), []))
        if live:
            host_wait(self.ctx, [(lane.sem, value) for lane, value in live])
