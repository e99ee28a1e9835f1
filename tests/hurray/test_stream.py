"""Tests of raw Hurray streams (docs/format.md, Raw streams): round trips, truncation, limits, composites."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format import descriptor as d
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.io import StreamReader, StreamWriter
from hurray_gpu.tensor import Tensor

from _io_samples import (
    NUMPY_SAMPLES,
    coo,
    layout_samples,
    nested_group,
    overlay,
    partition,
    quantized_per_channel,
    sample_tensors,
    strided,
)


def _stream(tensors: list[Tensor]) -> bytes:
    out = io.BytesIO()
    with StreamWriter(out) as w:
        for t in tensors:
            w.write(t)
    return out.getvalue()


def test_stream_is_raw_back_to_back_bytes() -> None:
    t = Tensor.from_numpy(np.array([1, 2, 3], dtype=np.int8))
    data = _stream([t, t])
    one = t.descriptor_bytes + bytes([1, 2, 3])
    assert data == one + one


def test_round_trip_every_dtype_and_layout() -> None:
    tensors = [Tensor.from_numpy(a) for a in NUMPY_SAMPLES.values()]
    tensors += [quantized_per_channel(), coo(), strided(), partition(), overlay(), nested_group(),
                Tensor.from_numpy(np.zeros((0, 3), dtype=np.float32))]
    back = list(StreamReader(_stream(tensors)))
    assert back == tensors
    for arr, t in zip(NUMPY_SAMPLES.values(), back, strict=False):
        assert t.numpy().tobytes() == np.ascontiguousarray(arr).tobytes()
    assert back[-2].members[1].members[1].numpy().tolist() == [[2.0, 3.0], [6.0, 7.0]]


def test_round_trip_every_layout_and_scheme() -> None:
    tensors = list(layout_samples().values())
    data = _stream(tensors)
    assert len(data) == sum(len(t.descriptor_bytes) + t.nbytes for t in tensors)
    assert list(StreamReader(data)) == tensors


def test_paths_and_numpy_arrays(tmp_path) -> None:
    path = tmp_path / "s.hrrs"
    with StreamWriter(path) as w:
        assert w.write(np.arange(4, dtype=np.uint16)) == 53 + 8
    with StreamReader(path) as r:
        (t,) = list(r)
    assert t.numpy().tolist() == [0, 1, 2, 3]


def test_empty_stream_is_empty() -> None:
    assert list(StreamReader(b"")) == []


def test_truncation_at_every_byte_raises() -> None:
    tensors = list(sample_tensors().values())
    data = _stream(tensors)
    # Tensor boundaries (a clean end there is a valid shorter stream).
    bounds, pos = {0}, 0
    for t in tensors:
        pos += len(_stream([t]))
        bounds.add(pos)
    for cut in range(len(data)):
        reader = StreamReader(data[:cut])
        if cut in bounds:
            assert len(list(reader)) == sorted(bounds).index(cut)
            continue
        got = []
        with pytest.raises(HurrayFormatError):
            for t in reader:
                got.append(t)
        # Nothing half-returned: every yielded tensor is a complete original.
        assert got == tensors[: len(got)]


def test_torn_composite_is_rejected() -> None:
    p = partition()
    data = _stream([p])
    cut = len(data) - len(_stream([p.members[1]]))
    with pytest.raises(HurrayFormatError, match="torn composite"):
        list(StreamReader(data[:cut]))


class _Pipe(io.RawIOBase):
    """A non-seekable source that hands out at most 3 bytes per read."""

    def __init__(self, data: bytes) -> None:
        self._data, self._pos = data, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        n = min(3, len(b), len(self._data) - self._pos)
        b[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


def test_short_reads_from_non_seekable_source() -> None:
    tensors = list(sample_tensors().values())
    assert list(StreamReader(_Pipe(_stream(tensors)))) == tensors


def test_reader_is_streaming_not_buffering() -> None:
    tensors = [Tensor.from_numpy(np.full(100, i, dtype=np.int32)) for i in range(3)]
    src = io.BytesIO(_stream(tensors))
    reader = StreamReader(src)
    first = next(reader)
    assert first == tensors[0]
    assert src.tell() == len(_stream(tensors[:1]))


def test_limits_and_hostile_sizes() -> None:
    t = Tensor.from_numpy(np.arange(100, dtype=np.int64))
    data = _stream([t])
    with pytest.raises(HurrayFormatError, match="max_buffer_size"):
        list(StreamReader(data, max_buffer_size=799))
    with pytest.raises(HurrayFormatError, match="exceeds the reader limit"):
        list(StreamReader(data, max_descriptor_size=40))
    huge = d.TensorDescriptor(t.descriptor.dtype, (1 << 60,), d.RowMajor(),
                              (d.BufferHandle(8 << 60),))
    with pytest.raises(HurrayFormatError, match="truncated"):
        list(StreamReader(huge.encode() + bytes(16)))  # must not try to allocate 8 EiB


def test_hostile_huge_buffer_on_seekable_file(tmp_path) -> None:
    t = Tensor.from_numpy(np.arange(4, dtype=np.int64))
    huge = d.TensorDescriptor(t.descriptor.dtype, (1 << 40,), d.RowMajor(),
                              (d.BufferHandle(8 << 40),))
    path = tmp_path / "h.bin"
    path.write_bytes(huge.encode() + bytes(64))
    with pytest.raises(HurrayFormatError) as err:
        list(StreamReader(path))
    assert err.value.field == "buffers[0].byte_size"


def test_bad_magic_and_version() -> None:
    with pytest.raises(HurrayFormatError) as err:
        list(StreamReader(b"HRRYFILE" + bytes(100)))
    assert err.value.field == "version_major"
    with pytest.raises(HurrayFormatError, match="magic"):
        list(StreamReader(b"NOPE" + bytes(30)))


def test_error_offsets_are_stream_positions() -> None:
    t = Tensor.from_numpy(np.arange(3, dtype=np.int8))
    bad = bytearray(t.descriptor_bytes)
    bad[15] = 0x30  # reserved layout tag
    data = _stream([t]) + bytes(bad) + bytes(3)
    reader = StreamReader(data)
    assert next(reader) == t
    with pytest.raises(HurrayFormatError) as err:
        next(reader)
    assert err.value.offset == len(_stream([t])) + 15
    assert list(reader) == []  # no resynchronisation after an error


def test_cross_machine_requires_producer_synced() -> None:
    desc = d.TensorDescriptor(
        by_name("float32"), (4,), d.RowMajor(), (d.BufferHandle(16, 4096, d.DeviceTag.CUDA, d.SyncMode.EVENT),))
    t = Tensor.from_parts(desc, [bytes(16)])
    data = _stream([t])
    assert list(StreamReader(data)) == [t]
    with pytest.raises(HurrayFormatError, match="cross-machine"):
        list(StreamReader(data, cross_machine=True))
    with pytest.raises(HurrayFormatError, match="cross-machine"):
        StreamWriter(io.BytesIO(), cross_machine=True).write(t)


def test_composite_depth_limit() -> None:
    t = nested_group()  # two levels of heads
    data = _stream([t])
    assert list(StreamReader(data, max_composite_depth=2)) == [t]
    with pytest.raises(HurrayFormatError, match="nesting"):
        list(StreamReader(data, max_composite_depth=1))


_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
           np.float16, np.float32, np.float64, np.complex64, np.complex128, np.bool_]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_DTYPES).flatmap(
    lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))))
def test_hypothesis_stream_round_trip(arr: np.ndarray) -> None:
    t = Tensor.from_numpy(arr)
    (back,) = list(StreamReader(_stream([t])))
    assert back == t
    out = back.numpy()
    assert out.dtype == arr.dtype and out.shape == arr.shape
    assert out.tobytes() == arr.tobytes()


_FUZZ_STREAM = _stream([quantized_per_channel(), coo(), strided(), nested_group()])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_FUZZ_STREAM) - 1), st.integers(0, 255)),
                min_size=1, max_size=4), st.integers(0, len(_FUZZ_STREAM)))
def test_fuzzed_streams_raise_only_format_errors(edits, cut: int) -> None:
    data = bytearray(_FUZZ_STREAM)
    for pos, value in edits:
        data[pos] = value
    try:
        for t in StreamReader(bytes(data[:cut]), max_descriptor_size=4096):
            assert len(t.buffers) == len(t.descriptor.buffers)
    except HurrayFormatError:
        pass


def test_chunked_reads_of_large_buffers(monkeypatch, tmp_path) -> None:
    import hurray_gpu.io.stream as stream_mod

    monkeypatch.setattr(stream_mod, "CHUNK", 64)  # force the chunk-by-chunk path
    t = Tensor.from_numpy(np.arange(1000, dtype=np.float64))
    data = _stream([t, t])
    assert list(StreamReader(_Pipe(data))) == [t, t]
    with pytest.raises(HurrayFormatError, match="truncated"):
        list(StreamReader(_Pipe(data[:-100])))
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    with StreamReader(path) as reader:  # regular file: size verified, read in one go
        back = list(reader)
    assert back == [t, t] and back[0].buffers[0].array.ctypes.data % 64 == 0
