"""CUDA/ROCm streams, events and handoff (docs/format.md, Handoff) to CuPy and torch (run by ci/gpu_check.sh).

The producer stream is held by a gate (tests/gpu/gate.py: a spin kernel reading a pinned host
flag), so a consumer that skipped the wait reads the old data deterministically.
compute-sanitizer serializes kernels (a held gate would never open), so gated tests skip under
HURRAY_GPU_SANITIZER=1.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.format.descriptor.buffers import SyncMode
from hurray_gpu.sync import Event, Stream, current_stream
from tests._support import require_peer
from tests.gpu.gate import Gate, warm

pytestmark = pytest.mark.gpu
N = 1 << 20
VALUE = 7
gated = pytest.mark.skipif(os.environ.get("HURRAY_GPU_SANITIZER") == "1",
                           reason="the sanitizer serializes kernels: a held gate never opens")


def _zeros(gpu):
    return hg.from_numpy(np.zeros(N, np.uint32)).to(gpu)


def _produce(gpu, producer: Stream):
    """An ungated producer: VALUE written on ``producer`` (not waited for)."""
    t = _zeros(gpu)
    with producer:
        gpu.run("fill_u32", t.buffers[0], VALUE, N)
    return t


def test_stream_classes_and_current_stream(gpu) -> None:
    s = Stream(gpu)
    assert type(s).__name__ == "CuStream" and s.handle != 0
    assert current_stream(gpu) is gpu.default_stream
    with s:
        assert current_stream(gpu) is s
        assert int(gpu.cupy.cuda.get_current_stream().ptr) == s.handle  # launches follow
    start, end = Event(gpu), Event(gpu)
    start.record(s)
    with s:
        gpu.run("fill_u32", hg.from_numpy(np.zeros(N, np.uint32)).to(gpu).buffers[0], 1, N)
    end.record(s)
    assert end.elapsed_ms(start) <= 0.0 <= start.elapsed_ms(end)
    from hurray_gpu.backends.cuda import external_stream

    foreign = gpu.cupy.cuda.Stream(non_blocking=True)
    assert external_stream(gpu, int(foreign.ptr)).handle == int(foreign.ptr)


@gated
def test_skipping_the_wait_is_detectable(gpu) -> None:
    """The control: a consumer that does not wait reads the zeros the held producer has not
    yet overwritten."""
    warm(gpu, N)
    producer, consumer = Stream(gpu), Stream(gpu)
    t, out = _zeros(gpu), hg.Buffer(gpu, N * 4)
    with Gate(gpu, producer):
        with producer:
            gpu.run("fill_u32", t.buffers[0], VALUE, N)
        with consumer:
            gpu.run("copy_bytes", out, t.buffers[0], N * 4)  # no handoff
        consumer.synchronize()  # done while the producer is still held
    producer.synchronize()
    assert np.all(out.numpy(np.uint32) == 0)
    assert np.all(t.to("cpu").numpy() == VALUE)  # the producer ran once the gate opened


@gated
@pytest.mark.parametrize("mode", ["event", "consumer_stream"])
@pytest.mark.parametrize("explicit", [True, False])
def test_handoff_orders_cupy_consumer(gpu, mode: str, explicit: bool) -> None:
    cupy = gpu.cupy
    warm(gpu, N)
    producer, consumer = Stream(gpu), Stream(gpu)
    t = _zeros(gpu)
    kwargs = {"stream": consumer} if mode == "consumer_stream" else {}
    with Gate(gpu, producer) as gate:
        with producer:
            gpu.run("fill_u32", t.buffers[0], VALUE, N)
        handed = t.handoff(mode, producer=producer, **kwargs)
        assert handed.sync_mode == SyncMode[mode.upper()]
        if explicit:
            handed.accept(consumer)
        with consumer:
            x = cupy.from_dlpack(handed)  # first use applies the rule on the consumer stream
            total = x.sum(dtype=cupy.uint64)
        done = consumer.record()
        time.sleep(0.2)  # ample time for a consumer that did not wait to finish
        assert not done.query(), "the consumer ran while the producer was held"
        gate.open()
        consumer.synchronize()
    assert int(total) == VALUE * N
    handed.release()


@pytest.mark.parametrize("mode", ["producer_synced", "event", "consumer_stream"])
def test_handoff_to_torch_on_its_stream(gpu, mode: str) -> None:
    torch = require_peer("torch")
    if gpu.tag != 1 or not torch.cuda.is_available():
        pytest.skip("torch with CUDA is needed")
    from hurray_gpu.backends.cuda import external_stream

    torch_stream = torch.cuda.Stream()
    consumer = external_stream(gpu, int(torch_stream.cuda_stream))
    producer = Stream(gpu)
    t = _produce(gpu, producer)
    kwargs = {"stream": consumer} if mode == "consumer_stream" else {}
    handed = t.handoff(mode, producer=producer, **kwargs)
    with consumer, torch.cuda.stream(torch_stream):
        y = torch.from_dlpack(handed)
        total = int(y.sum(dtype=torch.int64).item())
    assert total == VALUE * N
    assert y.data_ptr() == t.buffers[0].allocation.raw.ptr


@pytest.mark.parametrize("mode", ["producer_synced", "event", "consumer_stream"])
def test_handoff_modes_cupy_ungated(gpu, mode: str) -> None:
    """The sanitizer's run: every mode delivers the producer's data on another stream."""
    cupy = gpu.cupy
    producer, consumer = Stream(gpu), Stream(gpu)
    t = _produce(gpu, producer)
    kwargs = {"stream": consumer} if mode == "consumer_stream" else {}
    calls = []
    handed = t.handoff(mode, producer=producer, on_release=lambda: calls.append(1), **kwargs)
    with consumer:
        x = cupy.from_dlpack(handed)
        total = int(x.sum(dtype=cupy.uint64))
    assert total == VALUE * N and int(x.data.ptr) == t.buffers[0].allocation.raw.ptr
    handed.release()
    handed.release()
    assert calls == [1]


@gated
def test_producer_synced_waits_on_the_host(gpu) -> None:
    warm(gpu, N)
    producer = Stream(gpu)
    t = _zeros(gpu)
    with Gate(gpu, producer) as gate:
        with producer:
            gpu.run("fill_u32", t.buffers[0], VALUE, N)
        opener = threading.Timer(0.2, gate.open)
        opener.start()
        handed = t.handoff("producer_synced", producer=producer)
        # Returned only after the producer finished, which it could not before the gate opened.
        assert gate.is_open and not gate.failsafe_fired
        opener.join()
    assert handed.sync_mode == SyncMode.PRODUCER_SYNCED
    assert np.all(handed.to("cpu").numpy() == VALUE)
