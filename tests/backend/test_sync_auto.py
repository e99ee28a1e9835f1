"""Automatic accept on first use (docs/format.md, Handoff): a handed-off tensor used by any hurray_gpu op
without ``accept()`` gets the consumer rule applied on the op's (current) stream.

The producer queue is held behind a gate, so an op that skipped the rule reads the old data.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hurray_gpu import Buffer, Tensor
from hurray_gpu.runtime.registry import is_available
from hurray_gpu.runtime.registry import resolve_device as device
from hurray_gpu.sync import Stream

pytestmark = [pytest.mark.opencl,
              pytest.mark.skipif(not is_available(0x08), reason="no OpenCL device")]

N = 4096
VALUE = 9


@pytest.fixture()
def dev():
    return device("opencl:0")


def _gated_fill(dev, producer: Stream):
    import pyopencl as cl

    t = Tensor.from_numpy(np.zeros(N, np.uint32)).to(dev)
    dev.synchronize()
    gate = cl.UserEvent(dev.context)
    cl.enqueue_barrier(producer.queue, wait_for=[gate])
    with producer:
        dev.run("fill_u32", t.buffers[0], VALUE, N)
    return t, gate


def _open(gate) -> None:
    import pyopencl as cl

    gate.set_status(cl.command_execution_status.COMPLETE)


def _copy_on(dev, src: Buffer, stream: Stream) -> Buffer:
    out = Buffer(dev, N * 4)
    with stream:
        dev.run("copy_bytes", out, src, N * 4)
    return out


@pytest.mark.parametrize("mode", ["event", "consumer_stream"])
def test_first_use_applies_the_rule_and_skipping_it_is_detectable(dev, mode: str) -> None:
    producer, consumer, declared = Stream(dev), Stream(dev), Stream(dev)
    t, gate = _gated_fill(dev, producer)
    kwargs = {"stream": declared} if mode == "consumer_stream" else {}
    handed = t.handoff(mode, producer=producer, **kwargs)
    raw = t.buffers[0]  # the producer's own view: no rule attached, the race stays
    skipped = _copy_on(dev, raw, consumer)
    consumer.synchronize()  # it already ran, the gate being closed
    with consumer:
        src = handed.buffers[0]  # first use: accept on the consumer stream, no host wait
    ordered = _copy_on(dev, src, consumer)
    time.sleep(0.05)
    assert not consumer.record().query()
    _open(gate)
    consumer.synchronize()
    assert np.all(skipped.numpy(np.uint32) == 0)  # skipping the wait is visible
    assert np.all(ordered.numpy(np.uint32) == VALUE)
    assert consumer in handed._sync.streams


def test_event_released_once_and_later_streams_still_ordered(dev) -> None:
    producer, c1, c2 = Stream(dev), Stream(dev), Stream(dev)
    t, gate = _gated_fill(dev, producer)
    handed = t.handoff("event", producer=producer)
    event = handed._sync.event
    with c1:
        first = handed.buffers[0]
    assert event.released and handed._sync.event is None and handed._sync.event_released
    out1 = _copy_on(dev, first, c1)
    with c2:  # the event is gone: c2 is ordered after c1, which waits on it
        second = handed.buffers[0]
    out2 = _copy_on(dev, second, c2)
    time.sleep(0.05)
    assert not c2.record().query()
    _open(gate)
    c2.synchronize()
    assert np.all(out1.numpy(np.uint32) == VALUE) and np.all(out2.numpy(np.uint32) == VALUE)


@pytest.mark.parametrize("op", ["to", "materialize", "dlpack_device"])
def test_ops_accept_on_first_use(dev, op: str) -> None:
    producer, consumer = Stream(dev), Stream(dev)
    t, gate = _gated_fill(dev, producer)
    handed = t.handoff("event", producer=producer)
    timer = threading.Timer(0.15, _open, args=(gate,))
    timer.start()
    try:
        with consumer:
            if op == "to":
                got = handed.to("cpu").numpy()
            elif op == "materialize":
                got = handed.materialize().to("cpu").numpy()
            else:
                assert handed.__dlpack_device__()[0] == 4  # OpenCL (no buffer use yet)
                got = handed.to("cpu").numpy()
    finally:
        timer.join()
    assert np.all(got == VALUE)
    assert handed._sync.event_released and consumer in handed._sync.streams


def test_explicit_accept_then_use_is_a_no_op(dev) -> None:
    producer, declared = Stream(dev), Stream(dev)
    t, gate = _gated_fill(dev, producer)
    handed = t.handoff("consumer_stream", declared, producer=producer)
    handed.accept(declared)
    with declared:
        src = handed.buffers[0]
    assert handed._sync.streams == [declared]
    out = _copy_on(dev, src, declared)
    _open(gate)
    declared.synchronize()
    assert np.all(out.numpy(np.uint32) == VALUE)
