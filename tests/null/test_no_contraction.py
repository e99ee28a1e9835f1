"""No fused multiply-add the kernel did not ask for: the PTX NVRTC makes with the cuda
backend's options (``-fmad=false``) for a virtual arch has no float ``fma``/``mad`` in any
built-in kernel or lowered vyre program, except in kernels whose source calls ``FMA``/``FMA_RN``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from hurray_gpu.backends.cuda import CUDACompiler
from hurray_gpu.dialect import render
from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.errors import BackendUnavailableError
from hurray_gpu.kernels import get_kernel, kernel_names
from hurray_gpu.kernels.check import offline_compiler

ARCH = "compute_80"
# A float multiply-add in PTX: fma.rn.f32, fma.rn.ftz.f32, mad.rn.f32, mad.f32, fma.rn.f16x2,
# fma.rn.f64... (integer mad.lo.s32 / mad.wide.u32 are exact and stay allowed).
FLOAT_FMA = re.compile(r"\b(?:fma|mad)(?:\.[a-z0-9]+)*\.(?:f16|bf16|f32|f64)(?:x2)?\b")
ASKS_FMA = re.compile(r"\bFMA(?:_RN)?\(")
GOLDEN = Path(__file__).parents[1] / "golden" / "vyre"


@pytest.fixture(scope="module")
def compiler() -> CUDACompiler:
    try:
        return offline_compiler("cuda", ARCH)
    except BackendUnavailableError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"NVRTC must be installed under CI=true (the nvrtc extra): {exc}")
        pytest.skip(f"NVRTC is not installed: {exc}")


def _vyre_kernels() -> list[KernelDef]:
    """Every distinct CUDA kernel the vyre test programs lower to (libm ones are host-only)."""
    from tests.vyre.lower_programs import (
        CASTS,
        F32_BINOPS,
        F32_UNOPS,
        binop_program,
        cast_program,
        elementwise,
        unop_program,
    )
    from tests.vyre.program_cases import all_cases
    from tests.vyre.test_lower_workgroup import prefix_scan, subgroup_program, tiled_dot
    from vyre import builder as b
    from vyre import from_wire
    from vyre import programs as P
    from vyre.execute import lower_cached
    from vyre.ir import Scalar

    programs = [c.build() for c in all_cases()]
    programs += [P.blake3_chunks_program(), P.blake3_parents_program(), prefix_scan(64),
                 tiled_dot(), subgroup_program(48), binop_program(Scalar.F32, F32_BINOPS),
                 unop_program(Scalar.F32, F32_UNOPS), cast_program(Scalar.F32, CASTS)]
    x, y = b.var("x"), b.var("y")
    # x*y+x and x*x+y*y as a multiply then an add (contractible in plain C; vyre's per-op
    # float canonicalization already keeps them apart), and an explicit fma.
    programs.append(elementwise(Scalar.F32, [(b.add(b.mul(x, y), x), "f32"),
                                             (b.add(b.mul(x, x), b.mul(y, y)), "f32")]))
    programs.append(elementwise(Scalar.F32, [(b.fma(x, y, x), "f32")]))
    for kat in sorted(GOLDEN.glob("k*.kat.json")):
        wire = GOLDEN / json.loads(kat.read_text())["program"]
        programs.append(from_wire(wire.read_bytes()))
    kernels: dict[str, KernelDef] = {}
    for program in programs:
        lowered = lower_cached(program)
        if "libm" not in lowered.features:
            for kernel in lowered.kernels:
                kernels.setdefault(kernel.name, kernel)
    return list(kernels.values())


def _scan(compiler: CUDACompiler, kernels: list[KernelDef]) -> tuple[dict[str, list[str]],
                                                                       set[str]]:
    """(kernel -> the float fma/mad in its PTX it did not ask for, kernels that asked and got
    one)."""
    bad, asked = {}, set()
    for kernel in kernels:
        ptx = compiler.compile(render(kernel, "cuda"), compiler.options(ARCH)).decode()
        assert f".target {ARCH.replace('compute', 'sm')}" in ptx, kernel.name
        found = FLOAT_FMA.findall(ptx)
        if found and ASKS_FMA.search(kernel.body):
            asked.add(kernel.name)
        elif found:
            bad[kernel.name] = sorted(set(found))
    return bad, asked


def test_builtin_kernels_have_no_unasked_fma(compiler: CUDACompiler) -> None:
    kernels = [get_kernel(name) for name in kernel_names()]
    assert len(kernels) > 50
    bad, asked = _scan(compiler, kernels)
    assert bad == {}
    assert "axpy_f32" in asked  # it calls FMA(): the scan sees an fma where one is asked for


def test_lowered_vyre_programs_have_no_unasked_fma(compiler: CUDACompiler) -> None:
    kernels = _vyre_kernels()
    assert len(kernels) > 20
    bad, asked = _scan(compiler, kernels)
    assert bad == {}
    assert len(asked) == 1  # the explicit fma program (FMA_RN)
