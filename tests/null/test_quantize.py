"""``quantize``: round trips through ``dequantize`` (reference and cpu), the exact parameter
layouts of docs/format.md, Quantization parameters, GPTQ zero-point import, and typed rejections.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.descriptor.quant import (
    MXFP,
    NF4,
    PerBlockAffine,
    PerChannelAffine,
    PerTensorAffine,
)
from hurray_gpu.format.packing import unpack
from hurray_gpu.ops import dequantize
from hurray_gpu.ops.quantize import STORAGE_TYPES, quantize

DEVICES = ("reference", "cpu")
SCALE_NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
# Largest gap between consecutive NF4 levels (0.7229568 -> 1.0), halved, plus slack.
NF4_HALF_GAP = 0.139
# MX: top-binade spacing / largest finite value, per element type.
MX_REL = {"float8_e4m3": 32 / 448, "float8_e5m2": 8192 / 57344, "float6_e2m3": 0.5 / 7.5,
          "float6_e3m2": 4 / 28, "float4_e2m1": 2 / 6, "int8": 1 / 127, "int4": 1 / 7}


def _deq(t, device: str) -> np.ndarray:
    return dequantize(t, device=device).to("cpu").numpy().astype(np.float64)


def _codes(t) -> list:
    arr = unpack(np.asarray(t.buffers[0]), t.dtype, t.descriptor.element_count)
    return np.asarray(arr).astype(np.int64).reshape(t.shape).tolist()


def _raw(t, index: int) -> bytes:
    return np.asarray(t.buffers[index]).tobytes()


def _scales(t, count: int, scale_dtype: str = "float32") -> np.ndarray:
    return np.frombuffer(_raw(t, 1)[: count * np.dtype(SCALE_NP[scale_dtype]).itemsize],
                         SCALE_NP[scale_dtype]).astype(np.float64)


def _affine_tol(t, x: np.ndarray, scale_dtype: str = "float32") -> float:
    # Rounding to half a step, clipping at the range ends, and the f32 output rounding.
    q = t.descriptor.quantization
    f32 = float(np.abs(x).max(initial=0)) * 2.0**-22
    if isinstance(q, PerTensorAffine):
        return abs(q.scale) * 1.001 + f32
    count = x.shape[q.axis] if isinstance(q, PerChannelAffine) else \
        -(-x.shape[q.axis] // q.block_size) * (x.size // max(1, x.shape[q.axis]))
    return float(np.abs(_scales(t, count, scale_dtype)).max(initial=0)) * 1.001 + f32


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scheme", ["per_tensor", "per_channel"])
@pytest.mark.parametrize("storage", STORAGE_TYPES["per_channel"])
def test_affine_round_trip(device: str, scheme: str, storage: str) -> None:
    rng = np.random.default_rng(len(storage) * 7 + len(scheme))
    x = rng.normal(size=(4, 9)) * 3
    for sym, axis in itertools.product((True, False), (0, 1, -1)):
        data = np.abs(x) if sym and storage.startswith("u") else x
        t = quantize(data, scheme, dtype=storage, axis=axis, symmetric=sym)
        assert t.dtype.name == storage and t.shape == x.shape
        err = np.abs(_deq(t, device) - data).max()
        assert err <= _affine_tol(t, data), (storage, sym, axis, err)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("storage", STORAGE_TYPES["per_block"])
@pytest.mark.parametrize("scale_dtype", ["float32", "float16", "bfloat16"])
def test_per_block_round_trip(device: str, storage: str, scale_dtype: str) -> None:
    rng = np.random.default_rng(len(storage) + len(scale_dtype))
    x = rng.normal(size=(3, 5, 40))
    for sym, shared, axis in itertools.product((True, False), (False, True), (0, 2)):
        if shared and sym:
            continue
        data = np.abs(x) if sym and storage.startswith("u") else x
        t = quantize(data, "per_block", dtype=storage, axis=axis, block_size=32 if axis else 2,
                     symmetric=sym, scale_dtype=scale_dtype, shared=shared)
        q = t.descriptor.quantization
        assert isinstance(q, PerBlockAffine) and (q.zero_point_buffer_index is None) == sym
        err = np.abs(_deq(t, device) - data).max()
        assert err <= _affine_tol(t, data, scale_dtype) * 1.01, (storage, sym, axis, err)


@pytest.mark.parametrize("device", DEVICES)
def test_nf4_round_trip(device: str) -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=(6, 100))
    t = quantize(x, "nf4", axis=1, block_size=64)
    assert isinstance(t.descriptor.quantization, NF4) and t.dtype.name == "uint4"
    absmax = np.abs(x).max()
    assert np.abs(_deq(t, device) - x).max() <= absmax * NF4_HALF_GAP
    blocks = np.abs(np.pad(x, ((0, 0), (0, 28)))).reshape(6, 2, 64).max(axis=2).reshape(-1)
    assert np.array_equal(_scales(t, 12), blocks.astype(np.float32).astype(np.float64))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("storage", STORAGE_TYPES["mxfp"])
def test_mxfp_round_trip(device: str, storage: str) -> None:
    rng = np.random.default_rng(len(storage))
    x = rng.normal(size=(64, 3)) * np.exp2(rng.integers(-20, 20, size=(1, 3)))
    t = quantize(x, "mxfp", dtype=storage, axis=0, block_size=32)
    assert isinstance(t.descriptor.quantization, MXFP)
    codes = np.frombuffer(_raw(t, 1), np.uint8)
    assert codes.size == 6 and codes.min() >= 1 and codes.max() <= 254
    amax = np.abs(x).reshape(2, 32, 3).max(axis=1).T.reshape(-1)
    got = _deq(t, device)
    err = np.abs(got - x).reshape(2, 32, 3).max(axis=1).T.reshape(-1)
    assert np.all(err <= amax * MX_REL[storage] + 1e-300), storage


def test_per_channel_layout_exact() -> None:
    x = np.array([[1.0, -2.0], [127.0, 0.5]])
    t = quantize(x, "per_channel", axis=1, dtype="int8")
    q = t.descriptor.quantization
    assert (q.axis, q.scale_buffer_index, q.zero_point_buffer_index) == (1, 1, None)
    assert _raw(t, 1) == np.array([1.0, 2 / 127], np.float32).tobytes()
    assert _codes(t) == [[1, -127], [127, 32]]


def test_per_block_parameter_order() -> None:
    # Block b = outer * nb + i_axis // K: make each block's absmax its own index + 1.
    x = np.zeros((2, 5))
    for r, j in itertools.product(range(2), range(5)):
        x[r, j] = 127.0 * (r * 3 + j // 2 + 1) * (1 if j % 2 == 0 else 0.5)
    t = quantize(x, "per_block", axis=1, block_size=2)
    assert np.array_equal(_scales(t, 6), np.arange(1, 7))
    t0 = quantize(x.T, "per_block", axis=0, block_size=2)
    assert np.array_equal(_scales(t0, 6), np.arange(1, 7))


def test_asymmetric_zero_point_convention() -> None:
    # x = scale * (q - zp): uint8 over [-1, 3] has scale 4/255 and zp = rint(255 / 4).
    x = np.array([-1.0, 0.0, 3.0])
    t = quantize(x, "per_tensor", dtype="uint8", symmetric=False)
    q = t.descriptor.quantization
    assert q.scale == np.float32(4 / 255) and q.zero_point == 64
    codes = np.array(_codes(t))
    assert codes.tolist() == [0, 64, 255]
    assert np.allclose(np.float32(q.scale) * (codes - 64), x, atol=float(q.scale))


def test_shared_buffer_layout_odd_f16() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 4))
    t = quantize(x, "per_block", axis=1, block_size=4, symmetric=False, scale_dtype="float16",
                 shared=True)
    q = t.descriptor.quantization
    assert q.scale_buffer_index == q.zero_point_buffer_index == 1
    assert len(t.descriptor.buffers) == 2
    raw = _raw(t, 1)
    assert len(raw) == 3 * 2 + 3 * 4
    zps = np.frombuffer(raw[6:], "<i4")
    split = quantize(x, "per_block", axis=1, block_size=4, symmetric=False,
                     scale_dtype="float16")
    assert raw[:6] == _raw(split, 1) and zps.tobytes() == _raw(split, 2)
    np.testing.assert_array_equal(_deq(t, "reference"), _deq(split, "reference"))


def test_gptq_biased_zero_points() -> None:
    rng = np.random.default_rng(2)
    scales = rng.uniform(0.01, 0.1, size=4).astype(np.float32)
    stored = np.array([7, 0, 14, 3])          # GPTQ writes zp - 1
    codes = rng.integers(0, 16, size=(4, 8))
    x = scales[:, None] * (codes - (stored[:, None] + 1))
    t = quantize(x, "per_block", axis=1, block_size=8, dtype="uint4", scales=scales,
                 zero_points=stored, zero_point_bias=1)
    assert np.frombuffer(_raw(t, 2), "<i4").tolist() == [8, 1, 15, 4]
    assert _codes(t) == codes.tolist()
    np.testing.assert_allclose(_deq(t, "cpu"), x, rtol=1e-6, atol=1e-7)
    with pytest.raises(HurrayFormatError, match="zero_point_bias"):
        quantize(x, "per_block", axis=1, block_size=8, dtype="uint4", scales=scales,
                 zero_points=[15, 0, 0, 0], zero_point_bias=1)


def test_partial_trailing_and_empty_axes() -> None:
    x = np.linspace(-3, 3, 3 * 40).reshape(3, 40)
    t = quantize(x, "per_block", axis=1, block_size=32, dtype="int4")
    assert len(_raw(t, 1)) == 3 * 2 * 4
    assert np.abs(_deq(t, "reference") - x).max() <= _affine_tol(t, x)
    for scheme in ("per_block", "nf4"):
        e = quantize(np.zeros((0, 4)), scheme, axis=0, block_size=8)
        assert e.shape == (0, 4) and _raw(e, 1) == b""
        assert _deq(e, "reference").shape == (0, 4)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 70), st.integers(1, 4), st.sampled_from(["int4", "uint2", "int8"]),
       st.booleans())
def test_property_round_trip(size: int, rows: int, storage: str, sym: bool) -> None:
    x = np.sin(np.arange(rows * size, dtype=np.float64) * 1.7).reshape(rows, size) * 5
    data = np.abs(x) if sym and storage.startswith("u") else x
    k = 2 if size < 16 else 16
    data = data if size > 1 else np.concatenate([data, data], axis=1)
    t = quantize(data, "per_block", axis=1, block_size=k, dtype=storage, symmetric=sym)
    assert np.abs(_deq(t, "reference") - data).max(initial=0) <= _affine_tol(t, data)


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"scheme": "per_row"}, UnsupportedOpError),
    ({"scheme": "per_block", "dtype": "int16"}, UnsupportedOpError),
    ({"scheme": "nf4", "dtype": "int4"}, UnsupportedOpError),
    ({"scheme": "per_channel", "scale_dtype": "float16"}, UnsupportedOpError),
    ({"scheme": "per_block", "block_size": 3}, HurrayFormatError),
    ({"scheme": "per_block", "block_size": 64}, HurrayFormatError),
    ({"scheme": "nf4", "block_size": 4}, HurrayFormatError),
    ({"scheme": "mxfp", "block_size": 8}, HurrayFormatError),
    ({"scheme": "mxfp", "block_size": 32, "axis": 1}, HurrayFormatError),
    ({"scheme": "per_channel", "axis": 2}, HurrayFormatError),
    ({"scheme": "per_channel", "scales": [1.0, 2.0]}, HurrayFormatError),
    ({"scheme": "per_channel", "axis": 0, "scales": [1.0] * 15 + [0.0]}, HurrayFormatError),
    ({"scheme": "per_channel", "zero_points": [0] * 16}, HurrayFormatError),
    ({"scheme": "per_channel", "shared": True}, HurrayFormatError),
    ({"scheme": "mxfp", "block_size": 16, "scales": [0] * 2}, HurrayFormatError),
])
def test_bad_arguments(kwargs: dict, error: type) -> None:
    x = np.ones((16, 33))
    with pytest.raises(error, match="Fix:"):
        quantize(x, **kwargs)


def test_non_finite_input() -> None:
    with pytest.raises(HurrayFormatError, match="Fix:"):
        quantize(np.array([1.0, np.nan]), "per_tensor")
    with pytest.raises(HurrayFormatError, match="overflows"):
        quantize(np.array([1e30, 1.0]), "per_block", axis=0, block_size=2,
                 scale_dtype="float16")
