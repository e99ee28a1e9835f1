"""OpenCL streams and events, and handoff ordering (docs/format.md, Handoff) between two command queues.

The producer queue is held behind a user event (a gate), so a consumer that skips the wait
deterministically reads the old data: the race is made visible, not left to timing.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hurray_gpu import Tensor, UnsupportedOpError
from hurray_gpu.format.descriptor.buffers import SyncMode
from hurray_gpu.runtime.registry import is_available
from hurray_gpu.runtime.registry import resolve_device as device
from hurray_gpu.sync import Event, Stream, current_stream

pytestmark = [pytest.mark.opencl,
              pytest.mark.skipif(not is_available(0x08), reason="no OpenCL device")]

N = 4096
VALUE = 7


@pytest.fixture()
def dev():
    return device("opencl:0")


def _gate(stream: Stream):
    """Hold ``stream``'s queue until the returned user event is set complete."""
    import pyopencl as cl

    gate = cl.UserEvent(stream.device.context)
    cl.enqueue_barrier(stream.queue, wait_for=[gate])
    return gate


def _open(gate) -> None:
    import pyopencl as cl

    gate.set_status(cl.command_execution_status.COMPLETE)


def _produce(dev, producer: Stream):
    """A zeroed device tensor, then (gated) a kernel writing VALUE on ``producer``."""
    t = Tensor.from_numpy(np.zeros(N, np.uint32)).to(dev)
    dev.synchronize()
    gate = _gate(producer)
    with producer:
        dev.run("fill_u32", t.buffers[0], VALUE, N)
    return t, gate


def _consume(dev, t: Tensor, consumer: Stream):
    from hurray_gpu import Buffer

    out = Buffer(dev, N * 4)
    with consumer:
        dev.run("copy_bytes", out, t.buffers[0], N * 4)
    return out


def test_current_stream_stack_and_launches_follow_it(dev) -> None:
    s1, s2 = Stream(dev), Stream(dev)
    assert current_stream(dev) is dev.default_stream and dev.default_stream.is_default
    with s1:
        assert current_stream(dev) is s1
        with s2:
            assert current_stream(dev) is s2
        assert current_stream(dev) is s1
    assert current_stream(dev) is dev.default_stream
    # The other thread has its own stack.
    seen = []
    with s1:
        th = threading.Thread(target=lambda: seen.append(current_stream(dev)))
        th.start()
        th.join()
    assert seen == [dev.default_stream]
    # A launch on a gated stream does not run until the gate opens.
    t, gate = _produce(dev, s1)
    done = s1.record()
    time.sleep(0.05)
    assert not done.query()
    _open(gate)
    done.synchronize()
    assert done.query()
    assert np.all(t.to("cpu").numpy() == VALUE)


def test_event_elapsed_and_errors(dev) -> None:
    s = Stream(dev)
    start = Event(dev).record(s)
    with s:
        dev.run("fill_u32", Tensor.from_numpy(np.zeros(N, np.uint32)).to(dev).buffers[0], 1, N)
    end = s.record()
    assert end.elapsed_ms(start) <= 0.0 <= start.elapsed_ms(end)
    with pytest.raises(UnsupportedOpError, match="never recorded"):
        Event(dev).synchronize()
    end.release()
    end.release()  # idempotent
    with pytest.raises(UnsupportedOpError, match="released"):
        end.wait(s)
    with pytest.raises(UnsupportedOpError, match="not a stream of"):
        Event(dev).record(Stream("cpu"))


def test_skipping_the_wait_is_detectable(dev) -> None:
    producer, consumer = Stream(dev), Stream(dev)
    t, gate = _produce(dev, producer)
    out = _consume(dev, t, consumer)  # no handoff: the consumer races ahead
    consumer.synchronize()
    _open(gate)
    producer.synchronize()
    assert np.all(out.numpy(np.uint32) == 0)
    assert np.all(t.to("cpu").numpy() == VALUE)


@pytest.mark.parametrize("mode", ["event", "consumer_stream"])
def test_handoff_orders_consumer_after_producer(dev, mode: str) -> None:
    producer, consumer = Stream(dev), Stream(dev)
    t, gate = _produce(dev, producer)
    kwargs = {"stream": consumer} if mode == "consumer_stream" else {}
    handed = t.handoff(mode, producer=producer, **kwargs)
    assert handed.sync_mode == SyncMode[mode.upper()]
    assert all(h.sync_mode == SyncMode[mode.upper()] for h in handed.descriptor.buffers)
    assert handed.descriptor_bytes[-16 + 13] == int(SyncMode[mode.upper()])
    handed.accept(consumer)
    out = _consume(dev, handed, consumer)
    done = consumer.record()
    time.sleep(0.05)
    assert not done.query()  # the consumer waits on the device, the host did not block
    _open(gate)
    consumer.synchronize()
    assert np.all(out.numpy(np.uint32) == VALUE)


