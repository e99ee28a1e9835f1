"""Resource bounds: inputs that declare far more than they hold fail fast, before allocating.

One table of decompression-bomb style inputs (huge declared buffers, shapes, page pools, seq
lens, node counts, string lengths, buffer counts), each read through the public API: the
documented typed error is raised, the tracemalloc peak stays far below the declared size and
the call returns within a time bound. The last tests check that every resource limit is in
the registry (hurray_gpu/limits.py) and that docs/reliability.md shows the same table.
"""

from __future__ import annotations

import io
import re
import struct
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import blake3
import numpy as np
import pytest

from hurray_gpu import limits
from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format import descriptor as d
from hurray_gpu.format.addressing import block_paged_to_dense, coo_to_dense
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.io import StreamReader, load, open_file, save
from hurray_gpu.io.crc32c import crc32c
from hurray_gpu.kv_cache import PagedKVCache
from hurray_gpu.kv_cache.interchange import load_tensors
from hurray_gpu.runtime.hostmem import CHUNK
from hurray_gpu.tensor import Tensor
from tests._support import trusted_tensor
from vyre import WireFormatError, from_wire, reference
from vyre import builder as b

ROOT = Path(__file__).resolve().parents[2]
TIB = 1 << 40
SECONDS = 2.0  # generous: the CI machine is shared; the real cost is a few milliseconds


class _Pipe:
    """A source with only ``read`` (a socket or pipe): its length is unknown."""

    def __init__(self, data: bytes) -> None:
        self._io = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self._io.read(min(n, 4096) if n > 0 else n)


def _huge_vector(elements: int = TIB) -> bytes:
    """A row-major int64 vector descriptor declaring ``8 * elements`` bytes."""
    return d.TensorDescriptor(by_name("int64"), (elements,), d.RowMajor(),
                              (d.BufferHandle(8 * elements),)).encode()


def _stream_bomb(wrap: Callable[[bytes], Any]) -> Callable[[], Any]:
    data = _huge_vector() + bytes(64)
    return lambda: list(StreamReader(wrap(data)))


def _file_bomb(tmp: Path, patch: Callable[[bytes], bytes]) -> Callable[[], Any]:
    """A saved 4-element file with ``patch`` applied and the index CRC recomputed."""
    path = tmp / "bomb.hrry"
    save(path, {"x": Tensor.from_numpy(np.arange(4, dtype=np.int64))})
    raw = patch(path.read_bytes())
    idx_off, idx_len = struct.unpack_from("<QQ", raw, len(raw) - 40)
    if idx_off + idx_len <= len(raw) - 40:
        crc = crc32c(raw[idx_off:idx_off + idx_len])
        raw = raw[:len(raw) - 12] + struct.pack("<I", crc) + raw[len(raw) - 8:]
    path.write_bytes(raw)
    return lambda: load(path)


def _swap_descriptor(raw: bytes) -> bytes:
    small = Tensor.from_numpy(np.arange(4, dtype=np.int64)).descriptor_bytes
    huge = _huge_vector()
    assert len(huge) == len(small) and raw.count(small) == 1
    return raw.replace(small, huge)


def _index_length(raw: bytes) -> bytes:
    # The trailer's index_length claims 2**40 bytes of index in a 8 KiB file.
    base = len(raw) - 40
    return raw[:base + 8] + struct.pack("<Q", TIB) + raw[base + 16:]


def _paged(num_pages: int, page_size: int, heads: int, tokens: int, layer: int = 0,
           role: int = 0) -> Tensor:
    pool = np.zeros(2 * 2 * heads, np.float16)
    table, ptr = np.array([0, 1], np.uint32), np.array([0, 2], np.uint32)
    layout = d.BlockPaged(page_size=page_size, num_pages=num_pages, num_seqs=1, kv_role=role,
                          layer_index=layer)
    slots = num_pages * page_size * heads
    handles = (d.BufferHandle(2 * slots), d.BufferHandle(8), d.BufferHandle(8))
    desc = d.TensorDescriptor(by_name("float16"), (tokens, heads, 1), layout, handles)
    return trusted_tensor(desc, [pool.view(np.uint8), table.view(np.uint8),
                                  ptr.view(np.uint8)])


