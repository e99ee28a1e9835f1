"""Vulkan streams (timeline semaphores, per-stream submission order) and handoff (docs/format.md, Handoff).

The producer stream is held behind a host-signalled timeline semaphore (a gate), so a consumer
that skips the wait deterministically reads the old data: the race is visible, not timing.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hurray_gpu import Buffer, Tensor, UnsupportedOpError
from hurray_gpu.errors import DeviceError
from hurray_gpu.format.descriptor.buffers import SyncMode
from hurray_gpu.runtime.registry import is_available
from hurray_gpu.runtime.registry import resolve_device as device
from hurray_gpu.sync import Event, Stream, current_stream

pytestmark = [pytest.mark.vulkan,
              pytest.mark.skipif(not is_available(0x04), reason="no Vulkan device")]

N = 2048
VALUE = 5


@pytest.fixture()
def dev():
    d = device("vulkan:0")
    if not d.ctx.timeline:
        pytest.skip("this Vulkan driver has no timeline semaphores")
    return d


class Gate:
    """A timeline semaphore the host opens; streams told to wait on it hold their work."""

    def __init__(self, dev) -> None:
        from hurray_gpu.backends.vulkan_sync import create_timeline

        self.ctx = dev.ctx
        self.sem = create_timeline(self.ctx)

    def hold(self, stream: Stream) -> None:
        stream.add_wait(self, 1)  # the gate owns the semaphore (.sem)

    def open(self) -> None:
        from hurray_gpu.backends.vulkan_context import host_signal

        host_signal(self.ctx, self.sem, 1)


def _produce(dev, producer: Stream):
    t = Tensor.from_numpy(np.zeros(N, np.uint32)).to(dev)
    gate = Gate(dev)
    gate.hold(producer)
    with producer:
        dev.run("fill_u32", t.buffers[0], VALUE, N)
    return t, gate


def _consume(dev, src: Buffer, consumer: Stream) -> Buffer:
    out = Buffer(dev, N * 4)
    with consumer:
        dev.run("copy_bytes", out, src, N * 4)
    return out


def test_streams_are_independent_orders_with_timestamps(dev) -> None:
    s1, s2 = Stream(dev), Stream(dev)
    assert current_stream(dev) is dev.default_stream
    with s1:
        assert current_stream(dev) is s1
    start = Event(dev).record(s1)
    t, gate = _produce(dev, s1)
    done = s1.record()
    other = Tensor.from_numpy(np.zeros(N, np.uint32)).to(dev)
    with s2:  # not behind s1's held work, although both share one VkQueue
        dev.run("fill_u32", other.buffers[0], 3, N)
    s2.synchronize()
    time.sleep(0.05)
    assert not done.query() and not s1.query()
    gate.open()
    done.synchronize()
    assert done.query() and s1.query()
    assert np.all(t.to("cpu").numpy() == VALUE) and np.all(other.to("cpu").numpy() == 3)
    assert start.elapsed_ms(done) >= 0.0 >= done.elapsed_ms(start)
    untimed = Event(dev, timing=False).record(s1)
    with pytest.raises(UnsupportedOpError, match="timing=False"):
        start.elapsed_ms(untimed)


def test_skipping_the_wait_is_detectable(dev) -> None:
    producer, consumer = Stream(dev), Stream(dev)
    t, gate = _produce(dev, producer)
    out = _consume(dev, t.buffers[0], consumer)  # no handoff: the consumer races ahead
    consumer.synchronize()
    gate.open()
    producer.synchronize()
    assert np.all(out.numpy(np.uint32) == 0)
    assert np.all(t.to("cpu").numpy() == VALUE)


@pytest.mark.parametrize("mode", ["event", "consumer_stream"])
@pytest.mark.parametrize("explicit", [True, False])
def test_handoff_orders_consumer_after_producer(dev, mode: str, explicit: bool) -> None:
    producer, consumer = Stream(dev), Stream(dev)
    t, gate = _produce(dev, producer)
    kwargs = {"stream": consumer} if mode == "consumer_stream" else {}
    calls = []
    handed = t.handoff(mode, producer=producer, on_release=lambda: calls.append(1), **kwargs)
    assert handed.sync_mode == SyncMode[mode.upper()]
    assert handed.descriptor_bytes[-16 + 13] == int(SyncMode[mode.upper()])
    if explicit:
        handed.accept(consumer)
    with consumer:
        src = handed.buffers[0]  # without accept(): applied here, on first use
    out = _consume(dev, src, consumer)
    done = consumer.record()
    time.sleep(0.05)
    assert not done.query()  # the consumer waits on the device side; the host did not block
    gate.open()
    consumer.synchronize()
    assert np.all(out.numpy(np.uint32) == VALUE)
    if mode == "event":
        assert handed._sync.event is None and handed._sync.event_released
    handed.release()
    handed.release()
    assert calls == [1]


def test_producer_synced_waits_on_the_host(dev) -> None:
    producer, consumer = Stream(dev), Stream(dev)
    t, gate = _produce(dev, producer)
    opening = threading.Event()  # set just before the gate opens

    def _open_later() -> None:
        opening.set()
        gate.open()

    timer = threading.Timer(0.2, _open_later)
    timer.start()
    handed = t.handoff("producer_synced", producer=producer)
    # The producer could not finish before the gate opened: the handoff waited for it.
    assert opening.is_set()
    timer.join()
    out = _consume(dev, handed.buffers[0], consumer)
    consumer.synchronize()
    assert np.all(out.numpy(np.uint32) == VALUE)


@pytest.mark.parametrize("op", ["to", "materialize"])
def test_ops_accept_on_first_use(dev, op: str) -> None:
    producer, consumer = Stream(dev), Stream(dev)
    t, gate = _produce(dev, producer)
    handed = t.handoff("event", producer=producer)
    event = handed._sync.event
    timer = threading.Timer(0.15, gate.open)
    timer.start()
    try:
        with consumer:
            res = handed.to("cpu") if op == "to" else handed.materialize()
        consumer.synchronize()
    finally:
        timer.join()
    assert np.all(res.to("cpu").numpy() == VALUE)
    assert event.released and consumer in handed._sync.streams


def test_undeclared_stream_and_event_errors(dev) -> None:
    producer, declared, other = Stream(dev), Stream(dev), Stream(dev)
    t, gate = _produce(dev, producer)
    handed = t.handoff("consumer_stream", declared, producer=producer)
    with pytest.raises(UnsupportedOpError, match="not a declared consumer stream"):
        handed.accept(other)
    handed.accept(other, insert_wait=True)
    out = _consume(dev, handed.buffers[0], other)
    gate.open()
    other.synchronize()
    assert np.all(out.numpy(np.uint32) == VALUE)
    ev = Event(dev)
    with pytest.raises(UnsupportedOpError, match="never recorded"):
        ev.query()
    ev.record()  # the timestamp write is queued work: done only once the queue runs it
    ev.synchronize()
    assert ev.query()
    ev.release()
    with pytest.raises(UnsupportedOpError, match="released"):
        ev.wait(other)


def _held_fill(dev, stream: Stream, size: int) -> tuple[Buffer, Gate]:
    """A new buffer that ``stream`` fills behind a closed gate."""
    buf = Buffer(dev, size)
    gate = Gate(dev)
    gate.hold(stream)
    with stream:
        dev.run("fill_u32", buf, VALUE, N)
    return buf, gate


def _collected(ref) -> bool:
    """Whether ``ref``'s object goes within 10 s of collections (a stream thread may still
    be finishing the bookkeeping of its last submission)."""
    import gc

    deadline = time.monotonic() + 10
    while ref() is not None and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    return ref() is None


def test_pool_reuse_waits_for_other_streams(dev) -> None:
    a, b = Stream(dev), Stream(dev)
    size = N * 4 + 4096 * 11  # a size no other test pools
    buf, gate = _held_fill(dev, a, size)
    mem = buf.allocation.root.raw
    buf.free()  # the held kernel on `a` still has to write it
    with b:
        again = Buffer(dev, size)
        assert again.allocation.root.raw is mem  # reused from the pool
        dev.run("fill_u32", again, 3, N)
        done = b.record()
    time.sleep(0.05)
    assert not done.query()  # b waits for a's pending kernel
    gate.open()
    b.synchronize()
    assert np.all(again.numpy(np.uint32)[:N] == 3)


def test_a_pooled_buffer_does_not_keep_a_finished_stream_alive(dev) -> None:
    """A buffer freed into the pool while a stream was busy remembers that stream's point; it
    used to hold the stream's lane (and semaphore) for as long as the buffer stayed pooled."""
    import weakref

    a = Stream(dev)
    size = N * 4 + 4096 * 13  # a size no other test pools
    buf, gate = _held_fill(dev, a, size)
    mem, lane = buf.allocation.root.raw, weakref.ref(a.lane)
    buf.free()  # pooled while `a` still has to write it: the pool remembers a's point
    gate.open()
    a.synchronize()
    del a
    drain = getattr(dev.allocator, "drain", None)
    if drain is not None:  # HURRAY_GPU_DEBUG_BOUNDS: a deferred canary check holds the
        drain()  # launch's event (and so its lane) until the next launch or read drains it
    assert _collected(lane)
    again = Buffer(dev, size)
    assert again.allocation.root.raw is mem  # the pooled buffer, its point reached
    dev.run("fill_u32", again, 3, N)
    assert np.all(again.numpy(np.uint32)[:N] == 3)


