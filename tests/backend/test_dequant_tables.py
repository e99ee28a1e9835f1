"""Long runs of 4-bit dequantization, bit-exact against the NumPy oracle.

Runs of >= ``TABLE_RUN`` 4-bit elements go eight at a time through SCALE8 (a 16-entry T
built by the element body where it is not the lookup table); these cases start runs at odd
elements, end them mid-byte, split them across work items and mix them with the short-run
loop, on every backend.
"""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.dialect.render import lint_body
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.kernels.dequant import TABLE_RUN
from hurray_gpu.ops import dequantize, unpack
from hurray_gpu.ops.plan import bind_inputs, launch, plan_dequantize
from hurray_gpu.ops.quantize import random_quantized, random_values
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.registry import resolve_device
from hurray_gpu.tensor import Tensor
from tests._support import stable_rng as _rng

OUTS = ("float32", "float16", "bfloat16")


def _bits(t: Tensor) -> np.ndarray:
    return np.asarray(t.to("cpu").buffers[0]).copy()


def _check(t: Tensor, dev: Device, outs: tuple[str, ...] = OUTS) -> None:
    for out in outs:
        want = _bits(dequantize(t, out, device="reference"))
        got = _bits(dequantize(t, out, device=dev))
        assert np.array_equal(got, want), f"{t} -> {out} differs on {dev}"


@pytest.mark.parametrize("block", [32, 64, 128])
def test_nf4_odd_rows(kernel_device: Device, block: int) -> None:
    # Rows of 197 codes: every other row starts at an odd element, mid-byte.
    t = random_quantized(_rng("nf4t", block), "nf4", "uint4", (5, 197), axis=1,
                         block_size=block)
    _check(t, kernel_device)


def test_mxfp4_rows_and_columns(kernel_device: Device) -> None:
    # MX axes hold whole blocks: long runs along rows, one-element runs down columns.
    for axis, shape in ((1, (4, 160)), (0, (64, 5))):
        t = random_quantized(_rng("mx4t", axis), "mxfp", "float4_e2m1", shape, axis=axis,
                             block_size=32)
        _check(t, kernel_device)


@pytest.mark.parametrize("storage", ["int4", "uint4"])
@pytest.mark.parametrize("stype", ["float16", "bfloat16", "float32"])
def test_per_block_int4_odd_rows(kernel_device: Device, storage: str, stype: str) -> None:
    for sym in (True, False):
        t = random_quantized(_rng("q4t", storage, stype, sym), "per_block", storage, (3, 131),
                             axis=1, block_size=32, symmetric=sym, scale_type=stype)
        _check(t, kernel_device, OUTS if stype == "float16" else ("float32",))


@pytest.mark.parametrize("storage", ["int4", "uint4"])
def test_per_tensor_int4_whole_items(kernel_device: Device, storage: str) -> None:
    # Per-tensor parameters: one run per work item, a table per item.
    for sym in (True, False):
        t = random_quantized(_rng("pt4", storage, sym), "per_tensor", storage, (7, 333),
                             symmetric=sym)
        _check(t, kernel_device)


def test_unpack_float4_table(kernel_device: Device) -> None:
    values = random_values(_rng("fp4u"), "float4_e2m1", (3, 1001))
    t = Tensor.from_numpy(values)
    for out in ("float32", "bfloat16"):
        want = _bits(unpack(t, out, device="reference"))
        assert np.array_equal(_bits(unpack(t, out, device=kernel_device)), want)


@pytest.mark.parametrize("ept", [TABLE_RUN, TABLE_RUN + 1, 97, 1024])
def test_items_split_runs(kernel_device: Device, ept: int) -> None:
    """Work items that start mid-block at odd elements, so runs straddle the threshold (and
    6-bit runs start off their groups)."""
    from hurray_gpu.ops.plan import bind_inputs, launch, plan_dequantize

    cases = [random_quantized(_rng("sp", 1), "nf4", "uint4", (3, 200), axis=1, block_size=64),
             random_quantized(_rng("sp", 2), "per_block", "int4", (4, 99), axis=1,
                              block_size=32, scale_type="float16"),
             random_quantized(_rng("sp", 3), "mxfp", "float4_e2m1", (2, 256), axis=1,
                              block_size=32),
             # 6-bit groups: items starting at every residue mod 4 take the single elements
             random_quantized(_rng("sp", 4), "mxfp", "float6_e3m2", (2, 256), axis=1,
                              block_size=32)]
    for t in cases:
        for out, width in (("float32", 4), ("bfloat16", 2)):
            want = _bits(dequantize(t, out, device="reference"))
            dev_t = t.to(kernel_device)
            plan = plan_dequantize(dev_t.descriptor, out, ept=ept)
            bufs = list(dev_t.buffers)
            if not isinstance(bufs[0], Buffer):
                bufs = [Buffer.from_bytes(kernel_device, np.ascontiguousarray(b)) for b in bufs]
            got = Buffer(kernel_device, width * plan.count)
            launch(plan, kernel_device, bind_inputs(plan, kernel_device, bufs), got)
            assert np.array_equal(got.numpy(), want), f"{t} -> {out} with ept={ept}"