def _kv_pool_bomb() -> Any:
    # The descriptor declares a 2**24-page pool (2 TiB of K) over an 8-byte pool buffer.
    pair = [_paged(1 << 24, 1 << 16, 1, 4, role=r) for r in (0, 1)]
    return PagedKVCache.from_tensors(pair)


def _kv_layer_bomb() -> Any:
    # One pair claiming layer 2**32 - 2: the importer must not walk 4 billion absent layers.
    pair = [_paged(2, 2, 1, 4, layer=0xFFFFFFFE, role=r) for r in (0, 1)]
    return PagedKVCache.from_tensors(pair)


def _kv_stream_bomb() -> Any:
    layout = d.BlockPaged(page_size=1 << 16, num_pages=1 << 24, num_seqs=1, kv_role=0,
                          layer_index=0)
    desc = d.TensorDescriptor(by_name("float16"), (4, 1, 1), layout,
                              (d.BufferHandle(2 << 40), d.BufferHandle(8), d.BufferHandle(8)))
    with StreamReader(_Pipe(desc.encode() + bytes(64))) as reader:
        return PagedKVCache.from_tensors(list(reader))


def _vyre_blob(body: bytes) -> bytes:
    return b"VYRE" + struct.pack("<HH", 6, 4) + blake3.blake3(body).digest() + body


def _leb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


@dataclass(frozen=True)
class Bomb:
    """One hostile input: ``make(tmp_path)`` returns the call that must fail."""

    name: str
    make: Callable[[Path], Callable[[], Any]]
    error: type[BaseException] | tuple[type[BaseException], ...]
    declared: int  # bytes the input claims (what holding it would take)
    peak: int = 1 << 20  # tracemalloc bound for the failing call


BOMBS = [
    Bomb("stream-bytes-8tib-buffer", lambda _: _stream_bomb(bytes), HurrayFormatError, 8 * TIB),
    Bomb("stream-bytesio-8tib-buffer", lambda _: _stream_bomb(io.BytesIO), HurrayFormatError,
         8 * TIB),
    Bomb("stream-pipe-8tib-buffer", lambda _: _stream_bomb(_Pipe), HurrayFormatError, 8 * TIB,
         peak=CHUNK + (2 << 20)),  # documented: one chunk of read-ahead when length unknown
    Bomb("stream-16mib-descriptor-prefix",
         lambda _: lambda: list(StreamReader(b"HRRY\x01\x00" + struct.pack("<I", 16 << 20)
                                             + bytes(30))),
         HurrayFormatError, 16 << 20),
    Bomb("hrry-descriptor-8tib-over-32-bytes", lambda t: _file_bomb(t, _swap_descriptor),
         HurrayFormatError, 8 * TIB),
    Bomb("hrry-index-length-1tib", lambda t: _file_bomb(t, _index_length), HurrayFormatError,
         TIB),
    Bomb("kv-pool-2tib-over-8-bytes", lambda _: _kv_pool_bomb, (HurrayFormatError,
                                                                 UnsupportedOpError), 2 * TIB),
    Bomb("kv-layer-index-2^32", lambda _: _kv_layer_bomb, HurrayFormatError, 1 << 32),
    Bomb("kv-stream-2tib-pool", lambda _: _kv_stream_bomb, HurrayFormatError, 2 * TIB,
         peak=CHUNK + (2 << 20)),
    Bomb("block-paged-dense-2^40-tokens",
         lambda _: lambda: block_paged_to_dense(np.zeros((2, 2, 1, 1), np.float32),
                                                [0, 1], [0, 2], 2, [TIB]),
         HurrayFormatError, TIB),
    Bomb("coo-dense-2^40-squared",
         lambda _: lambda: coo_to_dense(np.ones(1, np.float32), np.zeros((1, 2), np.int64),
                                        (TIB, TIB)),
         HurrayFormatError, TIB * TIB),
    Bomb("vyre-node-count-999999-in-3-bytes",
         lambda _: lambda: from_wire(_vyre_blob(_leb(999_999))), WireFormatError,
         999_999 * 100),  # a decoded node is a ~100-byte Python object
    Bomb("vyre-node-count-2^63", lambda _: lambda: from_wire(_vyre_blob(_leb(1 << 63))),
         WireFormatError, 1 << 63),
    Bomb("vyre-string-1mib-in-3-bytes",
         lambda _: lambda: from_wire(_vyre_blob(b"\x01" + _leb(1 << 20) + b"abc")),
         WireFormatError, 1 << 20),
    Bomb("vyre-reference-output-2^32-words",
         lambda _: lambda: reference.run(
             b.program([b.output("o", 0, b.U32, 0xFFFFFFFF)], [b.store("o", 0, 1)]),
             grid=(1, 1, 1)),
         reference.ReferenceLimitError, 4 << 32),
]


