"""Stream order on CUDA/ROCm (run by ci/gpu_check.sh): DLPack consumers on streams other than the
producer's, host-readable exports, copies, pool reuse, several GPUs, and the launch checks.

Held producers use the gate of tests/gpu/gate.py, so a missing wait shows as wrong data or a
consumer that finished early, every time. compute-sanitizer serializes kernels (a held gate
never opens): gated tests skip under HURRAY_GPU_SANITIZER=1.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels import get_kernel
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.registry import resolve_device
from hurray_gpu.sync import Stream, current_stream
from tests._support import require_peer
from tests.backend.test_stream_safety import HUGE_GRID
from tests.gpu.gate import Gate, warm

pytestmark = pytest.mark.gpu
N = 1 << 20
VALUE, NEW = 7, 3
gated = pytest.mark.skipif(os.environ.get("HURRAY_GPU_SANITIZER") == "1",
                           reason="the sanitizer serializes kernels: a held gate never opens")


class _ToConsumer:
    """Exports ``t`` naming ``consumer`` (a CuPy stream) as the DLPack consumer's stream, as
    torch does for ``torch.cuda.current_stream()``, whatever stream is current for hurray_gpu."""

    def __init__(self, t, consumer) -> None:
        self.t, self.consumer = t, consumer

    def __dlpack__(self, stream=None, **kwargs):
        return self.t.__dlpack__(stream=int(self.consumer.ptr), **kwargs)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


@gated
@pytest.mark.parametrize("mode", ["event", "consumer_stream", "not_handed_off"])
def test_dlpack_consumer_on_another_stream_waits_for_the_producer(gpu, mode: str) -> None:
    """The consumer's stream is neither the producer's nor hurray_gpu's current one: the export
    orders it after the handoff's event, after its declared streams, or (no handoff) after
    the current stream, which is then the producer's."""
    cupy = gpu.cupy
    warm(gpu, N)
    producer, declared = Stream(gpu), Stream(gpu)
    consumer = cupy.cuda.Stream(non_blocking=True)
    t = hg.from_numpy(np.zeros(N, np.uint32)).to(gpu)
    with Gate(gpu, producer) as gate:
        with producer:
            gpu.run("fill_u32", t.buffers[0], VALUE, N)
        if mode == "not_handed_off":
            with producer:
                x = cupy.from_dlpack(_ToConsumer(t, consumer))
        else:
            kwargs = {"stream": declared} if mode == "consumer_stream" else {}
            handed = t.handoff(mode, producer=producer, **kwargs)
            x = cupy.from_dlpack(_ToConsumer(handed, consumer))  # current: the default stream
        with consumer:
            total = x.sum(dtype=cupy.uint64)
        done = cupy.cuda.Event(disable_timing=True)
        done.record(consumer)
        time.sleep(0.2)  # ample time for a consumer that did not wait to finish
        assert not done.done, "the consumer ran while the producer was held"
        gate.open()
        consumer.synchronize()
    assert int(total) == VALUE * N
    assert int(x.data.ptr) == t.buffers[0].allocation.raw.ptr


@gated
def test_torch_on_its_own_stream_waits_for_an_event_handoff(gpu) -> None:
    """``with torch.cuda.stream(s): torch.from_dlpack(t.handoff("event"))``: ``s`` reads after
    the producer, though hurray_gpu's (and CuPy's) current stream is another one."""
    torch = require_peer("torch")
    if gpu.tag != 1 or not torch.cuda.is_available():
        pytest.skip("torch with CUDA is needed")
    warm(gpu, N)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # load torch's kernels and cache its memory for s first
        assert int(torch.ones(N, dtype=torch.int32, device="cuda").sum(dtype=torch.int64)) == N
    s.synchronize()
    producer = Stream(gpu)
    t = hg.from_numpy(np.zeros(N, np.int32)).to(gpu)
    with Gate(gpu, producer) as gate:
        with producer:
            gpu.run("fill_u32", t.buffers[0], VALUE, N)
        handed = t.handoff("event", producer=producer)
        with torch.cuda.stream(s):
            y = torch.from_dlpack(handed)
            total = y.sum(dtype=torch.int64)
        done = torch.cuda.Event()
        done.record(s)
        time.sleep(0.2)
        assert not done.query(), "torch's stream ran while the producer was held"
        gate.open()
        s.synchronize()
    assert int(total.item()) == VALUE * N and y.data_ptr() == t.buffers[0].allocation.raw.ptr


