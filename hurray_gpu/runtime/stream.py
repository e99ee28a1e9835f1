"""Streams and events: ordered queues of device work and markers in them, with a per-thread,
per-device current-stream stack (CuPy's model), and the host implementations.

``with stream:`` makes ``stream`` the current stream of its device on this thread; every kernel
launch and copy that hurray_gpu issues on that device then goes to it. An Event owns its native
handle (RAII): ``release()`` frees it once; ``__del__`` does the same, guarded against
interpreter shutdown. Host work is complete when its call returns, so a host stream is always
idle; for a device whose work is asynchronous, recording a host event synchronizes the device
first (a correct, full wait).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.runtime.registry import resolve_device

if TYPE_CHECKING:
    from hurray_gpu.runtime.device import Device

__all__ = ["Event", "HostEvent", "HostStream", "Stream", "current_stream"]

_local = threading.local()


def _stack(device: Device) -> list[Stream]:
    stacks: dict[int, list[Stream]] | None = getattr(_local, "stacks", None)
    if stacks is None:
        stacks = _local.stacks = {}
    return stacks.setdefault(id(device), [])


def current_stream(device: Device | Any = None) -> Stream:
    """The stream that work on ``device`` goes to on this thread (its default stream if none).

    Args:
        device: a Device or spec; None means the default device.
    """
    dev = resolve_device(device)
    stack = _stack(dev)
    return stack[-1] if stack else dev.default_stream


class Stream:
    """An in-order queue of work on one device.

    ``Stream(device)`` builds the device backend's stream class (OpenCL: a command queue; cpu
    and other backends: the host stream, whose work is complete when issued).

    Args:
        device: a Device or spec; None means the default device.
    """

    def __new__(cls, device: Device | Any = None, **kwargs: Any) -> Stream:
        if cls is Stream:
            cls = resolve_device(device).stream_class()
        return object.__new__(cls)

    #: True for a wrapper of a handle another library owns (a DLPack consumer's stream): valid
    #: only during the call that lent it, so nothing keeps it beyond that call.
    borrowed: bool = False

    def __init__(self, device: Device | Any = None, *, _default: bool = False) -> None:
        self.device: Device = resolve_device(device)
        self.is_default = _default
        self._depth = 0

    # -- context manager: the current-stream stack ------------------------------------------
    def __enter__(self) -> Stream:
        _stack(self.device).append(self)
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        stack = _stack(self.device)
        if not stack or stack[-1] is not self:
            raise UnsupportedOpError("stream contexts exited out of order",
                                     fix="nest `with stream:` blocks properly.")
        stack.pop()
        self._depth -= 1

    # -- operations ---------------------------------------------------------------------------
    def record(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one when None) after all work queued so far on this stream.

        Returns:
            The recorded event.
        """
        event = Event(self.device) if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait until ``event`` has completed (no host wait).

        Raises:
            UnsupportedOpError: the event was never recorded, or is on another device.
        """
        event.wait(self)

    def synchronize(self) -> None:
        """Block the host until all work queued on this stream has finished."""
        raise NotImplementedError

    def query(self) -> bool:
        """True when all work queued on this stream has finished."""
        raise NotImplementedError

    @property
    def handle(self) -> Any:
        """The backend's native handle (a cl.CommandQueue, a CUDA stream pointer...)."""
        return None

    def __repr__(self) -> str:
        kind = "default " if self.is_default else ""
        return f"<{type(self).__name__} {kind}on {self.device.spec}>"