def test_a_pending_wait_keeps_the_waited_stream_alive(dev) -> None:
    """A wait queued on a stream must hold the lane whose semaphore it names: dropping the
    event and its stream before the wait is submitted used to destroy that semaphore, and
    the later submission waited on a freed handle (a segfault on lavapipe)."""
    import gc
    import weakref

    producer, consumer = Stream(dev), Stream(dev)
    t = Tensor.from_numpy(np.zeros(N, np.uint32)).to(dev)
    with producer:
        dev.run("fill_u32", t.buffers[0], VALUE, N)
    ev = Event(dev).record(producer)
    lane = weakref.ref(producer.lane)
    ev.wait(consumer)
    del ev, producer
    gc.collect()
    assert lane() is not None and lane().sem is not None  # held by the consumer's wait
    out = _consume(dev, t.buffers[0], consumer)
    consumer.synchronize()
    assert np.all(out.numpy(np.uint32) == VALUE)
    # Once the wait was submitted nothing keeps the lane, the consumer's idle thread included
    # (it used to hold its last submission, waits and all, until the next one). That thread
    # finishes the submission's bookkeeping after the semaphore is signalled.
    assert _collected(lane)
    assert consumer.query()


def test_closing_a_stream_keeps_the_semaphore_other_streams_wait_on(dev) -> None:
    """``Stream.close()`` used to destroy its timeline semaphore while another stream's wait
    (an event recorded on it, waited on elsewhere) still named it: the waiting submission then
    used a freed handle. Close finishes the work; the semaphore goes with its last holder."""
    import gc
    import weakref

    producer, consumer = Stream(dev), Stream(dev)
    t = Tensor.from_numpy(np.zeros(N, np.uint32)).to(dev)
    with producer:
        dev.run("fill_u32", t.buffers[0], VALUE, N)
    ev = Event(dev).record(producer)
    lane = weakref.ref(producer.lane)
    ev.wait(consumer)
    producer.close()
    assert lane().sem is not None  # the consumer's pending wait names it
    with pytest.raises(DeviceError, match="closed Vulkan stream") as info, producer:
        dev.run("fill_u32", t.buffers[0], VALUE + 1, N)  # no thread would ever submit it
    assert "Fix:" in str(info.value)
    gate = Gate(dev)
    gate.hold(consumer)
    out = _consume(dev, t.buffers[0], consumer)  # queued: waits for the gate and the producer
    producer.close()  # again, while that submission waits on the semaphore
    assert lane().sem is not None and not consumer.query()
    gate.open()
    consumer.synchronize()
    assert np.all(out.numpy(np.uint32) == VALUE) and ev.query()
    del ev, producer, consumer, info  # the traceback holds the stream
    gc.collect()
    dev.allocator.free_cache()  # pooled buffers freed meanwhile may hold it (PoolPoints)
    assert lane() is None  # released with its last holder
