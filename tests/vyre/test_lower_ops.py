"""Per-op parity of lowered programs with vyre.reference on every available device.

Edge values (division by zero, shifts >= 32, NaN payloads, subnormals, +-0, infinities,
saturation bounds) come first in each buffer; hypothesis draws the rest.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._support import skip_or_fail
from tests.vyre.lower_programs import (
    CASTS,
    F32_BINOPS,
    F32_EDGES,
    F32_UNOPS,
    I32_BINOPS,
    I32_UNOPS,
    U32_BINOPS,
    U32_EDGES,
    U32_UNOPS,
    assert_parity,
    binop_program,
    cast_program,
    fill,
    kernel_devices,
    unop_program,
)
from vyre.ir import Scalar

DEVICES = kernel_devices()
pytestmark = pytest.mark.skipif(not DEVICES, reason="no compiling hurray_gpu device")
SETTINGS = settings(max_examples=4, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
SEEDS = st.integers(0, 2**32 - 1)

PROGRAMS = {
    "u32_binops": (binop_program(Scalar.U32, U32_BINOPS), "u32"),
    "i32_binops": (binop_program(Scalar.I32, I32_BINOPS), "u32"),
    "f32_binops": (binop_program(Scalar.F32, F32_BINOPS), "f32"),
    "u32_unops": (unop_program(Scalar.U32, U32_UNOPS), "u32"),
    "i32_unops": (unop_program(Scalar.I32, I32_UNOPS), "u32"),
    "f32_unops": (unop_program(Scalar.F32, F32_UNOPS), "f32"),
    "u32_casts": (cast_program(Scalar.U32, CASTS), "u32"),
    "i32_casts": (cast_program(Scalar.I32, CASTS), "u32"),
    "f32_casts": (cast_program(Scalar.F32, CASTS), "f32"),
}


def _inputs(kind: str, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if kind == "u32":
        def draw(n: int) -> np.ndarray:
            small = rng.integers(0, 40, n)
            return np.where(rng.random(n) < 0.3, small, rng.integers(0, 2**32, n))
        a = fill(U32_EDGES, rng, draw)
        bb = fill(U32_EDGES, rng, draw, offset=seed % len(U32_EDGES))
    else:
        def draw(n: int) -> np.ndarray:
            return rng.integers(0, 2**32, n)
        a = fill(F32_EDGES, rng, draw)
        bb = fill(F32_EDGES, rng, draw, offset=seed % len(F32_EDGES))
    return {"a": a, "b": bb}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
def test_lower_op_edges(name: str, device: object) -> None:
    program, kind = PROGRAMS[name]
    assert_parity(program, _inputs(kind, 0), device)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
@SETTINGS
@given(seed=SEEDS)
def test_lower_op_random(name: str, device: object, seed: int) -> None:
    program, kind = PROGRAMS[name]
    assert_parity(program, _inputs(kind, seed), device)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_lower_op_programs_nvrtc_compile(arch: str) -> None:
    from hurray_gpu.dialect import render
    from hurray_gpu.errors import BackendUnavailableError
    from hurray_gpu.kernels.check import offline_compiler
    from tests.vyre.test_lower_workgroup import prefix_scan, subgroup_program, tiled_dot
    from vyre.lower import lower

    try:
        compiler = offline_compiler("cuda", arch)
    except BackendUnavailableError as exc:
        skip_or_fail(f"NVRTC is not installed ({exc})", "pip install .[nvrtc]")
    programs = [p for p, _ in PROGRAMS.values()] + [prefix_scan(64), tiled_dot(),
                                                     subgroup_program(48)]
    for program in programs:
        kernel = lower(program).kernel
        code = compiler.compile(render(kernel, "cuda"), compiler.options(arch))
        assert code, f"{kernel.name}: NVRTC produced no code for {arch}"
