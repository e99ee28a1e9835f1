"""Debug canary allocator (HURRAY_GPU_DEBUG_BOUNDS=1): out-of-bounds kernel writes are caught.

Each test opens a fresh device with the flag set (allocators read it once, at creation; the
process-wide devices stay as the environment made them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from hurray_gpu.config import debug_bounds
from hurray_gpu.dialect.kernel import KernelDef, buf, scalar
from hurray_gpu.errors import BoundsViolation, UnsupportedOpError
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.canary import MIN_PAD, CanaryAllocator, pattern
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import MemoryClass
from tests.docs.quotes import doc_quote

FLAG = "HURRAY_GPU_DEBUG_BOUNDS"
_OPENED: dict[tuple[str, bool], Device] = {}


def _poke(dtype: str) -> KernelDef:
    # One work item stores 7 at element idx (i32: -1 is the element before the start).
    return KernelDef(
        name=f"canary_poke_{dtype}",
        params=(buf("dst", dtype, "w"), scalar("n"), scalar("idx", "i32")),
        body="""
            u32 i = GLOBAL_ID(0);
            if (i != 0u) return;
            STORE(dst, idx, 7u);
        """,
        grid=lambda s: (1,), extents=lambda s: {"dst": s["n"]},
        reference=lambda a: None, doc="dst[idx] = 7, unchecked: writes out of bounds on purpose.",
    )


POKE_U32, POKE_U8 = _poke("u32"), _poke("u8")


def _fresh(like: Device, guarded: bool) -> Device:
    """A new device of ``like``'s backend, opened with the flag on or off (cached per module)."""
    key = (like.spec, guarded)
    if key not in _OPENED:
        with pytest.MonkeyPatch.context() as mp:
            if guarded:
                mp.setenv(FLAG, "1")
            else:
                mp.delenv(FLAG, raising=False)
            _OPENED[key] = type(like)(like.index)
    return _OPENED[key]


@pytest.fixture(scope="module", autouse=True)
def _close_fresh_devices() -> Iterator[None]:
    yield
    for dev in _OPENED.values():
        dev.finalize()
    _OPENED.clear()


@pytest.fixture
def guarded(kernel_device: Device) -> Device:
    return _fresh(kernel_device, guarded=True)


def _filled(dev: Device, count: int, dtype: Any = np.uint32) -> tuple[Buffer, np.ndarray]:
    data = (np.arange(count) * 2654435761 % 251 + 1).astype(dtype)
    return Buffer.from_bytes(dev, data), data


def _intact(buffer: Buffer) -> bool:
    alloc = buffer.device.allocator
    guard = alloc.guard_of(buffer.allocation) if isinstance(alloc, CanaryAllocator) else None
    return guard is not None and alloc.find(guard) is None


def test_flag_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (("1", True), ("yes", True), ("0", False), ("", False)):
        monkeypatch.setenv(FLAG, value)
        assert debug_bounds() is expected
    monkeypatch.delenv(FLAG)
    assert debug_bounds() is False


def test_pattern_is_position_dependent_and_never_constant() -> None:
    block = np.frombuffer(pattern(0, 256), np.uint8)
    assert sorted(block.tolist()) == list(range(256))  # every byte value once per block
    assert pattern(0, 256) != pattern(256, 256) and pattern(100, 8) == pattern(0, 108)[100:]


@pytest.mark.parametrize("idx", [16, 17, 40])
def test_write_past_the_end_raises_naming_kernel_and_buffer(guarded: Device, idx: int) -> None:
    dst, data = _filled(guarded, 16)
    if guarded.kind in ("vulkan", "webgpu"):
        # The shader's window guard flags the u32 store, and robustBufferAccess (enabled by
        # the context on lavapipe) discards it; WebGPU's accessor skips the store itself:
        # nothing outside the buffer changes.
        with pytest.raises(UnsupportedOpError, match=doc_quote("indexed outside its buffers")):
            guarded.run(POKE_U32, dst, n=16, idx=idx)
        assert _intact(dst)
        np.testing.assert_array_equal(dst.numpy(np.uint32), data)
        return
    with pytest.raises(BoundsViolation) as info:
        guarded.run(POKE_U32, dst, n=16, idx=idx)
    exc = info.value
    assert (exc.kernel, exc.buffer, exc.side, exc.offset, exc.nbytes) == (
        "canary_poke_u32", "dst", "after", 4 * idx, 64)
    assert "canary_poke_u32" in str(exc) and "buffer dst" in str(exc) and "Fix:" in str(exc)
    np.testing.assert_array_equal(dst.numpy(np.uint32), data)
    assert _intact(dst)  # re-armed: the next launch is checked afresh
    guarded.run(POKE_U32, dst, n=16, idx=3)
    assert dst.numpy(np.uint32)[3] == 7


