"""Block-paged export, import and .hrry save/load of a PagedKVCache, and hostile imports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_kv_cache import host, random_rows, same_bits

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.addressing import block_paged_to_dense
from hurray_gpu.format.descriptor import BlockPaged, BufferHandle, TensorDescriptor
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.io import open_file
from hurray_gpu.kv_cache import PagedKVCache
from hurray_gpu.runtime.device import Device
from hurray_gpu.tensor import Tensor


def _raw(buf: Any) -> np.ndarray:
    return np.asarray(buf) if isinstance(buf, np.ndarray) else buf.numpy()


def _filled(device: Device, layers: int = 2) -> tuple[PagedKVCache, list[int]]:
    rng = np.random.default_rng(21)
    cache = PagedKVCache(device, layers, 2, 2, num_pages=10, page_size=3)
    seqs = [cache.add_sequence() for _ in range(3)]
    for layer in range(layers):
        k, v = random_rows(rng, 9, 2, 2, np.float16), random_rows(rng, 9, 2, 2, np.float16)
        cache.append(seqs, layer, k, v, counts=[4, 0, 5])
    seqs.append(cache.fork(seqs[2]))
    rows = random_rows(rng, 1, 2, 2, np.float16)
    cache.append(seqs[3], 0, rows, rows)  # layer 1 of the fork stays one token shorter
    return cache, seqs


def test_export_is_a_valid_zero_copy_block_paged_tensor(kernel_device: Device) -> None:
    cache, seqs = _filled(kernel_device)
    t = cache.export(0, "value", [seqs[3], seqs[0]])
    lay = t.layout
    assert isinstance(lay, BlockPaged) and t.layout_name == "block_paged"
    assert (lay.page_size, lay.num_pages, lay.num_seqs) == (3, 10, 2)
    assert (lay.kv_role, lay.layer_index, lay.block_table_index_type) == (1, 0, 0)
    assert t.seq_lens.tolist() == [6, 4] and t.shape == (10, 2, 2)
    table, ptr = _raw(t.buffers[1]).view(np.uint32), _raw(t.buffers[2]).view(np.uint32)
    assert table.tolist() == cache.block_table(seqs[3]) + cache.block_table(seqs[0])
    pool = _raw(t.buffers[0]).view(np.float16)
    dense = block_paged_to_dense(pool, table, ptr, 3, t.seq_lens, num_heads=2, head_dim=2,
                                 num_pages=10)
    assert same_bits(dense, host(cache.gather([seqs[3], seqs[0]], 0)[1]))
    if kernel_device.kind == "cpu":
        assert np.shares_memory(t.buffers[0], cache.storage.pool(0, 1).allocation.raw)
    else:
        assert t.buffers[0] is cache.storage.pool(0, 1)
    assert cache.export(1, "key").seq_lens.tolist() == [4, 0, 5, 5]


def test_save_load_reproduces_every_gather(kernel_device: Device, tmp_path: Path) -> None:
    cache, seqs = _filled(kernel_device)
    path = tmp_path / "kv.hrry"
    cache.save(path)
    with open_file(path) as f:
        assert f.metadata["layers.1.key.seq_lens"] == [4, 0, 5, 5]
        assert sorted(f.names) == ["layers.0.key", "layers.0.value", "layers.1.key",
                                   "layers.1.value"]
    loaded = PagedKVCache.load(path, kernel_device)
    loaded.check_invariants()
    assert loaded.seq_ids == [0, 1, 2, 3]
    for layer in range(2):
        for a, b in zip(cache.gather(seqs, layer), loaded.gather(loaded.seq_ids, layer),
                        strict=True):
            assert same_bits(a if isinstance(a, np.ndarray) else host(a),
                             b if isinstance(b, np.ndarray) else host(b))
    # Shared pages stay shared: the fork's first page is aliased, so a write copies it.
    assert loaded.block_table(3)[0] == loaded.block_table(2)[0]
    rows = np.ones((2, 2, 2), np.float16)
    loaded.append(3, 1, rows[:1], rows[:1])
    loaded.append(3, 0, rows[:1], rows[:1])
    assert loaded.block_table(3)[-1] != loaded.block_table(2)[-1]
    assert same_bits(host(loaded.gather(2, 0)[0]), host(cache.gather(seqs[2], 0)[0]))
    loaded.check_invariants()


def test_from_tensors_moves_between_devices(kernel_device: Device) -> None:
    cache, seqs = _filled("cpu")
    tensors = [cache.export(la, r) for la in range(2) for r in ("key", "value")]
    moved = PagedKVCache.from_tensors(tensors, device=kernel_device)
    assert moved.device is kernel_device
    for layer in range(2):
        assert same_bits(host(moved.gather(moved.seq_ids, layer)[0]),
                         host(cache.gather(seqs, layer)[0]))


def test_empty_cache_round_trips(tmp_path: Path) -> None:
    cache = PagedKVCache("cpu", 1, 1, 2, num_pages=2, page_size=2)
    cache.save(tmp_path / "e.hrry")
    loaded = PagedKVCache.load(tmp_path / "e.hrry")
    assert loaded.seq_ids == [] and loaded.num_free_pages == 2


# -- hostile imports: rejected before anything is allocated ----------------------------------

def _paged(table: list[int], ptr: list[int], tokens: int, *, layer: int = 0, role: int = 0,
           num_pages: int = 4, page_size: int = 2) -> Tensor:
    pool = np.zeros(num_pages * page_size * 2, np.float16)
    tb, sp = np.array(table, np.uint32), np.array(ptr, np.uint32)
    layout = BlockPaged(page_size=page_size, num_pages=num_pages, num_seqs=len(ptr) - 1,
                        kv_role=role, layer_index=layer)
    handles = tuple(BufferHandle(a.nbytes) for a in (pool, tb, sp))
    desc = TensorDescriptor(by_name("float16"), (tokens, 1, 2), layout, handles)
    return Tensor.from_parts(desc, [pool.view(np.uint8), tb.view(np.uint8), sp.view(np.uint8)])


def _pair(table: list[int], ptr: list[int], tokens: int, **kw: Any) -> dict[str, Tensor]:
    return {"k": _paged(table, ptr, tokens, role=0, **kw),
            "v": _paged(table, ptr, tokens, role=1, **kw)}


@pytest.mark.parametrize(("table", "ptr", "tokens", "lens", "match"), [
    ([0, 9], [0, 2], 4, None, "num_pages"),
    ([0, 1], [1, 2], 4, None, "seq_ptr"),
    ([0, 1], [0, 2, 1], 4, None, "seq_ptr"),
    ([0, 1], [0, 1], 4, None, "seq_ptr"),
    ([0, 1], [0, 2], 3, None, "seq_lens"),
    ([0, 1], [0, 2], 5, [5], "seq_lens"),
    ([0, 1], [0, 1, 2], 3, [3, 0], "seq_lens"),
    ([0, 1], [0, 1, 2], 2, [-1, 3], "seq_lens"),
])
def test_bad_tables_are_rejected(table: list[int], ptr: list[int], tokens: int,
                                 lens: list[int] | None, match: str) -> None:
    tensors = _pair(table, ptr, tokens)
    seq_lens = None if lens is None else {"k": lens, "v": lens}
    with pytest.raises(HurrayFormatError, match=match):
        PagedKVCache.from_tensors(tensors, seq_lens=seq_lens)


def test_inconsistent_sets_are_rejected() -> None:
    good = _pair([0, 1], [0, 2], 4)
    with pytest.raises(HurrayFormatError, match="missing"):
        PagedKVCache.from_tensors([good["k"]])
    with pytest.raises(HurrayFormatError, match="repeats"):
        PagedKVCache.from_tensors([good["k"], good["k"], good["v"]])
    other = _paged([1, 0], [0, 2], 4, role=1)
    with pytest.raises(UnsupportedOpError, match="block table"):
        PagedKVCache.from_tensors([good["k"], other])
    with pytest.raises(HurrayFormatError, match="differ"):
        PagedKVCache.from_tensors({"k": _paged([0, 1], [0, 2], 3, role=0), "v": good["v"]},
                                  seq_lens={"k": [3], "v": [4]})
    fused = _paged([0, 1], [0, 2], 4, role=2)
    with pytest.raises(HurrayFormatError, match="kv_role"):
        PagedKVCache.from_tensors([fused])
    with pytest.raises(HurrayFormatError, match="block_paged"):
        PagedKVCache.from_tensors([Tensor.from_numpy(np.zeros((2, 1, 2), np.float16))])
    with pytest.raises(UnsupportedOpError, match="no tensors"):
        PagedKVCache.from_tensors({})


def test_valid_hand_built_import_with_aliased_pages() -> None:
    tensors = _pair([2, 2, 3], [0, 1, 3], 5)
    cache = PagedKVCache.from_tensors(tensors, seq_lens={"k": [1, 4], "v": [1, 4]})
    cache.check_invariants()
    assert cache.block_table(0) == [2] and cache.block_table(1) == [2, 3]
    assert cache.allocator.refcount[2] == 2 and cache.num_free_pages == 2
