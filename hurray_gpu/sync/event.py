"""Events: markers recorded on a stream that other streams or the host can wait on.

An Event owns its native handle (RAII): ``release()`` frees it once; ``__del__`` does the same,
guarded against interpreter shutdown.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.sync.stream import current_stream, open_device

if TYPE_CHECKING:
    from hurray_gpu.device import Device
    from hurray_gpu.sync.stream import Stream

__all__ = ["Event"]


class Event:
    """A point in a stream's work.

    ``Event(device)`` builds the device backend's event class.

    Args:
        device: a Device or spec; None means the cpu device.
        timing: keep timestamps so :meth:`elapsed_ms` works.
    """

    def __new__(cls, device: Device | Any = None, **kwargs: Any) -> Event:
        if cls is Event:
            cls = open_device(device).event_class()
        return object.__new__(cls)

    def __init__(self, device: Device | Any = None, *, timing: bool = True) -> None:
        self.device: Device = open_device(device)
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