def test_write_before_the_start_raises(guarded: Device) -> None:
    dst, data = _filled(guarded, 16)
    if guarded.kind in ("vulkan", "webgpu"):  # uint(-1) leaves the window: flagged, discarded
        with pytest.raises(UnsupportedOpError):
            guarded.run(POKE_U32, dst, n=16, idx=-1)
        assert _intact(dst)
        return
    with pytest.raises(BoundsViolation) as info:
        guarded.run(POKE_U32, dst, n=16, idx=-1)
    assert (info.value.side, info.value.offset, info.value.buffer) == ("before", -4, "dst")
    np.testing.assert_array_equal(dst.numpy(np.uint32), data)


def test_byte_overrun_inside_the_last_word_is_caught_everywhere(guarded: Device) -> None:
    # Vulkan binds whole 32-bit words, so byte 5 of a 5-byte buffer is inside its window: the
    # shader guard cannot see it, the canary does (on every backend).
    dst, data = _filled(guarded, 5, np.uint8)
    with pytest.raises(BoundsViolation) as info:
        guarded.run(POKE_U8, dst, n=5, idx=5)
    assert (info.value.kernel, info.value.side, info.value.offset) == ("canary_poke_u8", "after", 5)
    np.testing.assert_array_equal(dst.numpy(np.uint8), data)


def test_correct_kernels_give_identical_results_with_the_flag_on(kernel_device: Device) -> None:
    plain, guarded = _fresh(kernel_device, False), _fresh(kernel_device, True)
    x = np.random.default_rng(5).standard_normal(1003).astype(np.float32)
    y = np.random.default_rng(6).standard_normal(1003).astype(np.float32)
    outs = []
    for dev in (plain, guarded):
        bx, by = Buffer.from_bytes(dev, x), Buffer.from_bytes(dev, y)
        dev.run("axpy_f32", by, bx, a=1.5, n=1003)
        # A view at an aligned offset inside a bigger buffer keeps working with the padding.
        big = Buffer.from_bytes(dev, np.zeros(2048, np.uint8))
        part = big.view(512, 1003)
        dev.run("copy_bytes", part, Buffer.from_bytes(dev, x.view(np.uint8)[:1003]), n=1003)
        outs.append((by.numpy(np.float32), big.numpy(np.uint8)))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert outs[1][1][512:1515].tobytes() == x.view(np.uint8)[:1003].tobytes()


