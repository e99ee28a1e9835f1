"""The Tensor's sync and DLPack methods (a mixin, so tensor.py stays small)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hurray_gpu.format.descriptor.buffers import SyncMode
from hurray_gpu.sync.stream import Stream

__all__ = ["TensorSyncMixin"]

_DEVICE_KEY = object()  # the __dlpack_device__ entry of the Tensor._dl cache


class TensorSyncMixin:
    """Handoff (Hurray spec, Buffer Protocol) and DLPack export for :class:`hurray_gpu.Tensor`."""

    __slots__ = ()

    @property
    def sync_mode(self) -> SyncMode:
        """The sync_mode its buffer handles declare (PRODUCER_SYNCED when it has none)."""
        from hurray_gpu.sync.handoff import sync_mode_of

        return sync_mode_of(self)  # type: ignore[arg-type]

    def handoff(self, mode: Any, stream: Stream | Sequence[Stream] | None = None, *,
                producer: Stream | Sequence[Stream] | None = None,
                on_release: Callable[[], Any] | None = None) -> Any:
        """Prepare this tensor for a consumer and declare ``mode`` in every buffer handle.

        producer_synced waits on the host for the producer streams; event records one event
        after them; consumer_stream makes each consumer stream wait for them on the device.

        Args:
            mode: ``"producer_synced"``/0, ``"event"``/1 or ``"consumer_stream"``/2.
            stream: consumer_stream mode only: the consumer's Stream (or Streams).
            producer: the stream(s) that wrote the buffers; default the current stream.
            on_release: the buffer-release callback, called exactly once by
                :meth:`release` (or when the handed-off tensor is collected).

        Returns:
            A new Tensor sharing the buffers, whose handles declare ``mode``.

        Raises:
            UnsupportedOpError: an unknown mode, a non-producer-synced mode for CPU buffers,
                consumer_stream without a stream, or streams of another device.
        """
        from hurray_gpu.sync.handoff import handoff

        return handoff(self, mode, stream, producer=producer,  # type: ignore[arg-type]
                       on_release=on_release)

    def accept(self, stream: Stream | Sequence[Stream] | None = None, *,
               insert_wait: bool = False) -> Any:
        """Apply the consumer rule of the declared sync_mode before using the buffers.

        event: every given stream waits on the event, then the event is released (once);
        consumer_stream: only the declared streams may be used, unless ``insert_wait``
        orders another stream after them; producer_synced: nothing to do.

        Args:
            stream: the stream(s) that will touch the buffers; default the current stream.
            insert_wait: allow an undeclared stream by inserting an inter-stream wait.

        Returns:
            self.

        Raises:
            UnsupportedOpError: event mode without an event, consumer_stream mode without
                declared streams or on an undeclared stream, or handles that disagree.
        """
        from hurray_gpu.sync.handoff import accept

        return accept(self, stream, insert_wait=insert_wait)  # type: ignore[arg-type]

    def release(self) -> None:
        """End the consumer's access: wait for its streams, then call the release callback once."""
        from hurray_gpu.sync.handoff import release

        release(self)  # type: ignore[arg-type]

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """Export as a DLPack capsule (versioned when ``max_version >= (1, 0)``).

        Args:
            stream: the consumer's stream per the DLPack convention (None: legacy default;
                -1: no synchronization; device-specific integers otherwise).
            max_version: the highest DLPack version the consumer understands.
            dl_device: the device the consumer wants; only this tensor's own is possible
                without ``copy=True`` (then the cpu, ``(1, 0)``, is also possible).
            copy: True: always export a copy; False: never copy; None: copy only if needed.

        Raises:
            BufferError: layouts, dtypes, devices or stream values DLPack cannot carry here.
        """
        if dl_device is None and copy is None and (stream is None or (
                type(stream) is int and stream == -1)):
            # Host tensors are immutable: the capsule template of an earlier export is reused
            # (only host tensors are cached; -1 and None are the same for them).
            cache: Any = getattr(self, "_dl", None)
            if cache is not None:
                try:
                    template = cache.get(max_version)
                except TypeError:  # an unhashable max_version: the slow path checks it
                    template = None
                if template is not None:
                    return template()
        from hurray_gpu.sync.dlpack import export

        return export(self, stream=stream, max_version=max_version, dl_device=dl_device,
                      copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(DLDeviceType, device_id)`` per docs/format.md, DLPack device mapping.

        Raises:
            BufferError: the (device, memory class) pair has no DLPack device type.
        """
        cache: Any = getattr(self, "_dl", None)
        if cache is not None and _DEVICE_KEY in cache:
            return cache[_DEVICE_KEY]  # type: ignore[no-any-return]
        from hurray_gpu.sync.dlpack_types import dlpack_device

        device = dlpack_device(self)
        if self.is_host:  # type: ignore[attr-defined]
            if cache is None:
                cache = {}
                object.__setattr__(self, "_dl", cache)
            cache[_DEVICE_KEY] = device
        return device
