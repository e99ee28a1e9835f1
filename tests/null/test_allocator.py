"""Allocator policy on the null device: sizes, pooling, accounting, OOM retry, views."""

from __future__ import annotations

import pickle

import pytest

from hurray_gpu.backends.null import NullAllocator, NullDevice
from hurray_gpu.errors import OutOfMemoryError, UnsupportedOpError
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.memory import MemoryClass


class FlakyAllocator(NullAllocator):
    """Fails the first ``failures`` allocations with MemoryError."""

    failures = 1

    def _alloc(self, nbytes: int, memory_class: MemoryClass) -> int:
        if self.failures > 0:
            self.failures -= 1
            raise MemoryError("device full")
        return super()._alloc(nbytes, memory_class)


def _device(failures: int = 0) -> NullDevice:
    dev = NullDevice()
    dev.allocator = FlakyAllocator(dev)
    dev.allocator.failures = failures
    return dev


def test_pool_reuses_freed_buffers_by_size_and_class() -> None:
    dev = _device()
    a = dev.allocator.alloc(256)
    raw = a.raw
    dev.allocator.free(a)
    assert dev.allocator.stats()["pooled_bytes"] == 256
    assert dev.allocator.alloc(256, "host_pinned").raw != raw
    again = dev.allocator.alloc(256)
    assert again.raw == raw
    assert dev.allocator.stats()["pooled_bytes"] == 0


def test_accounting_and_double_free() -> None:
    dev = _device()
    a = dev.allocator.alloc(100)
    b = dev.allocator.alloc(50)
    assert dev.allocator.stats()["allocated_bytes"] == 150
    dev.allocator.free(a)
    dev.allocator.free(a)
    assert dev.allocator.stats() == {"allocated_bytes": 50, "pooled_bytes": 100,
                                     "peak_bytes": 150, "alloc_count": 2}
    dev.allocator.free(b)


def test_pool_is_bounded() -> None:
    dev = _device()
    dev.allocator.pool_limit = 300
    allocs = [dev.allocator.alloc(100) for _ in range(5)]
    for a in allocs:
        dev.allocator.free(a)
    assert dev.allocator.stats()["pooled_bytes"] == 300
    assert sum(1 for r in dev.allocator.records if r[0] == "free") == 2


def test_oom_retries_once_after_emptying_pool() -> None:
    dev = _device(failures=1)
    a = dev.allocator.alloc(64)
    assert a.nbytes == 64 and dev.allocator.failures == 0


def test_oom_after_retry_raises_typed_picklable_error() -> None:
    dev = _device(failures=2)
    with pytest.raises(OutOfMemoryError) as info:
        dev.allocator.alloc(1 << 20)
    err = info.value
    assert err.size == 1 << 20 and "Fix:" in str(err)
    assert pickle.loads(pickle.dumps(err)).size == 1 << 20


@pytest.mark.parametrize("size", [-1, 1.5, True, "8", None])
def test_bad_sizes(size: object) -> None:
    with pytest.raises(UnsupportedOpError):
        _device().allocator.alloc(size)  # type: ignore[arg-type]


@pytest.mark.parametrize("mclass", ["peerish", 7, 0xF0, -1])
def test_bad_memory_class(mclass: object) -> None:
    with pytest.raises(UnsupportedOpError):
        _device().allocator.alloc(8, mclass)  # type: ignore[arg-type]


def test_class_not_offered() -> None:
    dev = _device()
    dev.memory_classes = (MemoryClass.STANDARD,)
    with pytest.raises(UnsupportedOpError, match="no unified memory"):
        dev.allocator.alloc(8, "unified")


def test_zero_size_never_reaches_backend() -> None:
    dev = _device(failures=5)
    empty = Buffer(dev, 0)
    assert empty.nbytes == 0 and empty.copyout() == bytearray()
    empty.copyin(b"")


def test_copy_size_must_match_and_views_are_bounded() -> None:
    dev = _device()
    buf = Buffer(dev, 16)
    with pytest.raises(UnsupportedOpError):
        dev.allocator.copyin(buf.allocation, b"123")
    with pytest.raises(UnsupportedOpError):
        buf.view(10, 7)
    with pytest.raises(UnsupportedOpError):
        buf.view(-1, 2)
    view = buf.view(4, 8).view(2, 4)
    assert view.offset == 6 and view.nbytes == 4 and view.is_view
    buf.copyin(b"abcd", offset=12)
    assert dev.allocator.records[-1] == ("copyin", 4)


def test_use_after_free_is_an_error() -> None:
    dev = _device()
    buf = Buffer(dev, 16)
    view = buf.view(0, 8)
    buf.free()
    with pytest.raises(UnsupportedOpError, match="freed"):
        view.copyout()
    with pytest.raises(UnsupportedOpError, match="freed"):
        buf.copyin(bytes(16))


def test_non_contiguous_source_rejected() -> None:
    import numpy as np

    dev = _device()
    buf = Buffer(dev, 8)
    with pytest.raises(UnsupportedOpError, match="contiguous"):
        buf.copyin(np.arange(4, dtype=np.uint32)[::2])
    with pytest.raises(UnsupportedOpError, match="not a buffer"):
        dev.allocator.copyin(buf.allocation, 12345)
