"""Hypothesis properties: hostile cache files never raise; allocator accounting stays exact."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.backends.null import NullDevice
from hurray_gpu.runtime.cache import DiskKernelCache, make_cache_key

KEY = make_cache_key("hurray_gpu.prop.kernel.v1", "s")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=256))
def test_any_file_content_loads_as_miss_or_exact_record(blob: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cache = DiskKernelCache(Path(tmp))
        path = cache.path_for(KEY)
        path.parent.mkdir(parents=True)
        path.write_bytes(blob)
        assert cache.load(KEY) is None


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=512), st.text(max_size=64), st.integers(0, 200))
def test_truncated_records_are_misses(binary: bytes, source: str, cut: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cache = DiskKernelCache(Path(tmp))
        cache.save(KEY, binary, source)
        assert cache.load(KEY) == binary
        path = cache.path_for(KEY)
        data = path.read_bytes()
        path.write_bytes(data[: max(0, len(data) - 1 - cut)])
        assert cache.load(KEY) is None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 4096), st.integers(0, 2)),
                max_size=40))
def test_allocator_accounting_is_exact(ops: list[tuple[bool, int, int]]) -> None:
    dev = NullDevice()
    live = []
    for is_alloc, size, mclass in ops:
        if is_alloc or not live:
            live.append(dev.allocator.alloc(size, mclass))
        else:
            dev.allocator.free(live.pop(size % len(live)))
        stats = dev.allocator.stats()
        assert stats["allocated_bytes"] == sum(a.nbytes for a in live)
        assert stats["pooled_bytes"] <= dev.allocator.pool_limit
        assert stats["peak_bytes"] >= stats["allocated_bytes"]
