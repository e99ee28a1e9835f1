"""Reader memory and aliasing guards: overlapping .hrry index ranges are rejected, declared
sizes are checked against known lengths before allocating, and alignment padding is bounded."""

from __future__ import annotations

import dataclasses
import io
import struct
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.io import StreamReader, StreamWriter, load, open_file, save
from hurray_gpu.io.crc32c import crc32c
from hurray_gpu.io.file_format import IndexEntry, encode_index
from hurray_gpu.runtime.hostmem import aligned_empty, host_alignment
from hurray_gpu.tensor import Tensor

from _io_samples import nested_group, partition

A = 4096
_TRAILER = struct.Struct("<QQQII4s4s")


def _peak(call: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def _with_index(data: bytes, entries: list[IndexEntry]) -> bytes:
    """``data`` (a saved file) with its index replaced by ``entries`` (CRC recomputed)."""
    idx_off = _TRAILER.unpack_from(data, len(data) - 40)[0]
    index = encode_index(entries)
    return data[:idx_off] + index + _TRAILER.pack(idx_off, len(index), 0, 0, crc32c(index),
                                                  bytes(4), b"HRRY")


def _saved(tmp_path, tensors: dict[str, Any]) -> tuple[bytes, list[IndexEntry]]:
    path = tmp_path / "src.hrry"
    save(path, tensors)
    with open_file(path) as f:
        return path.read_bytes(), list(f.entries)


def _index_field_offset(data: bytes, entry: int, field: int) -> int:
    """Absolute offset of field ``field`` (0 descriptor_offset, 12 data_offset) of the
    ``entry``-th index entry."""
    pos = _TRAILER.unpack_from(data, len(data) - 40)[0] + 8
    for _ in range(entry):
        pos += 2 + struct.unpack_from("<H", data, pos)[0] + 32
    return pos + 2 + struct.unpack_from("<H", data, pos)[0] + field


def _open_error(tmp_path, data: bytes) -> HurrayFormatError:
    path = tmp_path / "bad.hrry"
    path.write_bytes(data)
    with pytest.raises(HurrayFormatError) as err:
        open_file(path)
    assert "Fix:" in str(err.value)
    return err.value


# -- aliased / overlapping index entries ----------------------------------------------------
def test_aliased_entries_are_rejected_at_open(tmp_path) -> None:
    data, (e,) = _saved(tmp_path, {"t": np.arange(16, dtype=np.int32)})
    alias = dataclasses.replace(e, name="alias")
    bad = _with_index(data, [e, alias])
    err = _open_error(tmp_path, bad)
    assert err.field == "descriptor_offset"
    assert err.offset == _index_field_offset(bad, 1, 0)
    assert "'alias'" in str(err) and "'t'" in str(err)


def test_overlapping_data_ranges_are_rejected(tmp_path) -> None:
    data, (a, b) = _saved(tmp_path, {"a": np.arange(8, dtype=np.int8),
                                     "b": np.arange(4, dtype=np.int8)})
    # b's data moved onto a's: distinct descriptors, overlapping data.
    moved = dataclasses.replace(b, data_offset=a.data_offset, data_length=4)
    bad = _with_index(data, [a, moved])
    err = _open_error(tmp_path, bad)
    assert err.field == "data_offset"
    assert err.offset == _index_field_offset(bad, 1, 12)


def test_data_range_over_another_descriptor_is_rejected(tmp_path) -> None:
    data, (a, b) = _saved(tmp_path, {"a": np.arange(8, dtype=np.int8),
                                     "b": np.arange(4, dtype=np.int8)})
    grown = dataclasses.replace(a, data_length=b.descriptor_offset + 1 - a.data_offset)
    err = _open_error(tmp_path, _with_index(data, [grown, b]))
    assert err.field == "descriptor_offset" and "'b'" in str(err)


def test_partial_descriptor_overlap_is_rejected(tmp_path) -> None:
    data, (a, b) = _saved(tmp_path, {"a": np.arange(8, dtype=np.int8),
                                     "b": np.arange(4, dtype=np.int8)})
    shifted = dataclasses.replace(b, descriptor_offset=a.descriptor_offset + 8)
    err = _open_error(tmp_path, _with_index(data, [a, shifted]))
    assert err.field == "descriptor_offset"


@pytest.mark.parametrize("make", [partition, nested_group])
def test_composites_with_zero_length_head_data_still_load(tmp_path, make) -> None:
    """Heads have data_length 0 and data_offset == the first member's descriptor_offset."""
    path = tmp_path / "c.hrry"
    save(path, {"c": make(), "after": np.arange(3, dtype=np.int16)})
    with open_file(path) as f:
        heads = [e for e in f.entries if e.data_length == 0]
        assert heads and any(h.data_offset in {e.descriptor_offset for e in f.entries}
                             for h in heads)
    back = load(path)
    assert back["c"] == make() and back["after"].numpy().tolist() == [0, 1, 2]


def test_empty_tensors_zero_length_data_overlaps_nothing(tmp_path) -> None:
    path = tmp_path / "e.hrry"
    tensors = {f"e{i}": np.zeros(0, np.float32) for i in range(5)} | {"x": np.ones(3)}
    save(path, tensors)
    back = load(path)
    assert list(back) == list(tensors) and back["x"].numpy().tolist() == [1.0, 1.0, 1.0]


def test_load_of_many_entries_is_linear(tmp_path) -> None:
    """Position lookup is a dict: 4000 small tensors load in well under a second."""
    path = tmp_path / "many.hrry"
    save(path, {f"t{i}": np.array([i], np.int32) for i in range(4000)}, alignment=A)
    t0 = time.perf_counter()
    back = load(path)
    assert time.perf_counter() - t0 < 5.0
    assert len(back) == 4000 and back["t3999"].numpy().tolist() == [3999]


# -- alignment padding ----------------------------------------------------------------------
def _aligned_tensor(values: np.ndarray, alignment: int) -> Tensor:
    t = Tensor.from_numpy(values)
    desc = t.descriptor
    desc = dataclasses.replace(desc, buffers=tuple(dataclasses.replace(h, alignment=alignment)
                                                   for h in desc.buffers))
    return Tensor.from_parts(desc, [np.asarray(b).copy() for b in t.buffers])


def test_host_alignment_bounds_padding() -> None:
    assert host_alignment(1 << 21, 1) == 64
    assert host_alignment(1 << 21, 0) == 64
    assert host_alignment(4096, 4096 * 16) == 4096
    assert host_alignment(1 << 21, 32 << 20) == 1 << 21
    assert host_alignment(1 << 21, 1 << 20) == 1 << 16  # pad <= size / 16
    assert host_alignment(16, 1 << 20) == 64
    for n in (0, 1, 63, 64, 1000):
        out = aligned_empty(n, 64)
        assert out.size == n and (n == 0 or out.ctypes.data % 64 == 0)
        assert out.base is None or out.base.size <= n + 63


def test_stream_of_tiny_2mib_aligned_buffers_allocates_little() -> None:
    t = _aligned_tensor(np.arange(1, dtype=np.uint8), 1 << 21)
    out = io.BytesIO()
    with StreamWriter(out) as w:
        for _ in range(64):
            w.write(t)
    data = out.getvalue()
    peak = _peak(lambda: list(StreamReader(data)))
    assert peak < 200 * len(data) and peak < (1 << 20)
    back = list(StreamReader(data))
    assert back == [t] * 64 and back[0].descriptor.buffers[0].alignment == 1 << 21


def test_hrry_copies_of_empty_2mib_aligned_buffers_allocate_little(tmp_path) -> None:
    path = tmp_path / "a.hrry"
    empty = _aligned_tensor(np.zeros(0, np.uint8), 1 << 21)
    save(path, {f"e{i}": empty for i in range(8)})
    peak = _peak(lambda: load(path))
    assert peak < (1 << 20)
    assert load(path)["e7"] == empty


# -- declared sizes against the known remaining length ----------------------------------------
def _hostile_prefix(length: int) -> bytes:
    """A valid-looking 10-byte descriptor prefix declaring ``length`` bytes."""
    good = Tensor.from_numpy(np.arange(4, dtype=np.int8)).descriptor_bytes
    return good[:6] + struct.pack("<I", length)


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview, io.BytesIO])
def test_descriptor_length_checked_before_allocating_in_memory(wrap) -> None:
    data = _hostile_prefix(16 << 20)
    err: list[HurrayFormatError] = []

    def read() -> None:
        with pytest.raises(HurrayFormatError) as e:
            list(StreamReader(wrap(data)))
        err.append(e.value)

    assert _peak(read) < (1 << 20)
    assert err[0].field == "descriptor" and err[0].offset == 10 and "Fix:" in str(err[0])


