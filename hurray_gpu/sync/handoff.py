"""Handoff per the Hurray spec, Buffer Protocol: Stream and Event Synchronisation: the producer
declares sync_mode in every buffer handle, the consumer applies the matching rule (wait on the
event on every stream, or use only the declared streams).

The buffer-release callback (Buffer Protocol: Release Callback) is separate from the event
release; each runs once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Sequence
from typing import Any

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.descriptor.buffers import DeviceTag, SyncMode
from hurray_gpu.parts import TensorLike, make_tensor
from hurray_gpu.runtime.stream import Event, Stream, current_stream

__all__ = ["SyncState", "accept", "handoff", "on_use", "order_after", "parse_mode", "release",
           "sync_mode_of"]


def parse_mode(value: Any) -> SyncMode:
    """The SyncMode for a SyncMode, 0/1/2, or a name (``"event"``, ``"consumer_stream"``...).

    Raises:
        UnsupportedOpError: any other value (reserved 0x03-0xFE and 0xFF included).
    """
    if isinstance(value, str) and value.strip().upper() in SyncMode.__members__:
        return SyncMode[value.strip().upper()]
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1, 2):
        return SyncMode(value)
    raise UnsupportedOpError(
        f"unknown sync_mode {value!r}",
        fix="use producer_synced (0), event (1) or consumer_stream (2).")


@dataclasses.dataclass(eq=False)
class SyncState:
    """What travels with a handed-off device tensor, out of band of its descriptor.

    Attributes:
        mode: the declared SyncMode.
        event: event mode: the producer's event (None once released).
        streams: the streams allowed to touch the buffers (declared, or accepted).
        on_release: the buffer-release callback, or None.
    """

    mode: SyncMode
    event: Event | None = None
    streams: list[Stream] = dataclasses.field(default_factory=list)
    on_release: Callable[[], Any] | None = None
    event_released: bool = False
    released: bool = False
    lock: threading.RLock = dataclasses.field(default_factory=threading.RLock)

    def release_event(self) -> None:
        """Release the producer's event; only the first call does anything."""
        with self.lock:
            event, self.event = self.event, None
            first = not self.event_released
            self.event_released = True
        if first and event is not None:
            event.release()

    def release_buffers(self) -> None:
        """Wait for the consumer streams' work, then call ``on_release`` (first call only)."""
        with self.lock:
            first, self.released = not self.released, True
        if not first:
            return
        for stream in self.streams:
            stream.synchronize()
        if self.on_release is not None:
            self.on_release()

    def __del__(self) -> None:
        # A consumer that never called release() is done with the buffers when this goes.
        with contextlib.suppress(Exception):
            self.release_event()
            self.release_buffers()


def _streams(device: Any, stream: Stream | Sequence[Stream] | None) -> list[Stream]:
    items = [current_stream(device)] if stream is None else (
        [stream] if isinstance(stream, Stream) else list(stream))
    if not items:
        raise UnsupportedOpError("no stream given", fix="pass a Stream or a list of Streams.")
    for s in items:
        if not isinstance(s, Stream) or s.device is not device:
            raise UnsupportedOpError(f"{s!r} is not a Stream of {device}",
                                     fix="pass streams of the tensor's device.")
    return items


def sync_mode_of(t: TensorLike) -> SyncMode:
    """The sync_mode the tensor's buffer handles declare (members included; all must agree).

    Raises:
        UnsupportedOpError: handles that disagree, or a reserved value.
    """
    modes = set(_modes(t))
    if len(modes) > 1:
        raise UnsupportedOpError(f"buffer handles declare different sync modes {sorted(modes)}",
                                 fix="hand off every buffer of a tensor with one mode.")
    return parse_mode(modes.pop()) if modes else SyncMode.PRODUCER_SYNCED


def _modes(t: TensorLike) -> list[int]:
    return [int(h.sync_mode) for h in t.descriptor.buffers] + [
        m for member in t.members for m in _modes(member)]


def _retag(t: TensorLike, mode: SyncMode, state: SyncState) -> Any:
    desc = t.descriptor
    desc = dataclasses.replace(desc, buffers=tuple(
        dataclasses.replace(h, sync_mode=int(mode)) for h in desc.buffers))
    members = [_retag(m, mode, state) for m in t.members]
    return make_tensor(desc, t.buffers, members=members, device=t.device,
                       memory_class=t.memory_class, seq_lens=t.seq_lens, sync=state)


