"""Block-paged (0x0A) interchange of a paged KV cache: export, import, ``.hrry`` save and load.

Token counts per sequence are not in the descriptor (docs/format.md): tensors carry ``seq_lens``
and files store them in the KV entry ``"<tensor name>.seq_lens"`` (i64 array).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hurray_gpu.buffer import Buffer
from hurray_gpu.device import MemoryClass
from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.descriptor import (
    DEVICE_ALIGNMENT,
    MIN_DATA_ALIGNMENT,
    BlockPaged,
    BufferHandle,
    DeviceTag,
    PerBlockAffine,
    TensorDescriptor,
)
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.kv_cache.inputs import check_seq_ids
from hurray_gpu.tensor import Tensor

if TYPE_CHECKING:
    from hurray_gpu.kv_cache.cache import PagedKVCache

__all__ = ["BlockPagedTensor", "export_layer", "tensor_name"]

ROLE_NAMES = ("key", "value")
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


class BlockPagedTensor(Tensor):
    """A block-paged Tensor plus its per-sequence token counts (``seq_lens``, int64)."""

    __slots__ = ("seq_lens",)
    seq_lens: np.ndarray


def tensor_name(layer: int, role: int) -> str:
    """The name a saved cache gives layer ``layer``'s keys (role 0) or values (role 1)."""
    return f"layers.{layer}.{ROLE_NAMES[role]}"


def _handle(cache: PagedKVCache, nbytes: int) -> BufferHandle:
    dev = cache.device
    align = MIN_DATA_ALIGNMENT if dev.tag == DeviceTag.CPU else DEVICE_ALIGNMENT
    return BufferHandle(nbytes, align, dev.tag, 0, MemoryClass.STANDARD)


def export_layer(cache: PagedKVCache, layer: int, role: int,
                 seq_ids: Any = None) -> BlockPagedTensor:
    """A block-paged tensor over ``cache``'s live pool (no copy of the pool); see ``export``.

    Raises:
        UnsupportedOpError: a bad layer, role or sequence (unknown, freed or swapped out).
    """
    alloc = cache.allocator
    if seq_ids is None:
        ids = [s for s, st in alloc.seqs.items() if st.swapped is None]
    else:
        ids = check_seq_ids(seq_ids)
    states = [alloc.seq(s) for s in ids]
    table = np.array([p for st in states for p in st.pages], dtype=np.uint32)
    ptr = np.concatenate([[0], np.cumsum([len(st.pages) for st in states])]).astype(np.uint32)
    lens = np.array([st.lens[layer] for st in states], dtype=np.int64)
    layout = BlockPaged(page_size=cache.page_size, num_pages=cache.num_pages, paged_axis=0,
                        num_seqs=len(ids), kv_role=role, layer_index=layer,
                        block_table_index_type=0)
    bufs = [cache.storage.pool(layer, role), _device_copy(cache, table),
            _device_copy(cache, ptr)]
    quant = None
    scales = cache.storage.scale_pool(layer, role)
    if scales is not None:
        # docs/format.md, Quantized pools: per-block affine on axis 0 with block_size ==
        # page_size, one scale per page slot, indexed through the block table like the pool.
        quant = PerBlockAffine(axis=0, block_size=cache.page_size, scale_buffer_index=3,
                               zero_point_buffer_index=None, scale_type_tag=0x03)
        bufs.append(scales)
    stored = by_name(cache.kv_dtype) if cache.kv_dtype else cache.dtype
    desc = TensorDescriptor(stored, (int(lens.sum()), cache.num_kv_heads, cache.head_dim),
                            layout, tuple(_handle(cache, b.nbytes) for b in bufs),
                            quantization=quant)
    out = BlockPagedTensor.from_parts(desc, bufs)
    assert isinstance(out, BlockPagedTensor)
    out.seq_lens = lens
    return out


def _device_copy(cache: PagedKVCache, arr: np.ndarray) -> Buffer:
    # Every buffer of a tensor lives on one device (the colocation rule).
    if not arr.size:
        return Buffer(cache.device, 0)
    return Buffer.from_bytes(cache.device, arr.view(np.uint8))


def _host(buf: Any) -> np.ndarray:
    if isinstance(buf, Buffer):
        return np.asarray(buf.copyout(), dtype=np.uint8)
    return np.asarray(buf, dtype=np.uint8).reshape(-1)


def save_cache(cache: PagedKVCache, path: Any, seq_ids: Any = None) -> None:
    """Write every layer's keys and values (block-paged) and their seq_lens to ``path``."""
    from hurray_gpu.io import save

    tensors: dict[str, Tensor] = {}
    metadata: dict[str, Any] = {}
    for layer in range(cache.num_layers):
        for role in (0, 1):
            name = tensor_name(layer, role)
            t = export_layer(cache, layer, role, seq_ids)
            tensors[name] = t if t.is_host else t.to("cpu")
            if t.seq_lens.size:  # upstream writers refuse empty arrays
                metadata[f"{name}.seq_lens"] = [int(n) for n in t.seq_lens]
    save(path, tensors, metadata)


def load_tensors(path: Any) -> tuple[dict[str, Tensor], dict[str, np.ndarray]]:
    """The block-paged tensors of a ``.hrry`` file and the seq_lens stored for each.

    Raises:
        HurrayFormatError: a malformed file, or a seq_lens entry that is not i64 counts.
    """
    from hurray_gpu.io import open_file

    tensors, lens = {}, {}
    with open_file(path) as f:
        for name in f.top_level_names():
            if f.descriptor(name).layout_tag != BlockPaged.TAG:
                continue
            tensors[name] = f.read(name, copy=True)
            entry = f.metadata.get(f"{name}.seq_lens")
            if entry is not None:
                lens[name] = _lens_entry(name, entry)
    return tensors, lens


def _lens_entry(name: str, entry: Any) -> np.ndarray:
    """A ``<name>.seq_lens`` KV entry as int64; a u64 array may hold values past i64."""
    if not isinstance(entry, (list, tuple)) or any(
            isinstance(v, bool) or not isinstance(v, int) or not I64_MIN <= v <= I64_MAX
            for v in entry):
        raise HurrayFormatError(f"KV entry {name}.seq_lens is not an array of i64 token counts",
                                field=f"{name}.seq_lens", fix="store seq_lens as an i64 array.")
    return np.array(entry, dtype=np.int64) if entry else np.zeros(0, np.int64)


def as_named(tensors: Mapping[str, Tensor] | Sequence[Tensor]) -> dict[str, Tensor]:
    """Name a list of tensors by position (a mapping keeps its names)."""
    if isinstance(tensors, Mapping):
        return dict(tensors)
    return {f"tensor[{i}]": t for i, t in enumerate(tensors)}


def host_parts(t: Tensor) -> tuple[Any, np.ndarray, np.ndarray]:
    """``(pool buffer as given, block table, seq_ptr)``, the tables as unsigned host arrays.

    Raises:
        UnsupportedOpError: a table whose byte size is not a whole number of entries.
    """
    width = np.dtype(np.uint64 if t.layout.block_table_index_type else np.uint32)
    tables = []
    for index, name in ((1, "block_table"), (2, "seq_ptr")):
        raw = _host(t.buffers[index])
        if raw.size % width.itemsize:
            raise UnsupportedOpError(f"{name} holds {raw.size} bytes, not whole {width} entries",
                                     fix="write the table with its declared index type.")
        tables.append(raw.view(width))
    return t.buffers[0], tables[0], tables[1]
