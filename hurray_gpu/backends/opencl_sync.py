"""OpenCL streams and events: a stream is an in-order command queue, an event a cl_event marker.

Inter-stream waits are ``clEnqueueBarrierWithWaitList`` on the waiting queue: the device orders
the work, the host never blocks.
"""

from __future__ import annotations

from typing import Any

import pyopencl as cl

from hurray_gpu.errors import DeviceError, UnsupportedOpError
from hurray_gpu.runtime.stream import Event, Stream

__all__ = ["CLEvent", "CLStream"]


def _call(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except cl.Error as exc:
        raise DeviceError(f"{what} failed: {exc}",
                          fix="check the OpenCL driver (clinfo) and the arguments.") from exc


class CLStream(Stream):
    """A profiling-enabled in-order command queue (the default stream is the device's queue)."""

    def __init__(self, device: Any = None, *, _default: bool = False) -> None:
        super().__init__(device, _default=_default)
        dev: Any = self.device
        if _default:
            self.queue = dev.queue
        else:
            self.queue = _call("clCreateCommandQueue", cl.CommandQueue, dev.context,
                               dev.cl_device,
                               properties=cl.command_queue_properties.PROFILING_ENABLE)
            dev.streams.add(self)

    @property
    def handle(self) -> Any:
        return self.queue

    def synchronize(self) -> None:
        _call("clFinish", self.queue.finish)

    def query(self) -> bool:
        marker = _call("clEnqueueMarker", cl.enqueue_marker, self.queue)
        self.queue.flush()
        return bool(marker.command_execution_status == cl.command_execution_status.COMPLETE)


class CLEvent(Event):
    """A marker event enqueued on a stream's queue (it completes after all earlier work)."""

    _event: Any = None

    def _record(self, stream: Stream) -> None:
        queue = stream.queue  # type: ignore[attr-defined]
        self._event = _call("clEnqueueMarker", cl.enqueue_marker, queue)
        # Submit now: another queue or the host may wait on this marker next.
        queue.flush()

    def _wait(self, stream: Stream) -> None:
        _call("clEnqueueBarrierWithWaitList", cl.enqueue_barrier,
              stream.queue, wait_for=[self._event])  # type: ignore[attr-defined]

    def _synchronize(self) -> None:
        _call("clWaitForEvents", self._event.wait)

    def _query(self) -> bool:
        status = self._event.command_execution_status
        if status < 0:
            raise DeviceError(f"the work before this event failed (status {status})",
                              fix="check the kernels launched before the event.")
        return bool(status == cl.command_execution_status.COMPLETE)

    def _timestamp_ns(self) -> int:
        try:
            return int(self._event.profile.end)
        except cl.Error as exc:
            raise UnsupportedOpError(f"no profiling timestamp for this event ({exc})",
                                     fix="record events on streams of this device.") from exc

    def _release(self) -> None:
        # pyopencl releases the cl_event when its last reference goes.
        self._event = None


class PoolFences:
    """Cross-stream safety for pooled buffers: a buffer freed while other queues may still use
    it carries their markers; whoever takes it from the pool makes its queue wait for them."""

    def __init__(self) -> None:
        self._pending: dict[int, list[Any]] = {}

    @staticmethod
    def _key(raw: Any) -> int:
        return id(raw[0]) if isinstance(raw, tuple) else id(raw)

    def fence(self, device: Any, raw: Any) -> None:
        """Remember markers on every stream of ``device`` (only when non-default ones exist)."""
        streams = list(device.streams)
        if not streams:
            return
        queues = [device.queue] + [s.queue for s in streams]
        markers = [_call("clEnqueueMarker", cl.enqueue_marker, q) for q in queues]
        for q in queues:
            q.flush()
        self._pending[self._key(raw)] = markers

    def wait(self, queue: Any, raw: Any) -> None:
        """Order ``queue`` after the markers remembered for ``raw`` (no host wait)."""
        markers = self._pending.pop(self._key(raw), None)
        if markers:
            _call("clEnqueueBarrierWithWaitList", cl.enqueue_barrier, queue, wait_for=markers)

    def forget(self, raw: Any) -> None:
        """Drop the markers of a buffer that is really freed."""
        self._pending.pop(self._key(raw), None)