@gated
@pytest.mark.parametrize("mode", ["not_handed_off", "event"])
@pytest.mark.parametrize("mclass", ["host_pinned", "unified"])
def test_host_readable_export_to_numpy_waits_for_the_producer(gpu, mclass: str,
                                                              mode: str) -> None:
    """NumPy reads pinned and managed memory in place and passes no stream: the export returns
    only once the producer's stream finished (and never waits for the whole device)."""
    if MemoryClass.parse(mclass) not in gpu.memory_classes:
        pytest.skip(f"no {mclass} memory on this GPU")
    if mclass == "unified" and gpu.tag != 1:
        pytest.skip("ROCm managed memory has no DLPack device type")
    warm(gpu, N)
    producer = Stream(gpu)
    t = hg.from_numpy(np.zeros(N, np.uint32)).to(gpu, memory_class=mclass)
    kdl = {"host_pinned": 3 if gpu.tag == 1 else 11, "unified": 13}[mclass]
    assert t.__dlpack_device__() == (kdl, gpu.index)
    with Gate(gpu, producer) as gate:
        with producer:
            gpu.run("fill_u32", t.buffers[0], VALUE, N)
        opener = threading.Timer(0.2, gate.open)
        opener.start()
        if mode == "event":
            arr = np.from_dlpack(t.handoff("event", producer=producer))
        else:
            with producer:
                arr = np.from_dlpack(t)
        assert gate.is_open and not gate.failsafe_fired, "the export returned before the kernel"
        opener.join()
    assert np.all(arr == VALUE) and arr.ctypes.data == t.buffers[0].allocation.raw.ptr