def test_flag_off_pads_nothing_and_never_checks(kernel_device: Device,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _fresh(kernel_device, False)
    assert not isinstance(plain.allocator, CanaryAllocator)
    assert type(plain.program(POKE_U32)) is plain.program_cls  # launches are not wrapped
    before = plain.allocator.stats()["allocated_bytes"]
    buffer = Buffer(plain, 100)
    assert plain.allocator.stats()["allocated_bytes"] - before == 100
    assert buffer.allocation.base is None and buffer.allocation.offset == 0
    buffer.free()


def test_flag_on_pads_both_sides_and_pools_only_padded_roots(guarded: Device) -> None:
    alloc = guarded.allocator
    assert isinstance(alloc, CanaryAllocator)
    pad = alloc.pad
    assert pad % MIN_PAD == 0 and pad % guarded.offset_alignment == 0
    before = alloc.stats()["allocated_bytes"]
    first = Buffer(guarded, 100)
    root = first.allocation.root
    assert alloc.stats()["allocated_bytes"] - before == 100 + 2 * pad
    assert (root.nbytes, first.allocation.offset, first.offset, first.nbytes) == (
        100 + 2 * pad, pad, 0, 100)
    assert first.view(8, 16).offset == 8
    first.free()
    assert alloc.stats()["allocated_bytes"] == before
    # A request the size of the padded root must not get that root back unpadded.
    other = Buffer(guarded, 100 + 2 * pad)
    assert other.allocation.root.raw is not root.raw and other.allocation.root.nbytes > other.nbytes
    again = Buffer(guarded, 100)
    assert again.allocation.root.raw is root.raw and _intact(again)
    other.free()
    again.free()


def test_free_detects_a_write_that_bypassed_every_kernel_check(guarded: Device) -> None:
    buffer, _ = _filled(guarded, 16)
    alloc, root = guarded.allocator, buffer.allocation.root
    guarded.run(POKE_U32, buffer, n=16, idx=0)  # recorded as the last kernel checked
    assert isinstance(alloc, CanaryAllocator)
    # A write no kernel check saw: straight into the padded root's memory.
    alloc.inner.copyin(alloc.inner.view(root, alloc.pad + 64 + 2, 1), b"\x00")
    before = alloc.stats()["allocated_bytes"]
    with pytest.raises(BoundsViolation) as info:
        buffer.free()
    assert (info.value.side, info.value.offset) == ("after", 66)
    assert "canary_poke_u32" in info.value.kernel and "detected on free" in info.value.kernel
    assert alloc.stats()["allocated_bytes"] == before - root.nbytes  # freed all the same
    buffer.free()  # idempotent, no second report
    again = Buffer(guarded, 64)  # the pooled root comes back re-armed
    assert again.allocation.root.raw is root.raw and _intact(again)
    again.free()


def test_a_deferred_check_does_not_race_a_free_in_another_thread(
        guarded: Device, monkeypatch: pytest.MonkeyPatch) -> None:
    # One thread drains a deferred check of a buffer while another frees it: the check must
    # finish before the memory goes back (it used to read the freed root: "buffer was freed").
    alloc = guarded.allocator
    assert isinstance(alloc, CanaryAllocator)
    buffer, _ = _filled(guarded, 16)
    guard = alloc.guard_of(buffer.allocation)
    real, inside, freeing = alloc.find, threading.Event(), threading.Event()

    def paused(g: Any) -> Any:
        if not inside.is_set():  # the checking thread: let the other one free meanwhile
            inside.set()
            freeing.wait(5)
            time.sleep(0.2)
        return real(g)

    def free() -> None:
        inside.wait(5)
        freeing.set()
        buffer.free()

    monkeypatch.setattr(alloc, "find", paused)
    other = threading.Thread(target=free)
    other.start()
    try:
        alloc.check("canary_poke_u32", [("dst", buffer.allocation)])  # must not raise
    finally:
        other.join(10)
    assert not other.is_alive() and buffer.allocation.freed
    assert guard is not None and guard.root.freed and alloc.guard_of(buffer.allocation) is None


def test_pinned_buffers_stay_page_aligned(guarded: Device) -> None:
    if MemoryClass.HOST_PINNED not in guarded.memory_classes:
        pytest.skip(f"{guarded} offers no host_pinned memory")
    buffer = Buffer(guarded, 1000, MemoryClass.HOST_PINNED)
    assert buffer.allocation.offset % 4096 == 0 and buffer.allocation.offset >= MIN_PAD
    buffer.copyin(np.arange(1000, dtype=np.uint32).astype(np.uint8))
    assert _intact(buffer)
    buffer.free()


def test_a_launch_held_behind_an_event_is_checked_once_it_runs(
        kernel_device: Device, monkeypatch: pytest.MonkeyPatch) -> None:
    # The check must not deadlock on a stream another event holds back: it is deferred, then
    # runs at the next copy-out after the launch has finished.
    if kernel_device.kind != "opencl":
        pytest.skip("user events that hold a queue back are an OpenCL feature")
    import pyopencl as cl

    from hurray_gpu.runtime import canary
    from hurray_gpu.sync import Stream

    monkeypatch.setattr(canary, "SETTLE_S", 0.05)
    dev = _fresh(kernel_device, guarded=True)
    dst, _ = _filled(dev, 16)
    producer = Stream(dev)
    gate = cl.UserEvent(dev.context)
    cl.enqueue_barrier(producer.queue, wait_for=[gate])
    with producer:
        dev.run(POKE_U32, dst, n=16, idx=16)  # returns: the queue is still held
    gate.set_status(cl.command_execution_status.COMPLETE)
    producer.synchronize()
    with pytest.raises(BoundsViolation) as info:
        dst.numpy(np.uint32)
    assert (info.value.kernel, info.value.buffer, info.value.offset) == ("canary_poke_u32", "dst", 64)
