"""Host streams and events: the cpu backend's, and the fallback for backends without their own.

Host work is complete when its call returns, so a host stream is always idle; for a device
whose work is asynchronous, recording synchronizes the device first (a correct, full wait).
"""

from __future__ import annotations

import time

from hurray_gpu.sync.event import Event
from hurray_gpu.sync.stream import Stream

__all__ = ["HostEvent", "HostStream"]


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