class Event:
    """A point in a stream's work.

    ``Event(device)`` builds the device backend's event class.

    Args:
        device: a Device or spec; None means the default device.
        timing: keep timestamps so :meth:`elapsed_ms` works.
    """

    def __new__(cls, device: Device | Any = None, **kwargs: Any) -> Event:
        if cls is Event:
            cls = resolve_device(device).event_class()
        return object.__new__(cls)

    def __init__(self, device: Device | Any = None, *, timing: bool = True) -> None:
        self.device: Device = resolve_device(device)
        self.timing = timing
        self.released = False
        self.recorded = False

    # -- public API -------------------------------------------------------------------------
    def record(self, stream: Stream | None = None) -> Event:
        """Record this event after all work queued so far on ``stream`` (default: current).

        Returns:
            self.

        Raises:
            UnsupportedOpError: the event was released, or the stream is on another device.
        """
        stream = self._stream(stream)
        self._record(stream)
        self.recorded = True
        return self

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on ``stream`` (default: current) wait for this event, on the device.

        Raises:
            UnsupportedOpError: never recorded, released, or another device's stream.
        """
        stream = self._stream(stream)
        self._check_recorded("wait on")
        self._wait(stream)

    def synchronize(self) -> None:
        """Block the host until the event has completed.

        Raises:
            UnsupportedOpError: never recorded or released.
        """
        self._check_recorded("synchronize")
        self._synchronize()

    def query(self) -> bool:
        """True when the event has completed.

        Raises:
            UnsupportedOpError: never recorded or released.
        """
        self._check_recorded("query")
        return self._query()

    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds from this event to ``end`` (both recorded; waits for both).

        Raises:
            UnsupportedOpError: either event lacks timing, was not recorded, or is released.
        """
        if not isinstance(end, Event) or end.device is not self.device:
            raise UnsupportedOpError("elapsed_ms needs an Event on the same device",
                                     fix="record both events on streams of one device.")
        for ev in (self, end):
            if not ev.timing:
                raise UnsupportedOpError("event was created with timing=False",
                                         fix="create both events with Event(device).")
            ev.synchronize()
        return self._elapsed_ms(end)

    def release(self) -> None:
        """Free the native handle now; idempotent."""
        if not self.released:
            self.released = True
            self._release()

    def __del__(self) -> None:
        # Interpreter shutdown may already have torn down the driver module.
        with contextlib.suppress(Exception):
            self.release()

    def __repr__(self) -> str:
        state = "released" if self.released else ("recorded" if self.recorded else "new")
        return f"<{type(self).__name__} {state} on {self.device.spec}>"

    # -- helpers ------------------------------------------------------------------------------
    def _stream(self, stream: Stream | None) -> Stream:
        if self.released:
            raise UnsupportedOpError("event was released", fix="create a new Event.")
        stream = current_stream(self.device) if stream is None else stream
        if getattr(stream, "device", None) is not self.device:
            raise UnsupportedOpError(f"{stream!r} is not a stream of {self.device}",
                                     fix="use a Stream of the event's device.")
        return stream

    def _check_recorded(self, what: str) -> None:
        if self.released:
            raise UnsupportedOpError(f"cannot {what} a released event", fix="create a new Event.")
        if not self.recorded:
            raise UnsupportedOpError(f"cannot {what} an event that was never recorded",
                                     fix="call event.record(stream) first.")

    # -- backend hooks ------------------------------------------------------------------------
    def _record(self, stream: Stream) -> None:
        raise NotImplementedError

    def _wait(self, stream: Stream) -> None:
        raise NotImplementedError

    def _synchronize(self) -> None:
        raise NotImplementedError

    def _query(self) -> bool:
        raise NotImplementedError

    def _timestamp_ns(self) -> int:
        raise NotImplementedError

    def _elapsed_ms(self, end: Event) -> float:
        """Milliseconds between two completed events (default: from their timestamps)."""
        return float(end._timestamp_ns() - self._timestamp_ns()) / 1e6

    def _release(self) -> None:
        """Free the native handle (called once)."""


class HostStream(Stream):
    """An ordered host stream: its work has finished once issued (or once the device syncs)."""

    def synchronize(self) -> None:
        self.device.synchronize()

    def query(self) -> bool:
        self.device.synchronize()
        return True


class HostEvent(Event):
    """A host-side flag plus a timestamp, set when recorded (after the stream's work ended)."""

    _ns = 0

    def _record(self, stream: Stream) -> None:
        stream.synchronize()
        self._ns = time.perf_counter_ns()

    def _wait(self, stream: Stream) -> None:
        # Recording already waited for the producer's work: nothing is left to order.
        return None

    def _synchronize(self) -> None:
        return None

    def _query(self) -> bool:
        return True

    def _timestamp_ns(self) -> int:
        return self._ns
