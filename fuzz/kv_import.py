"""Fuzz harness for the KV-cache import path (PagedKVCache.load / from_tensors on ``cpu``).

Control byte: bit 1 picks the source. Clear: the payload is a ``.hrry`` file (bit 0
recomputes its index CRC-32C after mutation) read by ``PagedKVCache.load``, which takes the
block-paged tensors and their ``<name>.seq_lens`` KV entries. Set: the payload is a raw stream
read by ``StreamReader``; its block-paged tensors go to ``PagedKVCache.from_tensors``, with the
last 1-D integer tensor of the stream (if any) as every tensor's seq_lens (a harness
convention: streams have no metadata); bit 3 makes the reader place the buffers straight on
the ``cpu`` device (the importer then copies device Buffers). Bit 2 enables the prefix cache. Property: only
HurrayFormatError or UnsupportedOpError escape (both documented by from_tensors); bounded time
and memory (the pools are copied from the input, so the cache is bounded by the input size);
an imported cache passes its invariants, and exporting it gives back the input's pools,
scales, block tables and seq_lens byte for byte, and its gathers equal the host reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.addressing import block_paged_to_dense
from hurray_gpu.format.descriptor import BlockPaged
from hurray_gpu.io import StreamReader
from hurray_gpu.kv_cache import PagedKVCache
from hurray_gpu.kv_cache.interchange import host_parts, load_tensors, tensor_name

from ._engine import Bounds, FuzzFailure, Harness, Stats, guarded
from ._tmpfs import scratch_file
from .hrry import fix_crc
from .kv_seeds import kv_import_seeds

NAME = "kv_import"
ALLOWED = (HurrayFormatError, UnsupportedOpError)
# The cache's pools are copies of the input's pools (at most the input size) next to the
# reader's host copies, plus per-sequence Python lists of the block tables.
BOUNDS = Bounds(seconds=2.0, mem_factor=48, mem_slack=1 << 20)
# No import bug is open; tests/fuzz/test_regressions.py replays every KNOWN_BUGS flag False.
KNOWN_BUGS: dict[str, bool] = {}


def _from_stream(payload: bytes, prefix: bool,
                 on_device: bool) -> tuple[PagedKVCache, dict[str, Any]]:
    with StreamReader(payload, device="cpu" if on_device else None) as reader:
        tensors = list(reader)
    paged = {f"tensor[{i}]": t for i, t in enumerate(tensors) if isinstance(t.layout, BlockPaged)}
    lens = None
    for t in tensors:
        if t.layout_name == "row_major" and len(t.shape) == 1 and t.dtype.name in (
                "int64", "int32", "uint32", "uint64"):
            lens = t.to("cpu").numpy()
    seq_lens = None if lens is None else dict.fromkeys(paged, lens)
    cache = PagedKVCache.from_tensors(paged, device="cpu", seq_lens=seq_lens,
                                      enable_prefix_cache=prefix)
    return cache, {"tensors": paged, "lens": seq_lens or {}}


def _from_file(path: str, prefix: bool) -> tuple[PagedKVCache, dict[str, Any]]:
    cache = PagedKVCache.load(path, "cpu", enable_prefix_cache=prefix)
    tensors, lens = load_tensors(path)
    return cache, {"tensors": tensors, "lens": lens}


def one_input(data: bytes, *, measure_memory: bool = False, stats: Stats | None = None) -> bool:
    """Check every property on one input.

    Returns:
        True when the input imported (and its export matched).

    Raises:
        FuzzFailure: a property was broken.
    """
    if not data:
        return False
    ctl, payload = data[0], data[1:]
    prefix = bool(ctl & 4)
    if ctl & 2:
        def decode() -> tuple[PagedKVCache, dict[str, Any]]:
            return _from_stream(payload, prefix, bool(ctl & 8))
    else:
        path = scratch_file("kv.hrry", fix_crc(payload) if ctl & 1 else payload)

        def decode() -> tuple[PagedKVCache, dict[str, Any]]:
            return _from_file(path, prefix)

    result = guarded(decode, ALLOWED, size=len(payload), bounds=BOUNDS,
                     measure_memory=measure_memory, stats=stats)
    if result is None:
        return False
    cache, given = result
    try:
        check_round_trip(cache, given["tensors"], given["lens"])
    finally:
        cache.close()
    return True


def _input_lens(t: Any, lens: dict[str, Any], name: str, pages: np.ndarray,
                page_size: int) -> np.ndarray:
    given = lens.get(name)
    if given is None:
        given = getattr(t, "seq_lens", None)
    if given is None:  # full pages (docs/format.md, Token counts per sequence)
        return np.diff(pages.astype(np.int64)) * page_size
    return np.asarray(given, np.int64)


def check_round_trip(cache: PagedKVCache, tensors: dict[str, Any], lens: dict[str, Any]) -> None:
    """The imported cache re-exports the input exactly and gathers what the input holds.

    Args:
        cache: the imported cache.
        tensors: the block-paged tensors it was imported from (name -> host Tensor).
        lens: the seq_lens given for them (name -> array), if any.

    Raises:
        FuzzFailure: invariants, export or gather differ from the input.
    """
    try:
        cache.check_invariants()
    except AssertionError as exc:
        raise FuzzFailure(f"an imported cache breaks its invariants: {exc}") from exc
    seqs, gathered = cache.seq_ids, {}
    for name, t in tensors.items():
        lay = t.layout
        pool, table, ptr = host_parts(t)
        want_lens = _input_lens(t, lens, name, ptr, lay.page_size)
        out = cache.export(lay.layer_index, lay.kv_role)
        live, o_table, o_ptr = host_parts(out)
        o_pool = _bytes(live)
        if not (np.array_equal(o_table, table) and np.array_equal(o_ptr, ptr)):
            raise FuzzFailure(f"{name}: re-exported block table or seq_ptr differ")
        out_lens = getattr(out, "seq_lens", None)
        if out_lens is None or not np.array_equal(out_lens, want_lens):
            raise FuzzFailure(f"{name}: seq_lens {want_lens} re-exported as {out_lens}")
        raw = _bytes(pool)
        if not np.array_equal(o_pool.reshape(-1), raw[:o_pool.size]):
            raise FuzzFailure(f"{name}: the imported page pool differs from the input's")
        if out.quantization is not None:
            scales, mine = _bytes(t.buffers[3]), _bytes(out.buffers[3])
            if not np.array_equal(mine, scales[:mine.size]):
                raise FuzzFailure(f"{name}: the imported scales differ from the input's")
        elif out.dtype.name != "float8_e4m3" and seqs and int(want_lens.sum()):
            if lay.layer_index not in gathered:  # one launch gathers keys and values
                gathered[lay.layer_index] = cache.gather(seqs, lay.layer_index)
            _check_gather(cache, t, name, raw, table, ptr, want_lens,
                          gathered[lay.layer_index][lay.kv_role])


def _bytes(buf: Any) -> np.ndarray:
    """A host or device buffer's bytes as a flat uint8 array."""
    if hasattr(buf, "copyout"):
        return np.asarray(buf.copyout(), np.uint8).reshape(-1)
    return np.asarray(buf, np.uint8).reshape(-1)


def _check_gather(cache: PagedKVCache, t: Any, name: str, raw: np.ndarray, table: np.ndarray,
                  ptr: np.ndarray, lens: np.ndarray, got: Any) -> None:
    lay = t.layout
    heads, dim = cache.num_kv_heads, cache.head_dim
    item = np.dtype(_np_dtype(t.dtype.name))
    pool = raw[:lay.num_pages * lay.page_size * heads * dim * item.itemsize].view(item)
    want = block_paged_to_dense(pool, table, ptr, lay.page_size, lens, num_heads=heads,
                                head_dim=dim, num_pages=lay.num_pages)
    got_host = got.to("cpu").numpy() if hasattr(got, "to") else np.asarray(got)
    if got_host.view(np.uint8).tobytes() != np.ascontiguousarray(want).view(np.uint8).tobytes():
        raise FuzzFailure(f"{name} ({tensor_name(lay.layer_index, lay.kv_role)}): gather "
                          "differs from the host reference")


def _np_dtype(name: str) -> Any:
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


HARNESS = Harness(NAME, lambda: list(kv_import_seeds()), one_input)
