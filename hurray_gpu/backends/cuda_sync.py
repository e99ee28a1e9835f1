"""CUDA and ROCm streams and events through CuPy (``cupy.cuda.Stream`` / ``Event``); imported
only when a CUDA/ROCm device is open, so CuPy stays optional.
"""

from __future__ import annotations

from typing import Any

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.runtime.stream import Event, Stream

__all__ = ["CuEvent", "CuStream", "external_stream"]


class CuStream(Stream):
    """A CuPy stream of one CUDA/ROCm device (non-blocking: no implicit legacy-stream sync).

    ``with stream:`` also enters the CuPy stream, so every launch and copy hurray_gpu queues
    (they go on CuPy's current stream) runs on it. The default stream is CuPy's current
    stream, so code using ``with cupy.cuda.Stream():`` directly stays in order too.

    Args:
        device: the CUDA/ROCm Device or spec.
        ptr: wrap an existing ``cudaStream_t`` / ``hipStream_t`` (not owned) instead of
            creating one.
    """

    def __init__(self, device: Any = None, *, _default: bool = False,
                 ptr: int | None = None) -> None:
        super().__init__(device, _default=_default)
        dev: Any = self.device
        self._cp: Any = None
        if _default:
            return
        with dev.context():
            if ptr is None:
                self._cp = dev.cupy.cuda.Stream(non_blocking=True)
            else:
                if not isinstance(ptr, int) or isinstance(ptr, bool) or ptr < 0:
                    raise UnsupportedOpError(f"stream pointer {ptr!r} is not a handle",
                                             fix="pass the integer value of a cudaStream_t.")
                self._cp = dev.cupy.cuda.ExternalStream(ptr)

    @property
    def cupy_stream(self) -> Any:
        """The CuPy stream (for the default stream: CuPy's current one on this thread)."""
        if self._cp is not None:
            return self._cp
        dev: Any = self.device
        with dev.context():
            return dev.cupy.cuda.get_current_stream()

    @property
    def handle(self) -> int:
        """The native stream pointer (0 for the legacy default stream)."""
        return int(self.cupy_stream.ptr)

    def __enter__(self) -> Stream:
        out = super().__enter__()
        if self._cp is not None:
            self._cp.__enter__()
        return out

    def __exit__(self, *exc: object) -> None:
        if self._cp is not None:
            self._cp.__exit__(*exc)
        super().__exit__(*exc)

    def synchronize(self) -> None:
        dev: Any = self.device
        with dev.context():
            self.cupy_stream.synchronize()

    def query(self) -> bool:
        return bool(self.cupy_stream.done)


def external_stream(device: Any, ptr: int) -> CuStream:
    """A hurray_gpu Stream over a foreign stream pointer (torch's ``stream.cuda_stream``...).

    Raises:
        UnsupportedOpError: ``ptr`` is not a non-negative integer.
    """
    return CuStream(device, ptr=ptr)


class CuEvent(Event):
    """A CuPy event; ``elapsed_ms`` is ``cudaEventElapsedTime``."""

    _ev: Any = None

    def _record(self, stream: Stream) -> None:
        dev: Any = self.device
        cs: CuStream = stream  # type: ignore[assignment]
        with dev.context():
            if self._ev is None:
                self._ev = dev.cupy.cuda.Event(disable_timing=not self.timing)
            self._ev.record(cs.cupy_stream)

    def _wait(self, stream: Stream) -> None:
        dev: Any = self.device
        cs: CuStream = stream  # type: ignore[assignment]
        with dev.context():
            cs.cupy_stream.wait_event(self._ev)

    def _synchronize(self) -> None:
        self._ev.synchronize()

    def _query(self) -> bool:
        return bool(self._ev.done)

    def _elapsed_ms(self, end: Event) -> float:
        dev: Any = self.device
        return float(dev.cupy.cuda.get_elapsed_time(self._ev, end._ev))  # type: ignore[attr-defined]

    def _release(self) -> None:
        self._ev = None  # CuPy destroys the cudaEvent_t with its last reference
