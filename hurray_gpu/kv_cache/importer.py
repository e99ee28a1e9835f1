"""Importing block-paged tensors into a new PagedKVCache, with every table checked first.

Nothing is allocated on the device before the tensors' geometry, block tables, seq_ptr and
seq_lens have all been validated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.descriptor import BlockPaged, PerBlockAffine
from hurray_gpu.kv_cache.interchange import as_named, host_parts
from hurray_gpu.kv_cache.options import storage_dtype
from hurray_gpu.parts import TensorLike
from hurray_gpu.runtime.buffer import Buffer

if TYPE_CHECKING:
    from hurray_gpu.kv_cache.cache import PagedKVCache

__all__ = ["ImportPlan", "fill_cache", "plan_import"]

NOT_LAYER_SCOPED = 0xFFFFFFFF


def _bad(message: str, field: str, fix: str) -> HurrayFormatError:
    return HurrayFormatError(message, field=field, fix=fix)


@dataclass
class _Geometry:
    dtype: Any
    heads: int
    head_dim: int
    page_size: int
    num_pages: int
    num_seqs: int
    kv: str | None


def _geometry(name: str, t: TensorLike) -> _Geometry:
    lay = t.layout
    if not isinstance(lay, BlockPaged):
        raise _bad(f"{name} has layout {t.layout_name}, not block_paged", "layout_tag",
                   "import only block-paged (0x0A) tensors.")
    kv = _kv_of(name, t)
    if lay.kv_role not in (0, 1) or lay.layer_index == NOT_LAYER_SCOPED:
        raise _bad(f"{name} has kv_role {lay.kv_role} and layer_index {lay.layer_index}",
                   "kv_role", "give every tensor kv_role key/value and a layer_index.")
    dims = [d for d in t.shape if d is not None]
    if len(dims) != 3 or len(t.shape) != 3:
        raise _bad(f"{name} has shape {t.shape}", "shape",
                   "block-paged K/V are [total_tokens, heads, head_dim].")
    return _Geometry(t.dtype, dims[1], dims[2], lay.page_size, lay.num_pages, lay.num_seqs, kv)


def _kv_of(name: str, t: TensorLike) -> str | None:
    """The cache kv_dtype a tensor's storage maps to (None: plain K/V)."""
    q = t.quantization
    if q is None:
        return "float8_e4m3" if t.dtype.name == "float8_e4m3" else None
    if isinstance(q, PerBlockAffine) and t.dtype.name == "int8" and q.axis == 0 and \
            q.block_size == t.layout.page_size and q.symmetric and q.scale_type_tag == 0x03 \
            and q.scale_buffer_index == 3:
        return "int8"
    raise UnsupportedOpError(
        f"{name} uses quantization {type(q).__name__} on {t.dtype.name}, which a paged cache "
        "cannot store", fix="import int8 per-page-slot (per-block, f32 scales) or float8_e4m3 "
        "K/V, or dequantize first.")


def _check_tables(name: str, table: np.ndarray, ptr: np.ndarray, geo: _Geometry) -> None:
    if ptr.size != geo.num_seqs + 1:
        raise _bad(f"{name}: seq_ptr has {ptr.size} entries, expected num_seqs + 1 = "
                   f"{geo.num_seqs + 1}", "seq_ptr", "write num_seqs + 1 page offsets.")
    if int(ptr[0]) != 0 or np.any(ptr[1:] < ptr[:-1]) or int(ptr[-1]) != table.size:
        raise _bad(f"{name}: seq_ptr must start at 0, never decrease and end at the "
                   f"{table.size} block-table entries", "seq_ptr",
                   "rebuild seq_ptr as the cumulative page counts.")
    if table.size and int(table.max()) >= geo.num_pages:
        raise _bad(f"{name}: block_table holds page {int(table.max())} but num_pages is "
                   f"{geo.num_pages}", "block_table", "every page id must be < num_pages.")


def _check_lens(name: str, lens: Any, ptr: np.ndarray, geo: _Geometry,
                tokens: int) -> np.ndarray:
    capacity = np.diff(ptr.astype(np.int64)) * geo.page_size
    if lens is None:
        if int(capacity.sum()) != tokens:
            raise _bad(f"{name} has no seq_lens and its pages do not hold exactly "
                       f"{tokens} tokens", "seq_lens",
                       "pass seq_lens (or store the '<name>.seq_lens' KV entry).")
        return capacity
    arr = np.asarray(lens)
    if arr.dtype.kind not in "iu" or arr.shape != (geo.num_seqs,):
        raise _bad(f"{name}: seq_lens must be {geo.num_seqs} integers, got {arr.shape} "
                   f"{arr.dtype}", "seq_lens", "give one token count per sequence.")
    arr = arr.astype(np.int64)
    if np.any(arr < 0) or np.any(arr > capacity) or int(arr.sum()) != tokens:
        raise _bad(f"{name}: seq_lens must lie in [0, pages x page_size] and sum to "
                   f"shape[0] = {tokens}", "seq_lens", "fix the token counts.")
    return arr


