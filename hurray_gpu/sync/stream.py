"""Streams: ordered queues of device work, with a per-thread, per-device current-stream stack.

``with stream:`` makes ``stream`` the current stream of its device on this thread; every kernel
launch and copy that hurray_gpu issues on that device then goes to it (CuPy's model).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from hurray_gpu.errors import UnsupportedOpError

if TYPE_CHECKING:
    from hurray_gpu.device import Device
    from hurray_gpu.sync.event import Event

__all__ = ["Stream", "current_stream", "open_device"]

_local = threading.local()


def open_device(device: Device | Any) -> Device:
    """``device`` itself, or the device a spec names (None: the cpu device)."""
    from hurray_gpu.device import Device
    from hurray_gpu.devices_api import device as open_spec

    if isinstance(device, Device):
        return device
    return open_spec("cpu" if device is None else device)


def _stack(device: Device) -> list[Stream]:
    stacks: dict[int, list[Stream]] | None = getattr(_local, "stacks", None)
    if stacks is None:
        stacks = _local.stacks = {}
    return stacks.setdefault(id(device), [])


def current_stream(device: Device | Any = None) -> Stream:
    """The stream that work on ``device`` goes to on this thread (its default stream if none).

    Args:
        device: a Device or spec; None means the cpu device.
    """
    dev = open_device(device)
    stack = _stack(dev)
    return stack[-1] if stack else dev.default_stream


class Stream:
    """An in-order queue of work on one device.

    ``Stream(device)`` builds the device backend's stream class (OpenCL: a command queue; cpu
    and other backends: the host stream, whose work is complete when issued).

    Args:
        device: a Device or spec; None means the cpu device.
    """

    def __new__(cls, device: Device | Any = None, **kwargs: Any) -> Stream:
        if cls is Stream:
            cls = open_device(device).stream_class()
        return object.__new__(cls)

    def __init__(self, device: Device | Any = None, *, _default: bool = False) -> None:
        self.device: Device = open_device(device)
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
        from hurray_gpu.sync.event import Event

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
