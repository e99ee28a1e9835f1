"""The dequant oracle (device "reference") against hand-computed values from the spec formulas.

No compiler needed: the reference device runs each kernel's NumPy implementation.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.format.dtypes import by_name, value_table
from hurray_gpu.kernels.dequant import divmagic
from hurray_gpu.ops import dequantize, unpack
from hurray_gpu.ops.plan import NF4_BITS
from hurray_gpu.ops.quantize import quantized_tensor, random_quantized
from tests._support import stable_rng

NP_OUT = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
# The NF4 levels as decimals, from the Hurray spec (NF4 quantization), independent of the
# bit table.
NF4_DECIMALS = (-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
                0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                0.7229568362236023, 1.0)


def ref(t: object, dtype: str = "float32") -> np.ndarray:
    return dequantize(t, dtype, device="reference").to("cpu").numpy()


def bits_equal(got: np.ndarray, want: np.ndarray) -> bool:
    return got.shape == want.shape and np.array_equal(got.view(np.uint8), want.view(np.uint8))


# -- division magic --------------------------------------------------------------------------
def _magic_div(n: int, d: int) -> int:
    m, sh = divmagic(d)
    t = (n * m) >> 32
    return (t + ((n - t) >> (sh & 255))) >> (sh >> 8)


@pytest.mark.parametrize("d", [1, 2, 3, 5, 7, 31, 32, 33, 641, 1000, 65537, 2**31 - 1, 2**31,
                               2**31 + 1, 2**32 - 1])
def test_divmagic_edges(d: int) -> None:
    for n in (0, 1, d - 1, d, d + 1, 2**31, 2**32 - 2, 2**32 - 1):
        if 0 <= n < 2**32:
            assert _magic_div(n, d) == n // d


@given(st.integers(1, 2**32 - 1), st.integers(0, 2**32 - 1))
@settings(max_examples=300, deadline=None)
def test_divmagic_property(d: int, n: int) -> None:
    assert _magic_div(n, d) == n // d


def test_divmagic_rejects_zero() -> None:
    with pytest.raises(ValueError):
        divmagic(0)


# -- hand-computed values --------------------------------------------------------------------
def test_per_tensor_uint8_formula() -> None:
    t = quantized_tensor(np.array([0, 128, 255, 1], np.uint8), "uint8", "per_tensor",
                         scale=0.5, zero_point=128)
    assert ref(t).tolist() == [-64.0, 0.0, 63.5, -63.5]


def test_int32_subtraction_wraps() -> None:
    q = np.array([-(2**31), 2**31 - 1, 0], np.int32)
    t = quantized_tensor(q, "int32", "per_tensor", scale=1.0, zero_point=1)
    # -2^31 - 1 wraps to 2^31 - 1, which rounds to 2^31 in f32.
    assert ref(t).tolist() == [2147483648.0, 2147483648.0, -1.0]
    tu = quantized_tensor(np.array([2**32 - 1], np.uint32), "uint32", "per_tensor", scale=2.0)
    assert ref(tu).tolist() == [-2.0]  # 0xFFFFFFFF is -1 in i32


def test_rounding_to_16_bit_is_nearest_even() -> None:
    t = quantized_tensor(np.array([2049, 2051, 257, 259], np.int16), "int16", "per_tensor",
                         scale=1.0)
    assert ref(t, "float16").astype(np.float32).tolist() == [2048.0, 2052.0, 257.0, 259.0]
    assert ref(t, "bfloat16").astype(np.float32).tolist() == [2048.0, 2048.0, 256.0, 260.0]


def test_per_channel_axis0_and_axis1() -> None:
    q = np.array([[1, 2, 3], [4, 5, 6]], np.int8)
    t0 = quantized_tensor(q, "int8", "per_channel", axis=0,
                          scales=np.array([2.0, 0.5], np.float32),
                          zero_points=np.array([1, -1], np.int32))
    assert ref(t0).tolist() == [[0.0, 2.0, 4.0], [2.5, 3.0, 3.5]]
    t1 = quantized_tensor(q, "int8", "per_channel", axis=1,
                          scales=np.array([1.0, 2.0, 4.0], np.float32))
    assert ref(t1).tolist() == [[1.0, 4.0, 12.0], [4.0, 10.0, 24.0]]


def test_per_block_partial_trailing_block_shared_f16_odd() -> None:
    # shape (3, 5), axis 1, K = 4: nb = 2 per row, 6 blocks (even); use 1 row -> 2 blocks.
    q = np.array([[1, 2, 3, 4, 5], [-1, -2, -3, -4, -5], [7, 0, 0, 0, -8]], np.int8)
    scales = np.array([1, 2, 0.5, 4, 0.25, 8], np.float16)
    zps = np.array([0, 1, 0, -1, 1, 0], np.int32)
    t = quantized_tensor(q, "int4", "per_block", axis=1, block_size=4, scales=scales,
                         zero_points=zps, scale_type="float16", shared=True)
    want = [[1, 2, 3, 4, 8], [-0.5, -1, -1.5, -2, -16], [1.5, -0.25, -0.25, -0.25, -64]]
    assert ref(t).tolist() == want
    # Odd block count: 3 rows of 3 with K = 2 -> nb = 2, 6 blocks... use K=2, S=3, 1 row.
    t_odd = quantized_tensor(np.array([[3, -3, 1]], np.int8), "int4", "per_block", axis=1,
                             block_size=2, scales=np.array([2, 3], np.float16),
                             zero_points=np.array([1, -1], np.int32), scale_type="float16",
                             shared=True)
    assert ref(t_odd).tolist() == [[4.0, -8.0, 6.0]]


def test_per_block_shared_f16_zero_points_unaligned() -> None:
    # 3 blocks of f16 scales: the zero points start at byte 6 (2 mod 4).
    t = quantized_tensor(np.array([5, 5, 5, 5, 5, 5], np.uint8), "uint8", "per_block",
                         axis=0, block_size=2, scales=np.array([1, 2, 4], np.float16),
                         zero_points=np.array([1, 2, 3], np.int32), scale_type="float16",
                         shared=True)
    assert t.buffers[1].array.size == 3 * 2 + 3 * 4
    assert ref(t).tolist() == [4.0, 4.0, 6.0, 6.0, 8.0, 8.0]


def test_per_block_axis0_strided_scales() -> None:
    q = np.arange(12, dtype=np.uint8).reshape(4, 3)
    scales = np.array([1, 2, 3, 4, 5, 6], np.float32)  # b = col * 2 + row // 2
    t = quantized_tensor(q, "uint8", "per_block", axis=0, block_size=2, scales=scales)
    idx = np.indices((4, 3))
    want = scales[idx[1] * 2 + idx[0] // 2] * q
    assert bits_equal(ref(t), want.astype(np.float32))


def test_nf4_levels_are_the_spec_decimals() -> None:
    assert np.array(NF4_DECIMALS, np.float32).view(np.uint32).tolist() == list(NF4_BITS)
    t = quantized_tensor(np.arange(16, dtype=np.uint8).astype(ml_dtypes.uint4), "uint4",
                         "nf4", axis=0, block_size=8, scales=np.array([1.0, 2.0], np.float32))
    got = ref(t)
    want = np.array(NF4_DECIMALS, np.float32) * np.repeat(np.float32([1.0, 2.0]), 8)
    assert bits_equal(got, want.astype(np.float32))


def test_mx_float8_e4m3_values_from_the_table() -> None:
    codes = np.array([0x01, 0x08, 0x38, 0x3F, 0x7E, 0xB8, 0x7F] + [0] * 9, np.uint8)
    values = codes.view(ml_dtypes.float8_e4m3fn)
    t = quantized_tensor(values, "float8_e4m3", "mxfp", axis=0, block_size=16,
                         scales=np.array([128], np.uint8))  # 2^(128-127) = 2
    got = ref(t)
    assert got[:6].tolist() == [0.00390625, 0.03125, 2.0, 3.75, 896.0, -2.0]
    assert np.isnan(got[6])


def test_mx_float8_e5m2_inf_nan_and_overflow() -> None:
    codes = np.array([0x7C, 0xFC, 0x7D, 0x7B, 0x01] + [0] * 11, np.uint8)
    values = codes.view(ml_dtypes.float8_e5m2)
    t = quantized_tensor(values, "float8_e5m2", "mxfp", axis=0, block_size=16,
                         scales=np.array([254], np.uint8))
    got = ref(t)
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])
    assert got[3] == np.inf  # 57344 * 2^127 overflows f32
    assert got[4] == np.float32(2.0**-16 * 2.0**127)


@pytest.mark.parametrize(("storage", "listed"), [
    ("float4_e2m1", [0, .5, 1, 1.5, 2, 3, 4, 6]),
    ("float6_e2m3", [0, .125, .25, .375, .5, .625, .75, .875, 1, 1.125, 1.25, 1.375, 1.5,
                     1.625, 1.75, 1.875, 2, 2.25, 2.5, 2.75, 3, 3.25, 3.5, 3.75, 4, 4.5, 5,
                     5.5, 6, 6.5, 7, 7.5]),
    ("float6_e3m2", [0, .0625, .125, .1875, .25, .3125, .375, .4375, .5, .625, .75, .875, 1,
                     1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24,
                     28]),
])
def test_small_float_value_maps(storage: str, listed: list[float]) -> None:
    dtype = by_name(storage)
    everything = [float(v) for v in listed] + [-float(v) for v in listed]
    values = np.array(everything, np.float32).astype(dtype.numpy)
    got = unpack(quantized_tensor_free(values, storage), "float32", device="reference")
    got_np = got.to("cpu").numpy()
    assert got_np.tolist() == everything
    # -0 codes keep their sign.
    assert np.signbit(got_np[len(listed)])
    # And under MX with scale 2^-1 every value halves exactly.
    block = max(16, values.size)
    padded = np.concatenate([values, np.zeros(block - values.size, values.dtype)])
    tq = quantized_tensor(padded, storage, "mxfp", axis=0, block_size=block,
                          scales=np.array([126], np.uint8))
    assert ref(tq)[: values.size].tolist() == [v / 2 for v in got_np.tolist()]


def quantized_tensor_free(values: np.ndarray, storage: str) -> object:
    from hurray_gpu.tensor import Tensor

    return Tensor.from_numpy(values.astype(by_name(storage).numpy))


def test_unpack_integers_to_natural_width() -> None:
    from hurray_gpu.tensor import Tensor

    t = Tensor.from_numpy(np.array([-8, -1, 0, 7], np.int8).astype(ml_dtypes.int4))
    got = unpack(t, device="reference").to("cpu").numpy()
    assert got.dtype == np.int8 and got.tolist() == [-8, -1, 0, 7]
    tb = Tensor.from_numpy(np.array([True, False, True], bool))
    assert unpack(tb, device="reference").to("cpu").numpy().tolist() == [1, 0, 1]
    t2 = Tensor.from_numpy(np.array([-2, -1, 0, 1, 1], np.int8).astype(ml_dtypes.int2))
    assert unpack(t2, "bfloat16", device="reference").to("cpu").numpy().astype(
        np.float32).tolist() == [-2, -1, 0, 1, 1]


# -- the oracle against an independent formula over logical values ---------------------------
def _expected(t: object, values: np.ndarray, kw: dict, scheme: str) -> np.ndarray:
    shape = values.shape
    q = np.asarray(values).astype(np.float64)
    if scheme == "per_tensor":
        q = values.astype(np.int64)
        diff = ((q - kw["zero_point"]) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
        return np.float32(kw["scale"]) * diff.astype(np.float32)
    idx = np.indices(shape)
    axis = kw["axis"]
    if scheme == "per_channel":
        b = idx[axis]
    else:
        nb = math.ceil(shape[axis] / kw["block_size"])
        others = [d for d in range(len(shape)) if d != axis]
        outer = np.zeros(shape, np.int64)
        for d in others:
            outer = outer * shape[d] + idx[d]
        b = outer * nb + idx[axis] // kw["block_size"]
    scales = np.asarray(kw["scales"])
    if scheme == "mxfp":
        s = np.ldexp(np.float32(1), scales.astype(np.int32) - 127).astype(np.float32)[b]
        vals = value_table(by_name(kw["storage"]))[np.asarray(values).view(np.uint8)] \
            if by_name(kw["storage"]).bits == 8 and by_name(kw["storage"]).kind == "float" \
            else np.asarray(values).astype(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.where(np.isnan(vals), vals, s * vals)
    if scheme == "nf4":
        return scales.astype(np.float32)[b] * np.array(NF4_DECIMALS, np.float32)[
            np.asarray(values).astype(np.int64)]
    z = np.asarray(kw.get("zero_points", np.zeros(scales.size, np.int32)))[b]
    diff = (np.asarray(values).astype(np.int64) - z).astype(np.int32)
    return scales.astype(np.float32)[b] * diff.astype(np.float32)


CASES = [("per_tensor", "int16", (7, 3), {}), ("per_channel", "uint2", (2, 3, 5), {"axis": 2}),
         ("per_channel", "int4", (4, 3), {"axis": 0}),
         ("per_block", "int2", (3, 7, 2), {"axis": 1, "block_size": 4}),
         ("per_block", "uint4", (9,), {"axis": 0, "block_size": 4, "scale_type": "bfloat16"}),
         ("per_block", "int8", (2, 2, 3, 5), {"axis": 3, "block_size": 2,
                                              "scale_type": "float16", "shared": True}),
         ("nf4", "uint4", (3, 20), {"axis": 1, "block_size": 8}),
         ("mxfp", "int4", (2, 32), {"axis": 1, "block_size": 16}),
         ("mxfp", "float8_e5m2", (32, 3), {"axis": 0, "block_size": 16})]


@pytest.mark.parametrize(("scheme", "storage", "shape", "kw"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{len(c[2])}d" for c in CASES])
@pytest.mark.parametrize("out", ["float32", "float16", "bfloat16"])
def test_reference_matches_independent_formula(scheme: str, storage: str, shape: tuple,
                                               kw: dict, out: str) -> None:
    rng = stable_rng(scheme, storage, shape)
    t = random_quantized(rng, scheme, storage, shape, **kw)
    q = t.quantization
    values = _logical_values(t)
    params = _params(t, scheme, kw)
    params.update(axis=getattr(q, "axis", 0), block_size=getattr(q, "block_size", 1),
                  storage=storage)
    want = _expected(t, values, params, scheme).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        want_out = want.astype(NP_OUT[out])
    assert bits_equal(ref(t, out), want_out)


def _logical_values(t: object) -> np.ndarray:
    from hurray_gpu.format.packing import unpack as unpack_host

    desc = t.descriptor
    count = int(np.prod(desc.shape))
    return unpack_host(t.buffers[0], desc.dtype, count).reshape(desc.shape)


def _params(t: object, scheme: str, kw: dict) -> dict:
    q = t.quantization
    if scheme == "per_tensor":
        return {"scale": q.scale, "zero_point": q.zero_point}
    buf = np.asarray(t.buffers[1])
    size = t.shape[q.axis]
    count = size if scheme == "per_channel" else (
        math.ceil(size / q.block_size) * int(np.prod(t.shape)) // size)
    stype = {1: np.float16, 2: ml_dtypes.bfloat16, 3: np.float32}.get(
        getattr(q, "scale_type_tag", 3))
    if scheme == "mxfp":
        return {"scales": buf[:count]}
    width = np.dtype(stype).itemsize
    out = {"scales": buf[: count * width].view(stype)}
    zidx = getattr(q, "zero_point_buffer_index", None)
    if zidx is not None:
        raw = buf[count * width:] if zidx == q.scale_buffer_index else np.asarray(t.buffers[2])
        out["zero_points"] = np.frombuffer(raw.tobytes()[: 4 * count], np.int32)
    return out
