"""Launch checks every backend shares (element-aligned views, grids that fit a 32-bit index),
stream-safe pool reuse, and handoff order for a consumer on a stream of its own, on the backends
whose streams run asynchronously (OpenCL, Vulkan).

A held stream (an OpenCL user event, a host-signalled Vulkan timeline semaphore) keeps a kernel
queued, so a reuse that skipped its wait deterministically shows the old kernel's data.
"""

from __future__ import annotations

import functools
import threading
import time
import types
from collections.abc import Callable

import numpy as np
import pytest

from hurray_gpu import Buffer, Tensor, UnsupportedOpError
from hurray_gpu.dialect.kernel import KernelDef, buf, scalar
from hurray_gpu.runtime.program import MAX_GRID_DIM, _check_grid
from hurray_gpu.runtime.registry import is_available, resolve_device
from hurray_gpu.sync import Event, Stream

N = 1024
VALUE, NEW = 7, 3
# A one-work-item store whose grid asks for 2**32 - 1 work items: whole work-groups of 64
# round that up to 2**32, past what a 32-bit global id (and HIP's grid x block) can index.
HUGE_GRID = KernelDef(
    name="huge_grid_store", params=(buf("dst", "u32", "w"), scalar("n")),
    body="""
        u32 i = GLOBAL_ID(0);
        if (i != 0u) return;
        STORE(dst, 0, 7u);
    """,
    grid=lambda s: (MAX_GRID_DIM,), extents=lambda s: {"dst": s["n"]},
    reference=lambda a: None, doc="dst[0] = 7 from a grid of 2**32 - 1 work items.")


def test_grid_rounded_to_work_groups_must_fit_32_bits(kernel_device) -> None:
    out = Buffer(kernel_device, 16).copyin(np.zeros(4, np.uint32))
    with pytest.raises(UnsupportedOpError, match="rounds up to whole work-groups"):
        kernel_device.run(HUGE_GRID, out, 4)
    with pytest.raises(UnsupportedOpError, match="rounds up to whole work-groups"):
        kernel_device.run("fill_u32", out, 1, 4, global_size=(MAX_GRID_DIM,))
    assert out.numpy(np.uint32).tolist() == [0, 0, 0, 0]  # refused before any launch
    # The largest sizes that still fit: exact multiples of the work-group, and any y/z size.
    assert _check_grid((MAX_GRID_DIM - 63,), (64, 1, 1)) == (MAX_GRID_DIM - 63, 1, 1)
    assert _check_grid((1, MAX_GRID_DIM), (64, 1, 1)) == (1, MAX_GRID_DIM, 1)
    kernel_device.run("fill_u32", out, VALUE, 4, global_size=(4,))
    assert out.numpy(np.uint32).tolist() == [VALUE] * 4