def test_descriptor_length_checked_before_allocating_in_a_file(tmp_path) -> None:
    path = tmp_path / "s.bin"
    path.write_bytes(_hostile_prefix(16 << 20))
    with pytest.raises(HurrayFormatError):
        _peak(lambda: list(StreamReader(path)))
    assert _peak(lambda: pytest.raises(HurrayFormatError, lambda: list(StreamReader(path)))) \
        < (1 << 20)


class _Pipe:
    """Only ``read``, short reads: the source's length is unknown."""

    def __init__(self, data: bytes) -> None:
        self._io = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self._io.read(min(n, 1000) if n > 0 else n)


def test_descriptor_from_a_pipe_is_read_in_bounded_pieces() -> None:
    data = _hostile_prefix(16 << 20) + bytes(100)

    def read() -> None:
        with pytest.raises(HurrayFormatError, match="descriptor needs"):
            list(StreamReader(_Pipe(data)))

    assert _peak(read) < (3 << 20)


def test_buffer_size_checked_against_bytes_before_allocating() -> None:
    t = Tensor.from_numpy(np.zeros(60 << 18, np.uint8))  # 15 MiB declared
    head = t.descriptor_bytes

    def read() -> None:
        with pytest.raises(HurrayFormatError) as e:
            list(StreamReader(io.BytesIO(head + bytes(10))))
        assert e.value.field == "buffers[0].byte_size"

    assert _peak(read) < (1 << 20)


def test_streams_still_read_from_every_source_kind(tmp_path) -> None:
    tensors = [Tensor.from_numpy(np.arange(n, dtype=np.float32)) for n in (0, 1, 3000)]
    out = io.BytesIO()
    with StreamWriter(out) as w:
        for t in tensors:
            w.write(t)
    data = out.getvalue()
    path = tmp_path / "ok.bin"
    path.write_bytes(data)
    for source in (data, bytearray(data), memoryview(data), io.BytesIO(data), path,
                   _Pipe(data)):
        assert list(StreamReader(source)) == tensors