def test_private_arrays_are_checked() -> None:
    def kernel(body: str, private: tuple = (("tab", "u32", 16),)) -> KernelDef:
        return KernelDef(name="k", params=(), body=body, grid=lambda s: (1,),
                         extents=lambda s: {}, reference=lambda a: None, private=private)

    lint_body(kernel("STORE(tab, 0u, 1u); u32 x = LOAD(tab, 0u);"))
    with pytest.raises(Exception, match="private array"):
        lint_body(kernel("u32 x = ATOMIC_ADD(tab, 0u, 1u);"))
    for bad in ((("tab", "u16", 16),), (("tab", "u32", 0),), (("shared", "u32", 4),)):
        with pytest.raises(ValueError, match="private array"):
            kernel("", bad)


# (scheme, storage, output): NF4, Q8_0-style int8 with f16 scales per 32 and float8 unpacking
# (mode 0, no scales), each output kind at least once.
_BIG = [("nf4", "uint4", "float32"), ("nf4", "uint4", "bfloat16"),
        ("per_block", "int8", "float32"), ("per_block", "int8", "float16"),
        ("unpack", "float8_e4m3", "float32"), ("unpack", "float8_e5m2", "bfloat16"),
        ("unpack", "float8_e4m3", "float16"), ("unpack", "float8_e5m2", "float16")]


@pytest.mark.parametrize("scheme,storage,out", _BIG)
def test_outputs_past_the_last_level_cache(scheme: str, storage: str, out: str) -> None:
    # Outputs larger than the host's cache bypass it (non-temporal stores where a lookup's
    # destination is aligned, plain ones where a row starts mid-vector).
    from hurray_gpu.backends.cpu import _stream_bytes

    cols = 4097  # odd rows: half the rows start mid-byte and off the vector alignment
    rows = _stream_bytes() // 2 // cols + 8
    rng = _rng("big", scheme, storage, out)
    if scheme == "unpack":
        t = Tensor.from_numpy(random_values(rng, storage, (rows, cols)))
        want = _bits(unpack(t, out, device="reference"))
    else:
        t = random_quantized(rng, scheme, storage, (rows, cols), axis=1,
                             block_size=64 if scheme == "nf4" else 32, scale_type="float16",
                             symmetric=True)  # Q8_0: no zero points
        want = _bits(dequantize(t, out, device="reference"))
    assert want.nbytes > _stream_bytes()
    dev = resolve_device("cpu")
    dev_t = t.to(dev)
    bufs = [b if isinstance(b, Buffer) else Buffer.from_bytes(dev, np.ascontiguousarray(b))
            for b in dev_t.buffers]
    # ept 1021: work items (and with them single-item runs) start at every residue mod 8.
    for ept in (1024, 1021):
        plan = plan_dequantize(dev_t.descriptor, out, ept=ept)
        got = Buffer(dev, want.nbytes)
        launch(plan, dev, bind_inputs(plan, dev, bufs), got)
        assert np.array_equal(got.numpy(want.dtype), want), f"{t} -> {out} with ept={ept}"


def test_float8_e5m2_unpacks_to_the_float16_high_byte(kernel_device: Device) -> None:
    # float8_e5m2 has binary16's exponent width and bias: every code but the NaNs is the
    # float16 whose high byte it is (subnormals, infinities and -0 included); the NaN codes
    # become the quiet NaN of their sign, as the table decodes them. Rows of 1000 every-code
    # elements run long (host C: 16 codes per vector), two start mid-vector (offset 500).
    codes = np.resize(_rng("e5m2 high byte").permutation(256).astype(np.uint8), (5, 1000))
    t = Tensor.from_numpy(codes.view(by_name("float8_e5m2").numpy))
    wide = codes.astype(np.uint16)
    want = np.where((codes & 0x7F) > 0x7C, (wide & 0x80) << 8 | 0x7E00, wide << 8)
    got = _bits(unpack(t, "float16", device=kernel_device)).view(np.uint16).reshape(codes.shape)
    assert np.array_equal(got, want), np.argwhere(got != want)[:8]
    assert np.array_equal(got.view(np.uint8).ravel(), _bits(unpack(t, "float16", device="reference")))


@pytest.mark.parametrize("storage", ["float6_e2m3", "float6_e3m2"])
def test_six_bit_groups(kernel_device: Device, storage: str) -> None:
    # 6-bit codes go four at a time from three bytes: rows of 197 start and end off the
    # groups, so single elements before and after them (reading a second byte only when an
    # element straddles it) are checked too, unscaled and MX-scaled.
    values = random_values(_rng("fp6u", storage), storage, (5, 197))
    t = Tensor.from_numpy(values)
    for out in OUTS:
        want = _bits(unpack(t, out, device="reference"))
        assert np.array_equal(_bits(unpack(t, out, device=kernel_device)), want)
    mx = random_quantized(_rng("mx6", storage), "mxfp", storage, (3, 224), axis=1,
                          block_size=32)
    _check(mx, kernel_device)
