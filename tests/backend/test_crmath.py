"""The correctly rounded f32 functions (CR_* of hurray_gpu/dialect/crmath.py) on every device:
the same bits as the mpmath oracle, on edge cases (zeros, subnormals, inf, NaN, overflow and
underflow thresholds), every listed exception (the inputs nearest a rounding boundary) and a
seeded random sample. The exhaustive check over all 2^32 inputs is ci/crmath_exhaustive.py."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.dialect import KernelDef, buf, scalar
from hurray_gpu.dialect.crmath import CR_FUNCS
from hurray_gpu.dialect.crmath_tables import TABLES
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from tests._crmath import EDGES, exact_all, is_nan, sample_inputs

X = sample_inputs()
N = X.size
WANT = {name: exact_all(name, X) for name in CR_FUNCS}
KERNEL = KernelDef(
    "crmath_all", (buf("src", "f32"), buf("dst", "f32", "w"), scalar("n")),
    "u32 i = GLOBAL_ID(0);\nif (i >= n) return;\nf32 x = LOAD(src, i);\n" + "\n".join(
        f"STORE(dst, i + {k}u * n, CR_{name}(x));" for k, name in enumerate(CR_FUNCS)),
    grid=lambda s: (s["n"],), extents=lambda s: {"src": s["n"], "dst": s["n"] * len(CR_FUNCS)},
    reference=lambda a: None, doc="Every CR_* function of src (one row of dst each).")


def run_all(device: Device, x: np.ndarray) -> np.ndarray:
    """Every CR_* function of ``x`` on ``device``: one row per function."""
    dst = Buffer(device, x.size * 4 * len(CR_FUNCS))
    device.run(KERNEL, dst=dst, src=Buffer.from_bytes(device, x.tobytes()), n=x.size)
    return np.frombuffer(bytes(dst.copyout()), np.uint32).reshape(len(CR_FUNCS), x.size)


def test_sample_holds_every_exception_and_edge() -> None:
    assert set(EDGES) <= set(X.tolist())
    assert all(u in X for table in TABLES.values() for u in table)


def test_crmath_is_correctly_rounded_on_every_device(kernel_device: Device) -> None:
    if not kernel_device.f64_kernels:  # webgpu too: WGSL on the exact f64 emulation
        pytest.skip(f"{kernel_device.spec} has no f64 arithmetic")
    got = run_all(kernel_device, X)
    bad = {}
    for row, name in zip(got, CR_FUNCS, strict=True):
        want = WANT[name]
        wrong = np.flatnonzero((row != want) & ~(is_nan(row) & is_nan(want)))
        if wrong.size:
            bad[name] = [(hex(X[i]), hex(row[i]), hex(want[i])) for i in wrong[:4]]
    assert not bad, f"{kernel_device.spec}: (input, got, correctly rounded): {bad}"