def _measure(call: Callable[[], Any], error: Any) -> tuple[int, float, BaseException]:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        t0 = time.perf_counter()
        with pytest.raises(error) as info:
            call()
        elapsed = time.perf_counter() - t0
        return tracemalloc.get_traced_memory()[1] - base, elapsed, info.value
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("bomb", BOMBS, ids=[x.name for x in BOMBS])
def test_declared_sizes_beyond_the_input_fail_fast_and_small(bomb: Bomb,
                                                             tmp_path: Path) -> None:
    call = bomb.make(tmp_path)
    peak, elapsed, exc = _measure(call, bomb.error)
    assert peak <= bomb.peak, f"{bomb.name}: peaked at {peak} bytes"
    assert peak * 50 < bomb.declared
    assert elapsed < SECONDS, f"{bomb.name}: {elapsed:.2f} s"
    assert "Fix:" in str(exc)


def test_a_file_of_a_real_kv_cache_declaring_huge_seq_lens_is_rejected(tmp_path: Path) -> None:
    cache = PagedKVCache("cpu", 1, 1, 2, num_pages=4, page_size=2)
    s = cache.add_sequence()
    rows = np.ones((3, 1, 2), np.float16)
    cache.append(s, 0, rows, rows)
    path = tmp_path / "kv.hrry"
    cache.save(path)
    tensors, lens = load_tensors(path)
    assert len(tensors) == 2 and lens["layers.0.key"].tolist() == [3]
    with open_file(path) as f:
        assert f.metadata["layers.0.key.seq_lens"] == [3]
    # The same pages, claiming 2**62 tokens.
    peak, elapsed, exc = _measure(
        lambda: PagedKVCache.from_tensors(tensors, seq_lens={n: [1 << 62] for n in tensors}),
        HurrayFormatError)
    assert exc.field == "seq_lens" and peak < (1 << 20) and elapsed < SECONDS


# -- the limits registry and its documentation ----------------------------------------------

_CONSTANT = re.compile(r"^(_?(?:DEFAULT_)?MAX_[A-Z0-9_]+|_?[A-Z0-9_]*(?:_LIMIT|CAPACITY))\s*=",
                       re.M)
# Matching names that are not resource limits.
NOT_LIMITS = {("hurray_gpu.kernels.paged", "SIGNED_LIMIT")}  # a code-generation threshold


def _defined_limits() -> set[tuple[str, str]]:
    """(module, constant) of every module-level MAX_* / *LIMIT* / *CAPACITY* constant."""
    found = set()
    for package in ("hurray_gpu", "vyre"):
        for path in (ROOT / package).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            module = module.removesuffix(".__init__")
            found.update((module, name) for name in _CONSTANT.findall(path.read_text()))
    return found - NOT_LIMITS


def test_every_limit_constant_is_registered() -> None:
    registered = {(x.module, x.constant) for x in limits.LIMITS}
    missing = sorted(_defined_limits() - registered)
    assert not missing, f"add these to hurray_gpu/limits.py: {missing}"


def test_registry_values_resolve_and_are_positive() -> None:
    names = [x.name for x in limits.LIMITS]
    assert len(names) == len(set(names))
    for limit in limits.LIMITS:
        values = limit.value if isinstance(limit.value, tuple) else (limit.value,)
        assert all(isinstance(v, int) and v > 0 for v in values), limit.name
        assert limit.description and limit.area
    assert limits.value_of("hurray_gpu.format.descriptor.validate.MAX_RANK") == d.MAX_RANK
    with pytest.raises(KeyError):
        limits.value_of("nowhere.MAX_NOTHING")


def test_docs_table_matches_the_registry() -> None:
    doc = (ROOT / "docs" / "reliability.md").read_text()
    start, end = "<!-- limits:begin -->\n", "<!-- limits:end -->"
    assert start in doc and end in doc
    table = doc[doc.index(start) + len(start):doc.index(end)]
    assert table == limits.limits_table(), (
        "docs/reliability.md is stale: paste the output of `python -m hurray_gpu.limits`")