def handoff(t: TensorLike, mode: Any, stream: Stream | Sequence[Stream] | None = None, *,
            producer: Stream | Sequence[Stream] | None = None,
            on_release: Callable[[], Any] | None = None) -> Any:
    """Implement :meth:`Tensor.handoff`: order the producer's writes and declare ``mode``."""
    mode = parse_mode(mode)
    dev = t.device
    if dev.tag == DeviceTag.CPU and mode != SyncMode.PRODUCER_SYNCED:
        raise UnsupportedOpError(f"CPU buffers must be producer-synced, not {mode.name.lower()}",
                                 fix="hand off host tensors with mode 'producer_synced'.")
    if on_release is not None and not callable(on_release):
        raise UnsupportedOpError("on_release must be callable", fix="pass a function or None.")
    if stream is not None and mode != SyncMode.CONSUMER_STREAM:
        raise UnsupportedOpError(f"{mode.name.lower()} mode takes no consumer stream",
                                 fix="pass stream= only with mode 'consumer_stream'.")
    if mode == SyncMode.CONSUMER_STREAM and stream is None:
        raise UnsupportedOpError("consumer_stream mode needs the consumer's stream",
                                 fix="pass stream=<the consumer's Stream>.")
    writers = _streams(dev, producer)
    state = SyncState(mode, on_release=on_release)
    if mode == SyncMode.PRODUCER_SYNCED:
        for s in writers:
            s.synchronize()
        return _retag(t, mode, state)
    for other in writers[1:]:  # the first writer then completes after every writer
        order_after(writers[0], other)
    if mode == SyncMode.EVENT:
        state.event = writers[0].record()
    else:
        state.streams = _streams(dev, stream)
        for consumer in state.streams:
            order_after(consumer, writers[0])
    return _retag(t, mode, state)


def order_after(later: Stream, earlier: Stream) -> None:
    """Make the work queued from now on ``later`` wait, on the device, for the work queued so
    far on ``earlier`` (nothing to do when they are one stream)."""
    if later is not earlier:
        # A timing event: Vulkan records an untimed one without the stream's pending waits.
        ready = earlier.record()
        ready.wait(later)
        ready.release()


def accept(t: TensorLike, stream: Stream | Sequence[Stream] | None = None, *,
           insert_wait: bool = False) -> Any:
    """Implement :meth:`Tensor.accept`: apply the consumer rule of the declared sync_mode."""
    mode = sync_mode_of(t)
    if mode == SyncMode.PRODUCER_SYNCED:
        return t
    state: SyncState | None = t.sync_state
    streams = _streams(t.device, stream)
    if state is None or state.mode != mode:
        what = "an event" if mode == SyncMode.EVENT else "declared consumer streams"
        raise UnsupportedOpError(f"{mode.name.lower()} mode without {what}",
                                 fix="receive the tensor from Tensor.handoff(), which carries "
                                     "the event or streams with it.")
    with state.lock:
        _apply(state, mode, streams, insert_wait)
    return t


def _apply(state: SyncState, mode: SyncMode, streams: list[Stream], insert_wait: bool) -> None:
    """The consumer rule for ``streams`` (the caller holds ``state.lock``)."""
    if mode == SyncMode.EVENT and not state.event_released:
        event = state.event
        if event is None:
            raise UnsupportedOpError("event mode without an event",
                                     fix="hand off with Tensor.handoff('event').")
        for s in streams:
            event.wait(s)
        # A borrowed stream (a DLPack consumer's) is ordered but never kept: its handle may
        # be destroyed as soon as the export returns, and release() would synchronize it.
        state.streams.extend(s for s in streams if s not in state.streams and not s.borrowed)
        state.release_event()
        return
    for s in streams:
        if s in state.streams:
            continue
        # Event mode after the event's release: the accepted streams are ordered after it,
        # so a marker on each of them stands in for the released event.
        if not insert_wait and mode != SyncMode.EVENT:
            raise UnsupportedOpError(
                f"{s!r} is not a declared consumer stream of this tensor",
                fix="use the declared stream, or accept(stream, insert_wait=True) to order "
                    "it after the declared streams.")
        for declared in list(state.streams):
            order_after(s, declared)
        if not s.borrowed:
            state.streams.append(s)


def on_use(t: TensorLike, state: SyncState) -> None:
    """The automatic accept on first use: any hurray_gpu op reaching ``t.buffers`` lands here.

    The current stream of the tensor's device is the stream about to touch the buffers: in
    event mode it waits on the event (released once); in consumer_stream mode an undeclared
    stream is ordered after the declared ones. Later uses on an accepted stream cost one
    membership test.
    """
    if state.mode == SyncMode.PRODUCER_SYNCED:
        return
    stream = current_stream(t.device)
    if stream in state.streams and (state.mode != SyncMode.EVENT or state.event_released):
        return
    with state.lock:
        _apply(state, state.mode, [stream], True)


def release(t: TensorLike) -> None:
    """Implement :meth:`Tensor.release`: end of the consumer's access (callback once)."""
    state: SyncState | None = t.sync_state
    if state is not None:
        state.release_event()
        state.release_buffers()
    for member in t.members:
        release(member)
