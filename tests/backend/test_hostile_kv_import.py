"""Hostile KV-cache imports on every device: each is refused with a typed error before the
cache allocates anything on the device (its allocator's accounting does not move).

Complements the table checks of test_kv_cache_interchange.py (cpu only) with the index-width,
limit and file-entry cases, and the dtype override that used to reinterpret the pages.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.descriptor import BlockPaged, BufferHandle, TensorDescriptor
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.io import UInt64, save
from hurray_gpu.kv_cache import PagedKVCache
from hurray_gpu.kv_cache.options import MAX_HEADS, MAX_PAGES
from hurray_gpu.tensor import Tensor

TYPED = (HurrayFormatError, UnsupportedOpError)


def _pair(table: list[int], ptr: list[int], tokens: int, *, wide: bool = False,
          pages: int = 4, page_size: int = 2, heads: int = 1, layer: int = 0,
          dtype: str = "float16") -> list[Tensor]:
    idx = np.dtype("<u8" if wide else "<u4")
    dt = by_name(dtype)
    pool = np.zeros(pages * page_size * heads * 2 * dt.bits // 8, np.uint8)
    tb = np.asarray(table, np.uint64).astype(idx).view(np.uint8)
    sp = np.asarray(ptr, np.uint64).astype(idx).view(np.uint8)
    out = []
    for role in (0, 1):
        layout = BlockPaged(page_size, pages, num_seqs=len(ptr) - 1, kv_role=role,
                            layer_index=layer, block_table_index_type=int(wide))
        desc = TensorDescriptor(dt, (tokens, heads, 2), layout,
                                (BufferHandle(pool.size), BufferHandle(tb.size),
                                 BufferHandle(sp.size)))
        out.append(Tensor.from_parts(desc, [pool, tb, sp]))
    return out


def _file(tmp: Path, lens: list[Any]) -> Path:
    k, v = _pair([0, 1], [0, 2], 3)
    path = tmp / "kv.hrry"
    save(path, {"layers.0.key": k, "layers.0.value": v},
         {"layers.0.key.seq_lens": lens, "layers.0.value.seq_lens": lens})
    return path


# name -> call(device, tmp_path) that must raise a typed error
CASES: dict[str, Callable[[Any, Path], Any]] = {
    "page-id-2^32-u64-table": lambda d, _: PagedKVCache.from_tensors(
        _pair([0, 1 << 32], [0, 2], 4, wide=True), device=d),
    "page-id-u64-max": lambda d, _: PagedKVCache.from_tensors(
        _pair([0, (1 << 64) - 1], [0, 2], 4, wide=True), device=d),
    "seq-ptr-u64-max": lambda d, _: PagedKVCache.from_tensors(
        _pair([0, 1], [0, (1 << 64) - 1], 4, wide=True), device=d),
    "layer-index-2^32-2": lambda d, _: PagedKVCache.from_tensors(
        _pair([0, 1], [0, 2], 4, layer=0xFFFFFFFE), device=d),
    "num-pages-over-limit": lambda d, _: PagedKVCache.from_tensors(
        _pair([0], [0, 1], 1, pages=MAX_PAGES + 1, page_size=1), device=d),
    "heads-over-limit": lambda d, _: PagedKVCache.from_tensors(
        _pair([0], [0, 1], 1, pages=1, page_size=1, heads=MAX_HEADS + 1), device=d),
    "seq-lens-argument-2^64": lambda d, _: PagedKVCache.from_tensors(
        _pair([0, 1], [0, 2], 3), device=d, seq_lens={"tensor[0]": [1 << 64],
                                                         "tensor[1]": [1 << 64]}),
    "seq-lens-entry-u64-max": lambda d, t: PagedKVCache.load(_file(t, [UInt64((1 << 64) - 1)]),
                                                             d),
    "seq-lens-entry-negative": lambda d, t: PagedKVCache.load(_file(t, [-1]), d),
    "seq-lens-entry-not-ints": lambda d, t: PagedKVCache.load(_file(t, ["3"]), d),
    "dtype-override-reinterprets-pages": lambda d, _: PagedKVCache.from_tensors(
        _pair([0, 1], [0, 2], 4), device=d, dtype="float32"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_kv_import_is_refused_before_allocating(kernel_device: Any, case: str,
                                                        tmp_path: Path) -> None:
    gc.collect()
    before = kernel_device.allocator.allocated_bytes
    with pytest.raises(TYPED) as info:
        CASES[case](kernel_device, tmp_path)
    assert "Fix:" in str(info.value)
    gc.collect()
    assert kernel_device.allocator.allocated_bytes == before


def test_the_valid_neighbours_import(kernel_device: Any, tmp_path: Path) -> None:
    """The same inputs made valid: u64 tables, u64 seq_lens entries, the tensors' dtype."""
    wide = PagedKVCache.from_tensors(_pair([3, 1], [0, 2], 4, wide=True), device=kernel_device,
                                     dtype="float16")
    assert wide.block_table(0) == [3, 1] and wide.seq_len(0) == 4
    loaded = PagedKVCache.load(_file(tmp_path, [UInt64(3)]), kernel_device)
    assert loaded.seq_len(0) == 3 and loaded.dtype.name == "float16"
    for cache in (wide, loaded):
        cache.check_invariants()
        cache.close()
