"""The cpu allocator's pool: every standard buffer of a size is aligned for any alignment a
host copy of that size is ever asked for, and the pool keeps results of several GiB (an
eighth of physical memory), so a dropped multi-GiB result serves the next one warm."""

from __future__ import annotations

import os

import pytest

import hurray_gpu as hg
from hurray_gpu.backends.cpu import PAGE, CPUAllocator, host_pool_limit
from hurray_gpu.runtime.hostmem import MAX_HOST_ALIGNMENT, host_alignment, pool_alignment
from hurray_gpu.runtime.memory import DEFAULT_POOL_LIMIT, MemoryClass

MIB = 1 << 20
SIZES = [1, 63, 4096, 128 << 10, (4 * MIB) + 5, 64 * MIB]


@pytest.mark.parametrize("n", SIZES)
def test_a_standard_host_buffer_meets_every_alignment_asked_of_its_size(n: int) -> None:
    alloc = CPUAllocator(hg.device("cpu"))
    a = alloc.alloc(n)
    try:
        address = a.raw.ctypes.data
        asked = [host_alignment(1 << k, n) for k in range(6, 22)]
        assert max(asked) == pool_alignment(n) and address % pool_alignment(n) == 0
        assert a.raw.nbytes == n
    finally:
        alloc.free(a)
        alloc.free_cache()


def test_pool_alignment_grows_with_size_up_to_2_mib() -> None:
    assert pool_alignment(64 * MIB) == MAX_HOST_ALIGNMENT
    assert pool_alignment(4096) == 256 and pool_alignment(63) == 64


def _physical(monkeypatch: pytest.MonkeyPatch, nbytes: int) -> None:
    """Make ``os.sysconf`` report ``nbytes`` of physical memory."""
    real = os.sysconf
    monkeypatch.setattr(os, "sysconf", lambda name: nbytes // PAGE
                        if name == "SC_PHYS_PAGES" else real(name))


@pytest.mark.parametrize(("physical", "limit"), [(1 << 30, DEFAULT_POOL_LIMIT),
                                                 (64 << 30, 8 << 30), (24 << 30, 3 << 30)])
def test_the_host_pool_limit_is_an_eighth_of_physical_memory(
        monkeypatch: pytest.MonkeyPatch, physical: int, limit: int) -> None:
    _physical(monkeypatch, physical)
    assert host_pool_limit() == limit
    assert CPUAllocator(hg.device("cpu")).pool_limit == limit


def test_a_dropped_result_over_the_default_limit_is_reused(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """Untouched pages: 513 MiB of address space, no memory."""
    _physical(monkeypatch, 16 << 30)
    alloc = CPUAllocator(hg.device("cpu"))
    n = DEFAULT_POOL_LIMIT + MIB
    first = alloc.alloc(n, MemoryClass.STANDARD)
    address = first.raw.ctypes.data
    alloc.free(first)
    assert alloc.pooled_bytes == n
    again = alloc.alloc(n, MemoryClass.STANDARD)
    try:
        assert again.raw.ctypes.data == address and alloc.pooled_bytes == 0
    finally:
        alloc.free(again)
        alloc.free_cache()
