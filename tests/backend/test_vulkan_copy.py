"""Vulkan same-device copies: one vkCmdCopyBuffer through VulkanAllocator._copy, bit-exact,
for every memory class pair, at view offsets, and after a kernel wrote the source."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.backends import vulkan_context as vmem
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.runtime import memory, transfer
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.memory import Allocator, MemoryClass
from hurray_gpu.runtime.registry import devices, resolve_device
from hurray_gpu.tensor import Tensor
from tests._support import pinned_view_round_trip

VULKAN = [dv for dv in devices() if dv.kind == "vulkan"]
pytestmark = pytest.mark.skipif(not VULKAN, reason="no Vulkan device (install lavapipe)")


@pytest.fixture
def vk():  # noqa: ANN201
    return VULKAN[0]


@pytest.fixture
def submits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts vkCmdCopyBuffer recordings made by copy_memory and forbids host staging."""
    calls: list[int] = []
    original = vmem.copy_memory

    def spy(ctx, dest, src, nbytes):  # noqa: ANN001, ANN202
        calls.append(nbytes)
        return original(ctx, dest, src, nbytes)

    def no_staging(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("a same-device Vulkan copy went through the host")

    monkeypatch.setattr(vmem, "copy_memory", spy)
    monkeypatch.setattr(Allocator, "_staged_copy", no_staging)
    return calls


def test_copy_goes_through_one_device_copy(vk, submits: list[int]) -> None:
    data = np.random.default_rng(1).integers(0, 256, 4096 * 3 + 5, dtype=np.uint8)
    a = Buffer.from_bytes(vk, data)
    b = Buffer(vk, data.size).copy_from(a)
    assert submits == [data.size]
    assert np.array_equal(b.numpy(), data)


def test_every_memory_class_pair(vk, submits: list[int]) -> None:
    data = np.random.default_rng(2).integers(0, 256, 10_001, dtype=np.uint8)
    for src_class in vk.memory_classes:
        for dst_class in vk.memory_classes:
            if "peer" in (src_class.label, dst_class.label):
                continue  # peer memory is for export; it copies like standard memory
            a = Buffer.from_bytes(vk, data, src_class)
            b = Buffer(vk, data.size, dst_class).copy_from(a)
            assert np.array_equal(b.numpy(), data), (src_class, dst_class)
    assert submits and all(n == data.size for n in submits)


def test_views_at_unaligned_offsets(vk, submits: list[int]) -> None:
    data = np.arange(5000, dtype=np.uint32).view(np.uint8)
    a = Buffer.from_bytes(vk, data)
    b = Buffer.from_bytes(vk, np.zeros(data.size, np.uint8))
    b.view(3, 777).copy_from(a.view(1001, 777))
    expect = np.zeros(data.size, np.uint8)
    expect[3:780] = data[1001:1778]
    assert submits == [777]
    assert np.array_equal(b.numpy(), expect)


def test_chunked_copy_uses_one_device_copy_per_chunk(vk, submits: list[int],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "CHUNK", 4096)
    data = np.random.default_rng(3).integers(0, 256, 3 * 4096 + 100, dtype=np.uint8)
    t = Tensor.from_numpy(data).to(vk)
    copy = Tensor.from_numpy(np.zeros_like(data)).to(vk)
    transfer.copy_buffer(copy.buffers[0], t.buffers[0])
    assert submits == [4096, 4096, 4096, 100]
    assert np.array_equal(copy.buffers[0].numpy(), data)


def test_copy_sees_a_kernel_written_source(vk, submits: list[int]) -> None:
    """The copy is ordered after earlier GPU work on the source (launched without wait)."""
    src = Buffer.from_bytes(vk, np.zeros(4000, np.uint8))
    vk.run("fill_u32", src.view(0, 3000), 0xA5A5A5A5, 750)
    dst = Buffer(vk, 4000).copy_from(src)
    out = dst.numpy(np.uint32)
    assert submits == [4000]
    assert bool((out[:750] == 0xA5A5A5A5).all()) and not out[750:].any()


def test_a_pinned_buffer_has_a_host_view_the_device_copies_from(vk, submits: list[int]) -> None:
    """What a staging ring needs: host writes into pinned memory in place, then a device copy
    queued on a stream of its own, done once its event is."""
    data = np.random.default_rng(4).integers(0, 256, 3 * 4096 + 7, dtype=np.uint8)
    pinned = pinned_view_round_trip(vk, data)
    assert np.array_equal(pinned.numpy(), data)  # what the host wrote, read back by a copy
    assert submits == [data.size]  # the stream's copy was the device's own
    assert vk.allocator.host_view(Buffer(vk, 0, MemoryClass.HOST_PINNED).allocation).size == 0
    pinned.free()
    with pytest.raises(UnsupportedOpError):
        vk.allocator.host_view(pinned.allocation)


def test_host_views_elsewhere() -> None:
    """The cpu device's memory is its own host view; device memory that is not mapped has
    none (OpenCL maps nothing persistently)."""
    cpu = resolve_device("cpu")
    buf = Buffer.from_bytes(cpu, np.arange(10, dtype=np.uint8))
    view = cpu.allocator.host_view(buf.allocation)
    assert view is not None and np.shares_memory(view, buf.array)
    opencl = [dv for dv in devices() if dv.kind == "opencl"]
    if opencl:
        pinned = Buffer(opencl[0], 64, MemoryClass.HOST_PINNED)
        assert opencl[0].allocator.host_view(pinned.allocation) is None
