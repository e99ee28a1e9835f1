"""Dequantization and unpacking on every backend, bit-exact against the NumPy oracle.

Every scheme x storage type x output dtype, symmetric/asymmetric, every axis of rank 1-4,
partial trailing blocks and shared ``[scales | zero_points]`` buffers.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.ops import dequantize, unpack
from hurray_gpu.ops.quantize import random_quantized, random_values
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.tensor import Tensor
from tests._support import stable_rng as _rng
from tests._support import trusted_tensor

OUTS = ("float32", "float16", "bfloat16")
AFFINE = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int4", "uint4", "int2",
          "uint2")
BLOCK = ("int8", "uint8", "int4", "uint4", "int2", "uint2")
MX = ("float8_e4m3", "float8_e5m2", "float6_e2m3", "float6_e3m2", "float4_e2m1", "int8",
      "int4")
SMALL = ("bool", "int4", "uint4", "int2", "uint2", "int8", "uint8", "float4_e2m1",
         "float6_e2m3", "float6_e3m2", "float8_e4m3", "float8_e5m2", "float8_e8m0")


def _bits(t: Tensor) -> np.ndarray:
    return np.asarray(t.to("cpu").buffers[0]).copy()


def check(t: Tensor, dev: Device, outs: tuple[str, ...] = OUTS) -> None:
    for out in outs:
        want = dequantize(t, out, device="reference")
        got = dequantize(t, out, device=dev)
        assert got.device is dev and got.dtype.name == out and got.shape == t.shape
        assert np.array_equal(_bits(got), _bits(want)), f"{t} -> {out} differs on {dev}"


@pytest.mark.parametrize("storage", AFFINE)
def test_per_tensor(kernel_device: Device, storage: str) -> None:
    for sym in (True, False):
        t = random_quantized(_rng("pt", storage, sym), "per_tensor", storage, (5, 13),
                             symmetric=sym)
        check(t, kernel_device)


@pytest.mark.parametrize("storage", AFFINE)
def test_per_channel_every_axis(kernel_device: Device, storage: str) -> None:
    shape = (3, 5, 7)
    for axis, sym in itertools.product(range(3), (True, False)):
        t = random_quantized(_rng("pc", storage, axis, sym), "per_channel", storage, shape,
                             axis=axis, symmetric=sym, shared=axis == 1)
        check(t, kernel_device, OUTS if axis == 2 else ("float32",))


@pytest.mark.parametrize(("storage", "stype"), list(itertools.product(BLOCK, OUTS)))
def test_per_block_partial_blocks(kernel_device: Device, storage: str, stype: str) -> None:
    # S = 7 with K = 4 (and K = 2 on axis 0): every axis has a partial trailing block.
    variants = [(2, 4, False, False), (1, 2, True, False), (0, 2, False, True)]
    for axis, block, sym, shared in variants:
        t = random_quantized(_rng("pb", storage, stype, axis), "per_block", storage,
                             (7, 3, 7), axis=axis, block_size=block, symmetric=sym,
                             scale_type=stype, shared=shared)
        check(t, kernel_device, OUTS if axis == 2 else ("float32",))


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_every_axis_of_rank(kernel_device: Device, rank: int) -> None:
    shape = (5, 3, 6, 2)[:rank]
    for axis in range(rank):
        size = shape[axis]
        if size >= 2:
            t = random_quantized(_rng("rk", rank, axis), "per_block", "int4", shape,
                                 axis=axis, block_size=2, scale_type="float16", shared=True)
            check(t, kernel_device, ("float32",))
        t = random_quantized(_rng("rc", rank, axis), "per_channel", "uint2", shape,
                             axis=axis)
        check(t, kernel_device, ("bfloat16",))
        nf = (9, 3, 16, 2)[:rank]
        if nf[axis] >= 8:
            t = random_quantized(_rng("nf", rank, axis), "nf4", "uint4", nf, axis=axis,
                                 block_size=8)
            check(t, kernel_device, ("float16",))


def test_shared_buffer_odd_count_f16(kernel_device: Device) -> None:
    # 15 rows x 3 blocks = 45 f16 scales: the zero points start at byte 90 (2 mod 4).
    t = random_quantized(_rng("odd"), "per_block", "uint8", (3, 5, 5), axis=2, block_size=2,
                         scale_type="float16", shared=True)
    assert t.buffers[1].array.size == 45 * 2 + 45 * 4
    check(t, kernel_device)


@pytest.mark.parametrize("block", [8, 64])
def test_nf4(kernel_device: Device, block: int) -> None:
    t = random_quantized(_rng("nf4", block), "nf4", "uint4", (3, 100), axis=1,
                         block_size=block)
    check(t, kernel_device)


@pytest.mark.parametrize("storage", MX)
def test_mxfp(kernel_device: Device, storage: str) -> None:
    for axis, block in ((1, 16), (0, 32)):
        shape = (64, 48) if axis == 0 else (3, 48)
        t = random_quantized(_rng("mx", storage, axis), "mxfp", storage, shape, axis=axis,
                             block_size=block)
        check(t, kernel_device, OUTS if axis == 1 else ("float32",))


def test_mxfp_largest_block(kernel_device: Device) -> None:
    t = random_quantized(_rng("mx2048"), "mxfp", "float4_e2m1", (2, 4096), axis=1,
                         block_size=2048)
    check(t, kernel_device, ("float32",))


@pytest.mark.parametrize("scheme", ["per_block", "nf4", "mxfp", "per_channel"])
def test_medium_shapes(kernel_device: Device, scheme: str) -> None:
    storage = {"per_block": "int4", "nf4": "uint4", "mxfp": "float8_e4m3",
               "per_channel": "int8"}[scheme]
    t = random_quantized(_rng("med", scheme), scheme, storage, (96, 640), axis=1,
                         block_size=32)
    check(t, kernel_device, ("float32", "bfloat16"))


@pytest.mark.parametrize("storage", SMALL)
def test_unpack(kernel_device: Device, storage: str) -> None:
    values = random_values(_rng("up", storage), storage, (3, 37))
    t = Tensor.from_numpy(values)
    outs = [None, "float32", "float16", "bfloat16"]
    for out in outs:
        want = unpack(t, out, device="reference")
        got = unpack(t, out, device=kernel_device)
        assert got.dtype == want.dtype
        assert np.array_equal(_bits(got), _bits(want)), f"{storage} -> {out}"


@pytest.mark.parametrize("e8", [0x00, 0xFF])
def test_mx_reserved_scales_rejected_on_device(kernel_device: Device, e8: int) -> None:
    t = random_quantized(_rng("bad"), "mxfp", "float8_e5m2", (2, 64), axis=1, block_size=32)
    scales = np.array(t.buffers[1])
    scales[3] = e8
    hostile = trusted_tensor(t.descriptor, [t.buffers[0], scales])
    with pytest.raises(HurrayFormatError, match=f"MX scale byte 3 is 0x{e8:02X}"):
        dequantize(hostile, device=kernel_device)


def test_invalid_affine_parameters_rejected_on_device(kernel_device: Device) -> None:
    t = random_quantized(_rng("zp"), "per_channel", "int2", (4, 3), axis=0)
    zps = np.frombuffer(np.array([0, 1, 2, -2], np.int32).tobytes(), np.uint8)
    hostile = trusted_tensor(t.descriptor, [t.buffers[0], t.buffers[1], zps])
    with pytest.raises(HurrayFormatError, match="zero point entry 2 = 2"):
        dequantize(hostile, device=kernel_device)


@pytest.mark.parametrize("ept", [1, 3, 8, 64])
def test_elements_per_item_variants(kernel_device: Device, ept: int) -> None:
    """Work items starting mid-row and mid-block (the short runs real GPUs use)."""
    from hurray_gpu.ops.plan import bind_inputs, launch, plan_dequantize

    cases = [random_quantized(_rng("ept", 1), "per_block", "int4", (5, 3, 7), axis=2,
                              block_size=4, shared=True, scale_type="bfloat16"),
             random_quantized(_rng("ept", 2), "per_block", "uint2", (7, 3, 5), axis=0,
                              block_size=2),
             random_quantized(_rng("ept", 3), "nf4", "uint4", (3, 40), axis=1, block_size=8),
             random_quantized(_rng("ept", 4), "mxfp", "float6_e3m2", (32, 3), axis=0,
                              block_size=16)]
    for t in cases:
        want = _bits(dequantize(t, "float16", device="reference"))
        dev_t = t.to(kernel_device)
        plan = plan_dequantize(dev_t.descriptor, "float16", ept=ept)
        bufs = list(dev_t.buffers)
        if not isinstance(bufs[0], Buffer):
            bufs = [Buffer.from_bytes(kernel_device, np.ascontiguousarray(b)) for b in bufs]
        out = Buffer(kernel_device, 2 * plan.count)
        launch(plan, kernel_device, bind_inputs(plan, kernel_device, bufs), out)
        assert np.array_equal(out.numpy(), want), f"{t} with ept={ept}"


def test_subnormal_scales_and_results_are_not_flushed(kernel_device: Device) -> None:
    from hurray_gpu.ops.quantize import quantized_tensor

    tiny = np.array([2.0**-149, 1e-40, 3e-39, 1.1754942e-38], np.float32)
    t = quantized_tensor(np.arange(-8, 8, dtype=np.int8).reshape(4, 4), "int8", "per_channel",
                         axis=0, scales=tiny, zero_points=np.array([0, 1, -1, 2], np.int32))
    got = dequantize(t, "float32", device=kernel_device).to("cpu").numpy()
    assert np.count_nonzero(got) > 8 and np.abs(got).min(initial=1) < 1e-38
    check(t, kernel_device)
    nf = quantized_tensor(np.arange(16, dtype=np.uint8).astype(ml_dtypes.uint4), "uint4", "nf4",
                          block_size=8, scales=np.array([1e-39, 2.0**-140], np.float32))
    check(nf, kernel_device)
    pt = quantized_tensor(np.array([1, -3, 127], np.int8), "int8", "per_tensor",
                          scale=float(np.float32(2.0**-149)))
    check(pt, kernel_device)
