"""The buffer pool returns idle memory on every device: pooled bytes over the idle budget that
sit unused for the idle seconds are really freed by a background thread, oldest first, with no
call from the user, and never while a stream may still use them (docs/reliability.md, Buffer
pool: idle memory). Each test sets tiny idle seconds on the allocator under test and polls
with a generous deadline, so a slow machine makes it slower, not flaky.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from hurray_gpu import Buffer
from hurray_gpu.sync import Stream
from tests.backend.test_stream_safety import VALUE, N, _async_device, _hold

MIB = 1 << 20
# Over glibc's largest mmap threshold (32 MiB): a host buffer freed for real leaves the RSS.
SIZE = 40 * MIB
COUNT = 5
DEADLINE_S = 30.0


@contextmanager
def _idle_pool(dev: Any, budget: int, seconds: float) -> Iterator[Any]:
    """``dev``'s allocator, emptied, with these idle settings (restored, and emptied, after)."""
    pool = dev.allocator
    saved = pool.pool_idle_budget, pool.pool_idle_seconds
    gc.collect()  # buffers of earlier tests in cycles: freed now, not into this test's pool
    pool.free_cache()
    pool.pool_idle_budget, pool.pool_idle_seconds = budget, seconds
    try:
        yield pool
    finally:
        pool.pool_idle_budget, pool.pool_idle_seconds = saved
        pool.free_cache()


def _poll(predicate: Callable[[], bool]) -> bool:
    end = time.monotonic() + DEADLINE_S
    while not predicate():
        if time.monotonic() > end:
            return False
        time.sleep(0.005)
    return True


def _rss() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_idle_memory_over_budget_is_freed_with_no_call(kernel_device) -> None:
    dev = kernel_device
    with _idle_pool(dev, budget=64 * MIB, seconds=0.05) as pool:
        bufs = [Buffer(dev, SIZE) for _ in range(COUNT)]
        for i, buf in enumerate(bufs):  # touch every page, so the host memory is resident
            buf.copyin(np.full(SIZE, i + 1, np.uint8))
        kept, kept_bytes = bufs[-1].allocation.root.raw, bufs[-1].allocation.root.nbytes
        resident = _rss()
        for buf in bufs:  # oldest first
            buf.free()
        del bufs, buf
        assert _poll(lambda: pool.pooled_bytes <= 64 * MIB), pool.pooled_bytes
        # Only what exceeded the budget went, least recently pooled first.
        assert pool.pooled_bytes == kept_bytes
        if dev.kind == "cpu":
            dropped = resident - _rss()
            assert dropped >= 0.75 * (COUNT - 1) * SIZE, f"RSS fell by {dropped / MIB:.0f} MiB"
        again = Buffer(dev, SIZE)
        assert again.allocation.root.raw is kept and pool.pooled_bytes == 0
        assert np.all(again.numpy(np.uint8)[::MIB] == COUNT)


def test_memory_reused_within_the_idle_window_stays_pooled() -> None:
    """Reused every few milliseconds for three idle windows: never freed, since each reuse
    restarts its idle time (host-side policy, the same on every device: run on cpu)."""
    from hurray_gpu.runtime.registry import resolve_device

    dev = resolve_device("cpu:0")
    with _idle_pool(dev, budget=0, seconds=0.5) as pool:
        bufs = [Buffer(dev, MIB) for _ in range(COUNT)]
        raws = [b.allocation.root.raw for b in bufs]
        total = sum(b.allocation.root.nbytes for b in bufs)
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            for buf in bufs:
                buf.free()
            assert pool.pooled_bytes == total
            time.sleep(0.01)
            bufs = [Buffer(dev, MIB) for _ in range(COUNT)]
            assert {id(b.allocation.root.raw) for b in bufs} == {id(r) for r in raws}, \
                "a buffer in use every few milliseconds was freed"
        for buf in bufs:
            buf.free()
        assert _poll(lambda: pool.pooled_bytes == 0)  # then idle: all of it goes


@pytest.mark.parametrize("kind", ["opencl", "vulkan"])
def test_idle_trim_waits_for_a_stream_that_may_still_use_the_buffer(kind: str) -> None:
    dev = _async_device(kind)
    held = Stream(dev)
    with _idle_pool(dev, budget=0, seconds=0.01) as pool:
        target = Buffer(dev, N * 4 + 5 * 4096)
        nbytes = target.allocation.root.nbytes
        opener = _hold(dev, held)
        try:
            with held:
                dev.run("fill_u32", target, VALUE, N)
            target.free()
            time.sleep(0.3)  # thirty idle windows, while the held kernel may still write it
            assert pool.pooled_bytes >= nbytes, "freed under a held kernel"
        finally:
            opener()
        held.synchronize()
        assert _poll(lambda: pool.pooled_bytes == 0)  # its fence done: freed with no call


def test_buffers_freed_at_interpreter_exit_over_the_idle_budget_do_not_hang_the_exit() -> None:
    """Buffers still referenced by module globals are freed while the interpreter tears down;
    over the idle budget they must not start the trimming thread then (it never runs, and
    Thread.start would wait for it forever)."""
    import subprocess
    import sys

    code = ("from hurray_gpu import Buffer\n"
            "keep = [Buffer('cpu', 1 << 20) for _ in range(4)]\n"
            "print('done')\n")
    env = {**os.environ, "HURRAY_GPU_POOL_IDLE_BYTES": "0"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "done"
