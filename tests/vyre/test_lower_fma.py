"""Fma rounds once on every device, Vulkan included (GLSL: exact integer emulation): random,
cancelling, tie, overflow, subnormal-boundary and special operands against the reference."""

from __future__ import annotations

import numpy as np
import pytest

from tests.vyre.lower_programs import F32_EDGES, kernel_devices
from vyre import builder as b
from vyre import reference
from vyre.execute import run_bytes
from vyre.ir import Scalar

N = 4096
DEVICES = kernel_devices()


def _program() -> object:
    i = b.var("i")
    return b.program([b.read("a", 0, Scalar.F32, N), b.read("b", 1, Scalar.F32, N),
                      b.read("c", 2, Scalar.F32, N), b.output("out", 3, Scalar.F32, N)],
                     [b.let("i", b.invocation_id(0)), b.store("out", i, b.fma(
                         b.load("a", i), b.load("b", i), b.load("c", i)))],
                     workgroup_size=(64, 1, 1))


def _operands() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    k = N // 8
    f32 = np.float32

    def bits(x: np.ndarray) -> np.ndarray:
        return np.asarray(x, np.float32).view(np.uint32)

    raw = [rng.integers(0, 2**32, k, dtype=np.uint64).astype(np.uint32) for _ in range(3)]
    a1 = f32(rng.uniform(-4, 4, k))
    b1 = f32(rng.uniform(-4, 4, k))
    prod = (a1.astype(np.float64) * b1.astype(np.float64)).astype(np.float32)
    ulp = np.spacing(np.abs(prod)).astype(np.float32)
    c1 = -prod + ulp * f32(rng.integers(-2, 3, k))  # cancellation: the rounding error shows
    t = f32(1.0) + f32(2.0**-12) * f32(rng.integers(1, 64, k))  # (1+x)^2: ties and near ties
    c2 = f32(rng.choice([0.0, -1.0, 2.0**-30, -(2.0**-24)], k))
    tiny_a = f32(rng.uniform(1, 2, k)) * f32(2.0**-64)  # products near 2^-126
    tiny_b = f32(rng.uniform(1, 2, k)) * f32(2.0**-62)
    tiny_c = f32(rng.choice([0.0, -(2.0**-126), 2.0**-126, -(2.0**-125)], k))
    big = f32(rng.uniform(1, 2, k)) * f32(2.0**64)
    big_c = f32(rng.choice([0.0, -3.4e38, 3.4e38, np.inf, -np.inf], k))
    e = np.array(F32_EDGES, np.uint32)
    grid = np.array(np.meshgrid(e, e, e)).reshape(3, -1)[:, :k]
    far = f32(rng.uniform(1, 2, k)) * f32(2.0 ** rng.integers(-60, 60, k))
    a = np.concatenate([raw[0], bits(a1), bits(t), bits(tiny_a), bits(big), grid[0], bits(far),
                        bits(a1)])
    b_ = np.concatenate([raw[1], bits(b1), bits(t), bits(tiny_b), bits(big), grid[1],
                         bits(far), bits(b1)])
    c = np.concatenate([raw[2], bits(c1), bits(c2), bits(tiny_c), bits(big_c), grid[2],
                        bits(f32(rng.uniform(-1, 1, k))), bits(-prod)])
    return a[:N], b_[:N], c[:N]


@pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
def test_fma_is_single_rounding_everywhere(device: object) -> None:
    prog = _program()
    a, b_, c = _operands()
    inputs = {"a": a, "b": b_, "c": c}
    want = np.frombuffer(reference.run_bytes(prog, inputs, grid=(N // 64, 1, 1))["out"],
                         np.uint32)
    got = np.frombuffer(run_bytes(prog, inputs, grid=(N // 64, 1, 1), device=device)["out"],
                        np.uint32)
    bad = np.nonzero(want != got)[0]
    assert bad.size == 0, [(hex(a[i]), hex(b_[i]), hex(c[i]), hex(want[i]), hex(got[i]))
                           for i in bad[:5]]
