"""materialize() of dense layouts on every device vs the spec's per-element address formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.addressing import byte_positions, dense_offsets, offset_range
from hurray_gpu.format.descriptor import BufferHandle, TensorDescriptor
from hurray_gpu.format.descriptor.layouts import ColMajor, Hilbert, Morton, Strided, Tiled
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.tensor import Tensor
from tests._support import stable_rng

NESTED = Tiled((4, 4), inner_layout=4, inner=Tiled((2, 2), outer_layout=2))
CASES = {
    "col_major": (ColMajor(), (5, 3, 7)),
    "strided_neg_zero": (Strided((-1, 0, 11)), (6, 3, 5)),
    "tiled_partial": (Tiled((4, 3)), (6, 8)),
    "tiled_col_inner": (Tiled((3, 2), outer_layout=2, inner_layout=2), (7, 5)),
    "tiled_strided": (Tiled((2, 4), outer_layout=3, inner_layout=3, outer_strides=(1, 3),
                            inner_strides=(-4, 1)), (5, 11)),
    "tiled_nested": (NESTED, (9, 10)),
    # 64 x 64 tiles of 8 x 8 with both sides ragged: host C's 16-word lines, runs of 8 and
    # elements at the edges; column-major 16-row groups cut by a ragged bottom edge.
    "tiled_nested_64_8": (Tiled((64, 64), inner_layout=4, inner=Tiled((8, 8))), (70, 150)),
    "col_major_ragged": (ColMajor(), (150, 37)),
    "morton_npot": (Morton((3, 3)), (5, 7)),
    "morton_3d": (Morton((2, 2, 2)), (3, 4, 2)),
    "hilbert_2d": (Hilbert(3, 2), (8, 8)),
    "hilbert_3d": (Hilbert(2, 3), (4, 4, 4)),
}
DTYPES = ["float32", "float16", "uint8", "float64", "int4", "float6_e3m2", "bool"]


def _descriptor(layout: object, shape: tuple[int, ...], dtype: str) -> TensorDescriptor:
    dt = by_name(dtype)
    lo, hi = offset_range(layout, shape)
    per = {1: 8, 2: 4, 4: 2, 6: 4}.get(dt.bits, 1)
    # byte_offset puts element 0 where negative strides stay inside the buffer.
    first = -(-max(-lo, 0) // per) * per
    boff = (first * dt.bits) // 8
    size = boff + (max(hi + 1, 0) * dt.bits + 7) // 8 + (3 if dt.bits == 6 else 0)
    return TensorDescriptor(dt, shape, layout, (BufferHandle(size, 64),), byte_offset=boff)


def _expected(desc: TensorDescriptor, raw: np.ndarray) -> np.ndarray:
    """The oracle: per-element offsets (spec formulas) -> byte/bit positions -> codes."""
    offs = dense_offsets(desc).reshape(-1)
    byte, bit = byte_positions(desc.dtype, offs, desc.byte_offset)
    bits = desc.dtype.bits
    if bits >= 8:
        width = bits // 8
        rows = raw[byte[:, None] + np.arange(width)]
        return rows.reshape(-1)
    pair = raw[byte].astype(np.uint32) | (np.append(raw, 0)[byte + 1].astype(np.uint32) << 8)
    if bits == 6:
        word = pair | (np.append(raw, [0, 0])[byte + 2].astype(np.uint32) << 16)
        return ((word >> bit.astype(np.uint32)) & 63).astype(np.uint8)
    return ((pair >> bit.astype(np.uint32)) & ((1 << bits) - 1)).astype(np.uint8)


def _codes(t: Tensor, count: int) -> np.ndarray:
    host = t.to("cpu")
    raw = np.asarray(host.buffers[0])
    if t.dtype.bits >= 8:
        return raw[: count * t.dtype.bits // 8]
    packed = np.zeros(raw.size * 8 // t.dtype.bits + 4, np.uint8)
    bits = np.unpackbits(raw, bitorder="little")
    n = bits.size // t.dtype.bits
    weights = 1 << np.arange(t.dtype.bits)
    packed[:n] = (bits[: n * t.dtype.bits].reshape(n, t.dtype.bits) * weights).sum(1)
    return packed[:count]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_dense_layout_to_row_major(device, case: str, dtype: str) -> None:
    layout, shape = CASES[case]
    desc = _descriptor(layout, shape, dtype)
    rng = stable_rng(case, dtype)
    raw = rng.integers(0, 256, desc.buffers[0].byte_size, dtype=np.uint8)
    t = Tensor.from_parts(desc, [raw]).to(device)
    out = materialize(t)
    assert out.shape == shape and out.dtype == desc.dtype and out.layout_name == "row_major"
    count = math.prod(shape)
    want = _expected(desc, raw)
    got = _codes(out, count)
    assert np.array_equal(got, want[: got.size]), f"{case} {dtype} differs"


def test_spec_worked_examples() -> None:
    # Tiled [6,8] with 2x4 tiles: element [3,5] lies at offset 29 (spec, Tiled example).
    desc = _descriptor(Tiled((2, 4)), (6, 8), "uint8")
    assert dense_offsets(desc)[3, 5] == 29
    raw = np.arange(desc.buffers[0].byte_size, dtype=np.uint8)
    out = materialize(Tensor.from_parts(desc, [raw])).numpy()
    assert out[3, 5] == 29
    mort = _descriptor(Morton((2, 2)), (4, 4), "uint8")
    out = materialize(Tensor.from_parts(mort, [np.arange(16, dtype=np.uint8)])).numpy()
    assert out[2, 3] == 14
    hil = _descriptor(Hilbert(2, 2), (4, 4), "uint8")
    out = materialize(Tensor.from_parts(hil, [np.arange(16, dtype=np.uint8)])).numpy()
    table = [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (0, 3), (1, 3), (1, 2), (2, 2), (2, 3),
             (3, 3), (3, 2), (3, 1), (2, 1), (2, 0), (3, 0)]
    for h, xy in enumerate(table):
        assert out[xy] == h


def test_layout_outside_buffer_is_rejected_before_launch() -> None:
    desc = _descriptor(Strided((5, 1)), (4, 5), "float32")
    raw = np.zeros(desc.buffers[0].byte_size, np.uint8)
    t = Tensor.from_parts(desc, [raw])
    small = TensorDescriptor(desc.dtype, desc.shape, Strided((7, 1)), desc.buffers)
    with pytest.raises(HurrayFormatError):
        materialize(Tensor.from_parts(small, [raw]))
    assert materialize(t).shape == (4, 5)
    tiled = TensorDescriptor(desc.dtype, (8, 5), Tiled((4, 4)), desc.buffers)  # needs 128 B
    with pytest.raises(HurrayFormatError):
        materialize(Tensor.from_parts(tiled, [raw]))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_float_conversion_after_gather(device, dtype: str) -> None:
    import ml_dtypes

    arr = np.random.default_rng(4).standard_normal((6, 8)).astype(np.float32)
    desc = _descriptor(Tiled((4, 3)), (6, 8), "float32")
    storage = np.zeros(desc.buffers[0].byte_size // 4, np.float32)
    storage[dense_offsets(desc).reshape(-1)] = arr.reshape(-1)
    t = Tensor.from_parts(desc, [storage.view(np.uint8)]).to(device)
    got = materialize(t, dtype).to("cpu").numpy()
    want = arr.astype(np.float16 if dtype == "float16" else ml_dtypes.bfloat16)
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint16), want.view(np.uint16))