def test_producer_synced_handoff_waits_on_the_host(dev) -> None:
    producer, consumer = Stream(dev), Stream(dev)
    t, gate = _produce(dev, producer)
    opening = threading.Event()  # set just before the gate opens

    def _open_later() -> None:
        opening.set()
        _open(gate)

    timer = threading.Timer(0.2, _open_later)
    timer.start()
    handed = t.handoff("producer_synced", producer=producer)
    # The producer could not finish before the gate opened: the handoff waited for it.
    assert opening.is_set()
    timer.join()
    assert handed.accept(consumer) is handed
    out = _consume(dev, handed, consumer)
    consumer.synchronize()
    assert np.all(out.numpy(np.uint32) == VALUE)


def test_event_mode_waits_on_every_stream_and_releases_event_once(dev) -> None:
    producer, c1, c2 = Stream(dev), Stream(dev), Stream(dev)
    t, gate = _produce(dev, producer)
    calls = []
    handed = t.handoff(SyncMode.EVENT, producer=producer, on_release=lambda: calls.append(1))
    event = handed._sync.event
    handed.accept([c1, c2])
    assert event.released and handed._sync.event is None
    outs = [_consume(dev, handed, c1), _consume(dev, handed, c2)]
    _open(gate)
    handed.release()
    handed.release()
    assert calls == [1]  # the buffer release ran once, after the consumers finished
    assert all(np.all(o.numpy(np.uint32) == VALUE) for o in outs)


def test_consumer_stream_rules(dev) -> None:
    producer, declared, other = Stream(dev), Stream(dev), Stream(dev)
    t, gate = _produce(dev, producer)
    handed = t.handoff("consumer_stream", declared, producer=producer)
    with pytest.raises(UnsupportedOpError, match="not a declared consumer stream"):
        handed.accept(other)
    handed.accept(other, insert_wait=True)  # ordered after the declared stream
    out = _consume(dev, handed, other)
    time.sleep(0.05)
    assert not other.record().query()
    _open(gate)
    other.synchronize()
    assert np.all(out.numpy(np.uint32) == VALUE)


@pytest.mark.parametrize("mode", ["event", "consumer_stream"])
def test_a_borrowed_stream_is_ordered_but_never_kept(dev, mode: str) -> None:
    """A DLPack consumer's stream is lent for one call: keeping it made release() synchronize
    a handle its owner had destroyed (a segfault on CUDA). It is ordered after the producer
    all the same."""
    producer, declared, lent = Stream(dev), Stream(dev), Stream(dev)
    lent.borrowed = True
    t, gate = _produce(dev, producer)
    kwargs = {"stream": declared} if mode == "consumer_stream" else {}
    handed = t.handoff(mode, producer=producer, **kwargs)
    handed.accept(lent, insert_wait=True)
    assert lent not in handed._sync.streams
    out = _consume(dev, handed, lent)
    time.sleep(0.05)
    assert not lent.record().query()  # held behind the producer's gate
    _open(gate)
    lent.synchronize()
    assert np.all(out.numpy(np.uint32) == VALUE)


def test_bad_handoff_input(dev) -> None:
    t = Tensor.from_numpy(np.zeros(8, np.uint32)).to(dev)
    for bad in (3, 0xFF, -1, "fence", True, None):
        with pytest.raises(UnsupportedOpError, match="sync_mode"):
            t.handoff(bad)
    with pytest.raises(UnsupportedOpError, match="needs the consumer's stream"):
        t.handoff("consumer_stream")
    with pytest.raises(UnsupportedOpError, match="takes no consumer stream"):
        t.handoff("event", Stream(dev))
    with pytest.raises(UnsupportedOpError, match="not a Stream of"):
        t.handoff("consumer_stream", Stream("cpu"))
    # Event mode declared in the handles but no event came with the tensor.
    desc = t.handoff("event").descriptor
    bare = Tensor.from_parts(desc, list(t.buffers))
    with pytest.raises(UnsupportedOpError, match="event mode without an event"):
        bare.accept()
    desc2 = t.handoff("consumer_stream", Stream(dev)).descriptor
    with pytest.raises(UnsupportedOpError, match="without declared consumer streams"):
        Tensor.from_parts(desc2, list(t.buffers)).accept()


def test_pool_reuse_waits_for_other_streams(dev) -> None:
    from hurray_gpu import Buffer

    a, b = Stream(dev), Stream(dev)
    size = N * 4 + 4096 * 7  # a size no other test pools
    buf = Buffer(dev, size)
    gate = _gate(a)
    with a:
        dev.run("fill_u32", buf, VALUE, N)
    mem = buf.allocation.raw[0]
    buf.free()  # the gated kernel on `a` still has to write it
    with b:
        again = Buffer(dev, size)
        assert again.allocation.raw[0] is mem  # reused from the pool
        dev.run("fill_u32", again, 3, N)
        done = b.record()
    time.sleep(0.05)
    assert not done.query()  # b's queue waits for a's pending kernel, on the device
    _open(gate)
    b.synchronize()
    assert np.all(again.numpy(np.uint32)[:N] == 3)
