"""The correctly rounded f32 functions (CR_* of hurray_gpu/dialect/crmath.py) on every device:
the same bits as the mpmath oracle, on edge cases (zeros, subnormals, inf, NaN, overflow and
underflow thresholds), every listed exception (the inputs nearest a rounding boundary) and a
seeded random sample. The exhaustive check over all 2^32 inputs is ci/crmath_exhaustive.py."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from hurray_gpu.dialect import KernelDef, buf, scalar
from hurray_gpu.dialect.crmath import CR_FUNCS
from hurray_gpu.dialect.crmath_tables import TABLES
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from tests._crmath import EDGES, exact_all, functions_for, is_nan, sample_inputs

X = sample_inputs()
N = X.size
WANT = {name: exact_all(name, X) for name in CR_FUNCS}
@functools.cache
def kernel(names: tuple[str, ...]) -> KernelDef:
    """One kernel computing each named CR_* function of src (one row of dst each)."""
    return KernelDef(
        "crmath_all" if names == tuple(CR_FUNCS) else "crmath_" + "_".join(names).lower(),
        (buf("src", "f32"), buf("dst", "f32", "w"), scalar("n")),
        "u32 i = GLOBAL_ID(0);\nif (i >= n) return;\nf32 x = LOAD(src, i);\n" + "\n".join(
            f"STORE(dst, i + {k}u * n, CR_{name}(x));" for k, name in enumerate(names)),
        grid=lambda s: (s["n"],), extents=lambda s: {"src": s["n"], "dst": s["n"] * len(names)},
        reference=lambda a: None, doc="CR_* functions of src (one row of dst each).")


def run_all(device: Device, x: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """The named CR_* functions of ``x`` on ``device``: one row per function."""
    dst = Buffer(device, x.size * 4 * len(names))
    device.run(kernel(names), dst=dst, src=Buffer.from_bytes(device, x.tobytes()), n=x.size)
    return np.frombuffer(bytes(dst.copyout()), np.uint32).reshape(len(names), x.size)


def test_sample_holds_every_exception_and_edge() -> None:
    assert set(EDGES) <= set(X.tolist())
    assert all(u in X for table in TABLES.values() for u in table)


def test_crmath_is_correctly_rounded_on_every_device(kernel_device: Device) -> None:
    if not kernel_device.f64_kernels:  # webgpu has: WGSL on the exact f64 emulation
        pytest.skip(f"{kernel_device.spec} has no f64 arithmetic")
    names = functions_for(kernel_device)
    got = run_all(kernel_device, X, names)
    bad = {}
    for row, name in zip(got, names, strict=True):
        want = WANT[name]
        wrong = np.flatnonzero((row != want) & ~(is_nan(row) & is_nan(want)))
        if wrong.size:
            bad[name] = [(hex(X[i]), hex(row[i]), hex(want[i])) for i in wrong[:4]]
    assert not bad, f"{kernel_device.spec}: (input, got, correctly rounded): {bad}"