def _collect(named: dict[str, TensorLike], seq_lens: Mapping[str, Any] | None) -> tuple[
        _Geometry, np.ndarray, np.ndarray, dict[tuple[int, int], tuple[TensorLike, np.ndarray]]]:
    geo, table, ptr = None, np.zeros(0), np.zeros(0)
    slots: dict[tuple[int, int], tuple[TensorLike, np.ndarray]] = {}
    for name, t in named.items():
        g = _geometry(name, t)
        _, tb, sp = host_parts(t)
        _check_tables(name, tb, sp, g)
        if geo is None:
            geo, table, ptr = g, tb, sp
        elif g != geo or not (np.array_equal(tb, table) and np.array_equal(sp, ptr)):
            raise UnsupportedOpError(
                f"{name} differs from the first tensor in geometry or block table",
                fix="import tensors exported together from one cache.")
        lens = seq_lens.get(name) if seq_lens is not None else None
        lens = getattr(t, "seq_lens", None) if lens is None else lens
        key = (t.layout.layer_index, t.layout.kv_role)
        if key in slots:
            raise _bad(f"{name} repeats layer {key[0]} {('key', 'value')[key[1]]}",
                       "layer_index", "import each layer's key and value once.")
        slots[key] = (t, _check_lens(name, lens, sp, g, int(t.shape[0] or 0)))
    assert geo is not None
    return geo, table, ptr, slots


def _missing(slots: Mapping[tuple[int, int], Any], layers: int) -> list[tuple[int, int]]:
    """The first few missing (layer, role) pairs; a hostile layer_index (up to 2**32 - 2)
    must not make this walk or list every absent layer."""
    missing: list[tuple[int, int]] = []
    for layer in range(layers):
        missing += [(layer, r) for r in (0, 1) if (layer, r) not in slots]
        if len(missing) >= 4:
            break
    return missing


@dataclass
class ImportPlan:
    """Everything a new cache needs to take block-paged tensors in, all validated: its
    geometry and dtype, each (layer, role)'s tensor, and each sequence's pages and lengths."""

    device: Any
    layers: int
    geometry: _Geometry
    dtype: Any
    slots: dict[tuple[int, int], tuple[TensorLike, np.ndarray]]
    tables: list[list[int]]
    lens: list[list[int]]


def plan_import(tensors: Mapping[str, TensorLike] | Any, *, device: Any = None,
                seq_lens: Mapping[str, Any] | None = None, dtype: Any = None) -> ImportPlan:
    """Validate block-paged K/V tensors for ``PagedKVCache.from_tensors`` (nothing allocated).

    Raises:
        HurrayFormatError, UnsupportedOpError: see ``PagedKVCache.from_tensors``.
    """
    named = as_named(tensors)
    if not named:
        raise UnsupportedOpError("no tensors to import", fix="pass each layer's key and value.")
    geo, table, ptr, slots = _collect(named, seq_lens)
    layers = 1 + max(layer for layer, _ in slots)
    if 2 * layers != len(slots):  # keys are unique and below layers: something is missing
        raise _bad(f"layers/roles {_missing(slots, layers)} are missing", "layer_index",
                   "import a key and a value tensor for every layer 0..L-1.")
    for layer in range(layers):
        if not np.array_equal(slots[(layer, 0)][1], slots[(layer, 1)][1]):
            raise _bad(f"layer {layer}: key and value seq_lens differ", "seq_lens",
                       "export key and value of a layer together.")
    if device is None:
        first = next(iter(named.values()))
        device = "cpu" if first.is_host else first.device
    if dtype is None:
        dtype = "float16" if geo.kv else geo.dtype
    elif geo.kv is None and storage_dtype(dtype) != geo.dtype:
        # Plain K/V pages are imported byte for byte: another dtype would reinterpret them
        # (and size the pools differently from the tensors' pools).
        raise UnsupportedOpError(
            f"dtype {storage_dtype(dtype).name} differs from the tensors' {geo.dtype.name}",
            fix="import with the tensors' dtype (or dtype=None), then convert what gather "
                "returns.")
    tables = [table[int(ptr[s]):int(ptr[s + 1])].tolist() for s in range(geo.num_seqs)]
    lens = [[int(slots[(la, 0)][1][s]) for la in range(layers)] for s in range(geo.num_seqs)]
    return ImportPlan(device, layers, geo, dtype, slots, tables, lens)


def fill_cache(cache: PagedKVCache, plan: ImportPlan) -> None:
    """Copy the planned tensors' pages into a new ``cache`` and adopt their sequences."""
    for (layer, role), (t, _) in plan.slots.items():
        _fill_pool(cache.storage.pool(layer, role), t.buffers[0])
        scales = cache.storage.scale_pool(layer, role)
        if scales is not None:
            _fill_pool(scales, t.buffers[3])
    cache.allocator.adopt(plan.tables, plan.lens)


def _fill_pool(pool: Buffer, src: Any) -> None:
    if isinstance(src, Buffer):
        if src.nbytes != pool.nbytes:
            src = src.view(0, pool.nbytes)
        pool.copy_from(src)
        return
    data = np.asarray(src, dtype=np.uint8).reshape(-1)
    pool.copyin(np.ascontiguousarray(data[:pool.nbytes]))
