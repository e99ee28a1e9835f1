"""Every registered kernel on every compiling device equals its NumPy reference (bit-exact
unless noted). The reference device is not among them: it runs those references."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from hurray_gpu.dialect.kernel import KernelDef, numpy_dtype
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels import get_kernel, kernel_names, run_reference
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from tests._support import stable_rng

N = 1003  # not a multiple of any work-group size: exercises the bounds guard
SLACK = 13  # extra elements after n that must stay untouched


def _special_f32() -> np.ndarray:
    f16 = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    edges = np.array([65504, 65519.996, 65520, 2.0**-24, 2.0**-25, 2.0**-25 * 1.0001,
                      3 * 2.0**-26, 2.0**-14, 1 + 2.0**-11, 1 + 3 * 2.0**-11, np.inf, -np.inf,
                      np.nan, -0.0, 1.0e-45, 3.4e38, 1 + 2.0**-8, 1 + 3 * 2.0**-8], np.float32)
    return np.concatenate([edges, f16])


def _input(dtype: str, count: int, rng: np.random.Generator) -> np.ndarray:
    dt = numpy_dtype(dtype)
    if dtype == "f32":
        scale = np.exp2(rng.integers(-30, 20, count)).astype(np.float32)
        values = (rng.standard_normal(count).astype(np.float32) * scale)
        special = _special_f32()
        take = min(count, special.size)
        values[:take] = rng.permutation(special)[:take]
        return values
    if dtype == "bf16":
        bits = rng.integers(0, 1 << 16, count, dtype=np.uint16)
        return bits.view(ml_dtypes.bfloat16)
    bits = rng.integers(0, 256, count * dt.itemsize, dtype=np.uint8)
    return bits.view(dt)


GENERIC_SCALARS = ("n", "rows", "cols", "value", "a")


def _generic(name: str) -> bool:
    # Kernels with structured launch scalars (dequant, layout, paging) have their own tests.
    return all(p.name in GENERIC_SCALARS for p in get_kernel(name).scalars)


def _scalars(kernel: KernelDef, n: int, rng: np.random.Generator) -> dict[str, Any]:
    values: dict[str, Any] = {"n": n, "rows": 37, "cols": 29}
    values["value"] = int(rng.integers(0, 2**32))
    values["a"] = float(np.float32(rng.standard_normal()))
    return {p.name: values[p.name] for p in kernel.scalars}


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


def _check_axpy(device: Device, host: dict[str, bytes], scalars: dict[str, Any],
                got: np.ndarray, want: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        nan = np.isnan(want.astype(np.float64))
        assert np.array_equal(np.isnan(got.astype(np.float64)), nan), "NaN positions differ"
        ulp = _ulps(got[~nan], want[~nan])
        if device.dialect in ("glsl", "wgsl"):
            # Vulkan does not require OpFma to be fused (lavapipe rounds twice), nor does
            # WGSL's fma (its accuracy is a*x+y's): accept a*x+y.
            n = scalars["n"]
            unfused = np.frombuffer(host["y"], np.float32).copy()
            unfused[:n] = (np.float32(scalars["a"]) * np.frombuffer(host["x"], np.float32)[:n]
                           + unfused[:n])
            ulp = np.minimum(ulp, _ulps(got[~nan], unfused[~nan]))
    assert ulp.max(initial=0) <= 1, f"axpy_f32: {ulp.max()} ulp"


def _compare(kernel: KernelDef, name: str, dtype: str, got: bytes, want: bytes) -> None:
    dt = numpy_dtype(dtype)
    g, w = np.frombuffer(got, dt), np.frombuffer(want, dt)
    if dt.kind == "f" or dtype == "bf16":
        with np.errstate(invalid="ignore"):
            gf, wf = g.astype(np.float64), w.astype(np.float64)
        nan = np.isnan(wf)
        assert np.array_equal(np.isnan(gf), nan), f"{name}: NaN positions differ"
        g, w = g[~nan], w[~nan]
    bad = np.flatnonzero(g.view(np.uint8) != w.view(np.uint8))
    assert bad.size == 0, f"{name}: {bad.size} bytes differ, first at byte {bad[:5]}"


@pytest.mark.parametrize("name", [k for k in kernel_names() if _generic(k)])
def test_kernel_matches_reference(kernel_device: Device, name: str) -> None:
    kernel = get_kernel(name)
    rng = stable_rng(name)
    n = 65536 + 40 if "f16" in name or "bf16" in name else N
    scalars = _scalars(kernel, n, rng)
    extents = kernel.extents(scalars)
    host = {p.name: _input(p.dtype, int(extents[p.name]) + SLACK, rng).tobytes()
            for p in kernel.buffers}
    bufs = {k: Buffer.from_bytes(kernel_device, v) for k, v in host.items()}
    kernel_device.run(kernel, **bufs, **scalars)
    kernel_device.synchronize()
    want = run_reference(kernel, host, scalars)
    if name == "axpy_f32":
        got = np.frombuffer(bytes(bufs["y"].copyout()), np.float32)
        _check_axpy(kernel_device, host, scalars, got, np.frombuffer(bytes(want["y"]), np.float32))
        return
    for p in kernel.buffers:
        _compare(kernel, p.name, p.dtype, bytes(bufs[p.name].copyout()), bytes(want[p.name]))


def test_kernel_on_views(device: Device) -> None:
    base = Buffer(device, 8192)
    base.copyin(bytes(8192))
    view = base.view(4096, 4096)
    device.run("fill_u32", view, 0xDEADBEEF, 1024)
    out = base.numpy(np.uint32)
    assert (out[:1024] == 0).all() and (out[1024:] == 0xDEADBEEF).all()


def test_explicit_global_size_and_timing(device: Device) -> None:
    if device.kind == "reference":
        with pytest.raises(UnsupportedOpError, match="whole grid"):
            device.run("fill_u32", Buffer(device, 400), 5, 100, global_size=(50,))
        return
    buf = Buffer(device, 400)
    buf.copyin(bytes(400))
    seconds = device.run("fill_u32", buf, 5, 100, global_size=(64,), wait=True)
    assert seconds is not None and seconds >= 0
    out = buf.numpy(np.uint32)
    assert (out[:64] == 5).all() and (out[64:] == 0).all()
