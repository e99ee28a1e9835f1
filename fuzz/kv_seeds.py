"""Seeds for the KV-cache import harness: real caches exported by PagedKVCache on ``cpu``.

Every seed is the output of a round trip through the writers: a cache is filled, then saved
to a ``.hrry`` file (``PagedKVCache.save``) or its exported layers are written as a raw
stream (``StreamWriter``), followed by one int64 tensor of seq_lens.
"""

from __future__ import annotations

import functools
import io
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

# Control byte bits (see fuzz/kv_import.py): bit 0 fix the index CRC, bit 1 stream source
# (bit 3 on half of the stream seeds: read straight onto the cpu device).
FIX_CRC, STREAM = 1, 2


def _cache(layers: int, heads: int, head_dim: int, pages: int, page_size: int, dtype: str,
           kv_dtype: str | None, counts: list[int], fork: bool, *, seed: int) -> Any:
    from hurray_gpu.kv_cache import PagedKVCache

    rng = np.random.default_rng(seed)
    cache = PagedKVCache("cpu", layers, heads, head_dim, num_pages=pages, page_size=page_size,
                         dtype=dtype, kv_dtype=kv_dtype)
    seqs = [cache.add_sequence() for _ in counts]
    total = sum(counts)
    for layer in range(layers):
        k = rng.standard_normal((total, heads, head_dim)).astype(dtype)
        v = rng.standard_normal((total, heads, head_dim)).astype(dtype)
        cache.append(seqs, layer, k, v, counts=counts)
    if fork and seqs:
        child = cache.fork(seqs[-1])
        row = rng.standard_normal((1, heads, head_dim)).astype(dtype)
        cache.append(child, 0, row, row)  # layer 0 of the fork is one token longer
    return cache


# (layers, heads, head_dim, pages, page_size, dtype, kv_dtype, counts, fork)
CONFIGS: tuple[tuple[Any, ...], ...] = (
    (1, 1, 2, 4, 2, "float16", None, [3], False),
    (2, 2, 2, 10, 3, "float16", None, [4, 0, 5], True),
    (1, 2, 4, 6, 4, "float32", None, [5, 2], False),
    (1, 1, 4, 8, 4, "float16", "int8", [6, 3], True),
    (1, 2, 2, 6, 2, "float16", "float8_e4m3", [3, 4], False),
    (1, 1, 1, 3, 1, "float32", None, [2, 1], False),
    (1, 1, 2, 2, 2, "float16", None, [], False),
)


def _save_bytes(cache: Any) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kv.hrry")
        cache.save(path)
        return Path(path).read_bytes()


def _stream_bytes(cache: Any) -> bytes:
    from hurray_gpu.io import StreamWriter
    from hurray_gpu.tensor import Tensor

    buf = io.BytesIO()
    lens = None
    with StreamWriter(buf) as w:
        for layer in range(cache.num_layers):
            for role in ("key", "value"):
                t = cache.export(layer, role)
                lens = t.seq_lens if lens is None else lens
                w.write(t.to("cpu"))
        if lens is not None and lens.size:
            w.write(Tensor.from_numpy(np.asarray(lens, np.int64)))
    return buf.getvalue()


def _u64_lens_bytes(cache: Any) -> bytes:
    """The cache saved with its seq_lens as u64 arrays (the importer takes any int array)."""
    from hurray_gpu.io import UInt64, save

    tensors, meta = {}, {}
    for layer in range(cache.num_layers):
        for role in ("key", "value"):
            t = cache.export(layer, role)
            name = f"layers.{layer}.{role}"
            tensors[name] = t.to("cpu")
            meta[f"{name}.seq_lens"] = [UInt64(int(n)) for n in t.seq_lens]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kv.hrry")
        save(path, tensors, meta)
        return Path(path).read_bytes()


@functools.lru_cache(maxsize=1)
def kv_import_seeds() -> tuple[bytes, ...]:
    """``.hrry`` files and raw streams of exported caches, each behind its control byte."""
    out = []
    for i, cfg in enumerate(CONFIGS):
        cache = _cache(*cfg, seed=i)
        out.append(bytes([FIX_CRC]) + _save_bytes(cache))
        if i == 2:
            out.append(bytes([FIX_CRC]) + _u64_lens_bytes(cache))
        if not cfg[8]:  # a fork's layers differ in length: one seq_lens tensor cannot say it
            streams = sum(d[0] & STREAM for d in out) // STREAM
            out.append(bytes([STREAM | (streams & 1) << 3]) + _stream_bytes(cache))
        cache.close()
    return tuple(out)
