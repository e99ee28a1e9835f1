"""Bit-exact host <-> device round trips on every available device and memory class."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import MemoryClass

SIZES = [1, 3, 63, 64, 4096, (1 << 20) + 7]
BIG = 256 * 1024 * 1024


def _random(nbytes: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)


@pytest.mark.parametrize("size", SIZES)
def test_round_trip_every_memory_class(device: Device, size: int) -> None:
    for mclass in device.memory_classes:
        data = _random(size, size + int(mclass))
        with Buffer(device, size, mclass) as buf:
            assert buf.memory_class == mclass
            buf.copyin(data)
            out = np.empty(size, np.uint8)
            buf.copyout(out)
            assert np.array_equal(out, data), f"{device.spec} {mclass.label} {size}"
            assert bytes(buf.copyout()) == data.tobytes()


def test_round_trip_256_mib(device: Device) -> None:
    data = _random(BIG, 256)
    buf = Buffer(device, BIG)
    try:
        buf.copyin(data)
        out = np.empty(BIG, np.uint8)
        buf.copyout(out)
        assert np.array_equal(out, data)
    finally:
        buf.free()
        device.allocator.free_cache()


def test_partial_copies_and_views(device: Device) -> None:
    data = _random(4096, 7)
    buf = Buffer.from_bytes(device, data)
    buf.copyin(b"\xaa" * 100, offset=1000)
    expect = data.copy()
    expect[1000:1100] = 0xAA
    assert bytes(buf.copyout()) == expect.tobytes()
    assert bytes(buf.copyout(offset=999, nbytes=3)) == expect[999:1002].tobytes()
    view = buf.view(256, 1024)
    assert bytes(view.copyout()) == expect[256:1280].tobytes()
    view.copyin(bytes(range(256)) * 4)
    expect[256:1280] = np.tile(np.arange(256, dtype=np.uint8), 4)
    assert np.array_equal(buf.numpy(), expect)
    with pytest.raises(UnsupportedOpError):
        buf.copyout(offset=4000, nbytes=200)


def test_numpy_typed_copy(device: Device) -> None:
    values = np.arange(-50, 50, dtype=np.int32)
    buf = Buffer.from_bytes(device, values)
    assert np.array_equal(buf.numpy(np.int32), values)
    with pytest.raises(UnsupportedOpError):
        Buffer(device, 6).numpy(np.int32)


def test_pool_reuse_on_device(device: Device) -> None:
    before = device.allocator.stats()["alloc_count"]
    for _ in range(3):
        with Buffer(device, 8192) as buf:
            buf.copyin(bytes(8192))
    assert device.allocator.stats()["alloc_count"] == before + 3
    assert device.allocator.stats()["pooled_bytes"] >= 8192


def test_memory_classes_are_valid_for_the_tag(device: Device) -> None:
    assert MemoryClass.STANDARD in device.memory_classes
    if device.tag == 0x08:
        assert MemoryClass.PEER not in device.memory_classes