def test_views_must_start_on_a_whole_element(kernel_device) -> None:
    dev = kernel_device
    align = max(4, int(dev.offset_alignment))  # OpenCL sub-buffers need their base alignment
    root = Buffer(dev, 2 * align + 64).copyin(np.zeros((2 * align + 64) // 4, np.uint32))
    # Offsets count from the device allocation: under HURRAY_GPU_DEBUG_BOUNDS a guard comes
    # first and every buffer is a view of it.
    base = root.allocation.offset
    for offset in (2, align + 2):
        with pytest.raises(UnsupportedOpError, match=f"byte offset {base + offset}, not a "
                                                     "multiple of its 4-byte elements"):
            dev.run("fill_u32", root.view(offset, 16), VALUE, 4)
    assert not root.numpy(np.uint32).any()  # nothing was written
    dev.run("fill_u32", root.view(align, 16), VALUE, 4)
    # u8 views may start at any byte here (OpenCL and Vulkan bind views at aligned offsets).
    at, moved = align // 4, dev.kind == "cpu"
    if moved:
        dev.run("copy_bytes", root.view(align + 17, 3), root.view(align, 3), 3)
    words = root.numpy(np.uint32)
    assert words[at:at + 5].tolist() == [VALUE] * 4 + [VALUE << 8 if moved else 0]
    assert not words[:at].any() and not words[at + 5:].any()


# -- pool reuse across streams ------------------------------------------------------------------

def _async_device(kind: str):
    if not is_available({"opencl": 0x08, "vulkan": 0x04}[kind]):  # CI requires both
        pytest.skip(f"no {kind} device")
    dev = resolve_device(f"{kind}:0")
    if kind == "vulkan" and not dev.ctx.timeline:
        pytest.skip("this Vulkan driver has no timeline semaphores")
    return dev


def _memory(buf: Buffer) -> object:
    """The device memory object behind ``buf``: the same one when the pool hands it out again,
    also under HURRAY_GPU_DEBUG_BOUNDS, whose guarded buffers are views of it."""
    raw = buf.allocation.raw
    return raw[0] if isinstance(raw, tuple) else raw.buffer  # a cl_mem or a VkBuffer


def _hold(dev, stream: Stream) -> Callable[[], None]:
    """Hold ``stream``'s later work until the returned opener (idempotent) is called."""
    if dev.kind == "opencl":
        import pyopencl as cl

        gate = cl.UserEvent(dev.context)
        cl.enqueue_barrier(stream.queue, wait_for=[gate])
        release = functools.partial(gate.set_status, cl.command_execution_status.COMPLETE)
    else:
        from hurray_gpu.backends.vulkan_context import host_signal
        from hurray_gpu.backends.vulkan_sync import create_timeline

        owner = types.SimpleNamespace(sem=create_timeline(dev.ctx))  # add_wait holds it
        stream.add_wait(owner, 1)
        release = functools.partial(host_signal, dev.ctx, owner.sem, 1)
    lock, opened = threading.Lock(), []

    def opener() -> None:
        with lock:
            if not opened:
                opened.append(release())
    return opener


@pytest.mark.parametrize("kind", ["opencl", "vulkan"])
@pytest.mark.parametrize("holder", ["default", "own"])
def test_buffer_freed_under_a_held_kernel_is_reused_after_it(kind: str, holder: str) -> None:
    """Freed while the only busy stream is the one holding its writer; taken on a stream made
    after the free: the new user's kernel must still run after the held one."""
    dev = _async_device(kind)
    if kind == "vulkan" and holder == "default":
        pytest.skip("Vulkan's default stream waits on the host: nothing stays queued on it")
    size = N * 4 + (1 if holder == "default" else 2) * 4096 + 64 * (kind == "vulkan")
    dev.synchronize()
    held = dev.default_stream if holder == "default" else Stream(dev)
    target = Buffer(dev, size)
    opener = _hold(dev, held)
    try:
        with held:
            dev.run("fill_u32", target, VALUE, N)
        mem = _memory(target)
        target.free()
        later = Stream(dev)
        with later:
            again = Buffer(dev, size)
            assert _memory(again) == mem  # reused from the pool
            dev.run("fill_u32", again, NEW, N)
            done = later.record()
        time.sleep(0.05)
        assert not done.query(), "the new user's kernel ran before the held one"
    finally:
        opener()
    later.synchronize()
    assert np.all(again.numpy(np.uint32)[:N] == NEW)


@pytest.mark.parametrize("kind", ["opencl", "vulkan"])
def test_copyin_into_a_reused_buffer_waits_for_its_held_writer(kind: str) -> None:
    """Host bytes copied into a reused buffer land after the held kernel that wrote it before
    the free, not under it; the copy-in returns only once they landed."""
    dev = _async_device(kind)
    size = N * 4 + 3 * 4096
    writer, reader = Stream(dev), Stream(dev)
    target = Buffer(dev, size)
    opener, opening = _hold(dev, writer), threading.Event()  # set just before it opens

    def open_later() -> None:
        opening.set()
        opener()
    timer = threading.Timer(0.2, open_later)
    try:
        with writer:
            dev.run("fill_u32", target, VALUE, N)
            mem = _memory(target)
            target.free()
        with reader:
            again = Buffer(dev, size)
            assert _memory(again) == mem
            timer.start()
            again.copyin(np.full(size // 4, NEW, np.uint32))
            # Not timer.finished: the copy-in may return as the gate opens, before it is set.
            assert opening.is_set(), "the copy-in returned before the held kernel ran"
            got = again.numpy(np.uint32)
    finally:
        timer.cancel()
        opener()
    writer.synchronize()
    assert np.all(got == NEW) and np.all(again.numpy(np.uint32) == NEW)


@pytest.mark.parametrize("kind", ["opencl", "vulkan"])
@pytest.mark.parametrize("mode", ["event", "consumer_stream"])
def test_consumer_of_a_two_writer_handoff_runs_after_both(kind: str, mode: str) -> None:
    """Two producer streams, the held one listed second; the consumer is on a third stream
    (not declared, not current at the handoff) and accepts on first use, as the stream of a
    DLPack consumer does: its kernel must still wait for the held writer."""
    dev = _async_device(kind)
    idle_writer, held_writer, declared, consumer = (Stream(dev) for _ in range(4))
    t = Tensor.from_numpy(np.zeros(N, np.uint32)).to(dev)
    out = Buffer(dev, 4 * N).copyin(np.zeros(N, np.uint32))
    dev.synchronize()
    opener = _hold(dev, held_writer)
    try:
        with held_writer:
            dev.run("fill_u32", t.buffers[0], VALUE, N)
        kwargs = {"stream": declared} if mode == "consumer_stream" else {}
        handed = t.handoff(mode, producer=[idle_writer, held_writer], **kwargs)
        with consumer:
            dev.run("copy_bytes", out, handed.buffers[0], 4 * N)
            done = consumer.record()
        time.sleep(0.05)
        assert not done.query(), "the consumer ran before the held writer"
    finally:
        opener()
    consumer.synchronize()
    assert np.all(out.numpy(np.uint32) == VALUE)


@pytest.mark.parametrize("kind", ["opencl", "vulkan"])
@pytest.mark.parametrize("timing", [True, False])
def test_an_event_recorded_after_a_wait_completes_after_it(kind: str, timing: bool) -> None:
    """A stream told to wait for a held writer (Event.wait), with no work of its own: an event
    recorded on it afterwards completes only after the writer, timed or not (CUDA's order)."""
    dev = _async_device(kind)
    held, idle = Stream(dev), Stream(dev)
    target = Buffer(dev, 4 * N)
    opener = _hold(dev, held)
    try:
        with held:
            dev.run("fill_u32", target, VALUE, N)
        held.record().wait(idle)
        after = Event(dev, timing=timing).record(idle)
        time.sleep(0.05)
        assert not after.query(), "the event completed before what its stream waits for"
    finally:
        opener()
    after.synchronize()  # so the writer has run: its words are there
    assert np.all(target.numpy(np.uint32) == VALUE)


class _Trap:
    """A garbage cycle whose finalizer records on ``stream``, as a canary free run by the
    cyclic collector does."""

    def __init__(self, stream: Stream, fired: list[object]) -> None:
        self.me, self.stream, self.fired = self, stream, fired

    def __del__(self) -> None:
        self.fired.append(self.stream.record())


def test_a_collection_while_submitting_keeps_the_timeline_in_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A collection that runs between a stream taking its next timeline value and queueing the
    submission must not submit a later value first (the counter would go backwards and the
    stream would never read as done)."""
    import gc

    from hurray_gpu.backends import vulkan_context

    dev = _async_device("vulkan")
    stream = dev.default_stream
    stream.synchronize()
    fired: list[object] = []
    armed = [True]
    real_submit = vulkan_context.submit_info

    def trap_then(real: Callable[..., object]) -> Callable[..., object]:
        def inner(*args: object) -> object:
            if armed and armed.pop():
                _Trap(stream, fired)  # collected by the next allocation, if collection runs
                junk = [[] for _ in range(4)]  # allocations: an automatic collection's trigger
                del junk
            return real(*args)
        return inner

    monkeypatch.setattr(vulkan_context, "submit_info", trap_then(real_submit))
    old = gc.get_threshold()
    gc.set_threshold(1, 1, 1)
    try:
        stream.record()
    finally:
        gc.set_threshold(*old)
    gc.collect()  # after the submission, the trap runs if it has not yet
    assert fired, "the trap never ran"
    deadline = time.monotonic() + 10
    while not stream.query() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stream.query(), "the stream's timeline went out of order: it never reads as done"
