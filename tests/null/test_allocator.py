"""Allocator policy on the null device: sizes, pooling, accounting, OOM retry, views."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

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


# -- idle trimming (docs/reliability.md, Buffer pool: idle memory) -----------------------------

ROOT = Path(__file__).resolve().parents[2]
# A fresh interpreter: no other test's pool can have started the trim thread there.
TRIM_THREAD_LIFECYCLE = """
import gc, threading, time, weakref
from hurray_gpu.backends.null import NullDevice

def running():
    return any(t.name == "hurray-gpu-pool-trim" for t in threading.enumerate())

def poll(predicate):
    end = time.monotonic() + 20
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)

dev = NullDevice()
pool = dev.allocator
pool.pool_idle_budget, pool.pool_idle_seconds = 1000, 0.5
a, b = pool.alloc(600), pool.alloc(400)
pool.free(a)
pool.free(b)
assert pool.pooled_bytes == 1000 and not running(), "a thread while within budget"
c = pool.alloc(1000)  # the 600 and 400 stay pooled
pool.free(c)
assert running(), "no thread while over budget"
poll(lambda: not running())  # trimmed, then the thread ends
assert pool.pooled_bytes == 1000, pool.pooled_bytes  # the newest, c, is kept
assert sorted(r for r in pool.records if r[0] == "free") == [("free", 400), ("free", 600)]

# Over budget but not yet idle: the sleeping thread holds no reference to the pool or device.
pool.pool_idle_seconds = 0.3
pool.free(pool.alloc(8))
assert running()
ref = weakref.ref(pool)
del dev, pool, a, b, c
gc.collect()
assert ref() is None, "the trim thread keeps a device alive"
poll(lambda: not running())

# A pool over budget for a minute must not delay exit (a daemon thread).
dev = NullDevice()
dev.allocator.pool_idle_budget, dev.allocator.pool_idle_seconds = 0, 60
dev.allocator.free(dev.allocator.alloc(8))
assert running()
print("ok")
"""


def test_trim_thread_runs_only_while_a_pool_is_over_its_idle_budget() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(TRIM_THREAD_LIFECYCLE)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=30,
                          check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_idle_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HURRAY_GPU_POOL_IDLE_BYTES", raising=False)
    monkeypatch.delenv("HURRAY_GPU_POOL_IDLE_SECONDS", raising=False)
    assert (_device().allocator.pool_idle_budget, _device().allocator.pool_idle_seconds) == (
        64 << 20, 2)
    monkeypatch.setenv("HURRAY_GPU_POOL_IDLE_BYTES", "4096")
    monkeypatch.setenv("HURRAY_GPU_POOL_IDLE_SECONDS", "0.25")
    pool = _device().allocator
    assert (pool.pool_idle_budget, pool.pool_idle_seconds) == (4096, 0.25)
    for bad in ("-1", "lots", "nan", "inf"):
        monkeypatch.setenv("HURRAY_GPU_POOL_IDLE_SECONDS", bad)
        with pytest.raises(UnsupportedOpError, match="HURRAY_GPU_POOL_IDLE_SECONDS") as info:
            _device()
        assert "Fix: set HURRAY_GPU_POOL_IDLE_SECONDS to a number >= 0" in str(info.value)