@gated
def test_copies_go_on_the_current_stream_not_the_legacy_one(gpu) -> None:
    """A held blocking stream holds the legacy default stream (it waits for blocking streams):
    copies queued on a hurray_gpu stream (non-blocking) must not wait for it, yet see the
    kernels queued before them on that stream."""
    warm(gpu, N)
    s = Stream(gpu)
    data = np.arange(N, dtype=np.uint32)
    a, b = hg.Buffer(gpu, 4 * N), hg.Buffer(gpu, 4 * N)
    with Gate(gpu, gpu.cupy.cuda.Stream()), s:  # the gate holds a blocking stream
        a.copyin(data)  # pageable host memory
        b.copy_from(a)
        gpu.run("fill_u32", a, VALUE, N // 2)
        got_a, got_b = a.numpy(np.uint32), b.numpy(np.uint32)
    assert np.array_equal(got_b, data)
    assert np.all(got_a[:N // 2] == VALUE) and np.array_equal(got_a[N // 2:], data[N // 2:])


@gated
def test_copyin_returns_once_its_bytes_landed(gpu) -> None:
    """A pageable host-to-device copy queued behind held work returns only after it ran: the
    async copy alone returns once the bytes are staged, and a stream that is not ordered
    after this one (or the host) could then read the buffer before they land."""
    warm(gpu, N)
    s = Stream(gpu)
    a = hg.Buffer(gpu, 4 * N)
    data = np.arange(N, dtype=np.uint32)
    with Gate(gpu, s) as gate:
        opener = threading.Timer(0.2, gate.open)
        opener.start()
        with s:
            a.copyin(data)
        assert gate.is_open and not gate.failsafe_fired, "the copy-in returned before it ran"
        opener.join()
    assert np.array_equal(a.numpy(np.uint32), data)


@gated
@pytest.mark.parametrize("freed_on", ["writer", "default"])
def test_pool_reuse_waits_for_the_held_writer(gpu, freed_on: str) -> None:
    """A buffer freed while a held kernel still writes it goes to another stream's user only
    behind that kernel, whether it was freed on the writer's stream or on the default one."""
    warm(gpu, N)
    writer, reader = Stream(gpu), Stream(gpu)
    size = 4 * N + 4096 * (3 if freed_on == "writer" else 5)  # sizes no other test pools
    target = hg.Buffer(gpu, size)
    mem = target.allocation.raw.ptr
    with Gate(gpu, writer) as gate:
        with writer:
            gpu.run("fill_u32", target, VALUE, N)
            if freed_on == "writer":
                target.free()
        target.free()  # on the default stream (a no-op when freed on the writer's already)
        with reader:
            again = hg.Buffer(gpu, size)
            assert again.allocation.raw.ptr == mem  # reused from the pool
            gpu.run("fill_u32", again, NEW, N)
            done = reader.record()
        time.sleep(0.2)
        assert not done.query(), "the new user's kernel ran before the held one"
        gate.open()
        reader.synchronize()
    assert np.all(again.numpy(np.uint32)[:N] == NEW)


def test_stream_of_a_second_gpu_makes_it_current(gpu) -> None:
    cupy = gpu.cupy
    if gpu.count() < 2:
        pytest.skip("needs two GPUs")
    other = resolve_device((gpu.tag, 1 - gpu.index))
    s = Stream(other)
    out = hg.Buffer(other, 4 * N)
    with cupy.cuda.Device(gpu.index):
        with s:
            assert cupy.cuda.runtime.getDevice() == other.index and current_stream(other) is s
            other.run("fill_u32", out, VALUE, N)
        assert cupy.cuda.runtime.getDevice() == gpu.index
        assert current_stream(other) is other.default_stream
    s.synchronize()
    assert np.all(out.numpy(np.uint32) == VALUE)


def test_stream_contexts_unwind_on_errors(gpu) -> None:
    cupy = gpu.cupy
    s, inner = Stream(gpu), Stream(gpu)
    before = int(cupy.cuda.get_current_stream().ptr)
    with pytest.raises(KeyError), s:
        assert int(cupy.cuda.get_current_stream().ptr) == s.handle
        raise KeyError("inside the block")
    assert current_stream(gpu) is gpu.default_stream
    assert int(cupy.cuda.get_current_stream().ptr) == before
    s.__enter__()
    inner.__enter__()
    with pytest.raises(UnsupportedOpError, match="out of order"):
        s.__exit__(None, None, None)  # refused before anything is popped
    inner.__exit__(None, None, None)
    s.__exit__(None, None, None)
    assert current_stream(gpu) is gpu.default_stream
    assert int(cupy.cuda.get_current_stream().ptr) == before
    assert cupy.cuda.runtime.getDevice() == gpu.index


def test_enable_peers_twice_then_torch_launches(gpu) -> None:
    """Peer access enabled already (704) is expected, and must not surface later as an error
    of another library's launch (CuPy's runtime clears it before raising)."""
    torch = require_peer("torch")
    if MemoryClass.PEER not in gpu.memory_classes or gpu.tag != 1:
        pytest.skip("needs two CUDA GPUs with peer access")
    if not torch.cuda.is_available():
        pytest.skip("torch with CUDA is needed")
    gpu.enable_peers()
    gpu._peers_enabled = False  # enable again: every peer now answers 704
    gpu.enable_peers()
    x = torch.arange(16, device=f"cuda:{gpu.index}")
    assert int((x * 2).sum()) == 240


def test_misaligned_view_is_refused_before_the_kernel(gpu) -> None:
    """A u32 view at byte offset 2 would fault the kernel (and kill the CUDA context)."""
    root = hg.Buffer.from_bytes(gpu, np.zeros(64, np.uint8))
    at = root.allocation.offset + 2  # from the device allocation (a bounds guard may come first)
    with pytest.raises(UnsupportedOpError, match=f"byte offset {at}, not a multiple of its 4-byte"):
        gpu.run("fill_u32", root.view(2, 16), VALUE, 4)
    gpu.run("fill_u32", root.view(4, 16), VALUE, 4, wait=True)  # the context is alive
    assert root.numpy(np.uint32).tolist() == [0] + [VALUE] * 4 + [0] * 11


def test_grid_past_32_bits_is_refused_and_hip_gets_its_target(gpu) -> None:
    out = hg.Buffer.from_bytes(gpu, np.zeros(16, np.uint8))
    with pytest.raises(UnsupportedOpError, match="rounds up to whole work-groups"):
        gpu.run(HUGE_GRID, out, 4)
    assert not out.numpy().any()
    if gpu.kind == "rocm":
        assert gpu.compile_options(get_kernel("fill_u32")) == (f"--offload-arch={gpu.arch}", "-ffp-contract=off")
