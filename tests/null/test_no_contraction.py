"""No fused multiply-add the kernel did not ask for: the PTX NVRTC makes with the cuda
backend's options (``-fmad=false``) for a virtual arch has no float ``fma``/``mad`` in any
built-in kernel or lowered vyre program, except in kernels whose source calls ``FMA``/``FMA_RN``.
"""

from __future__ import annotations

import os
import re

import pytest

from hurray_gpu.backends.cuda import CUDACompiler
from hurray_gpu.dialect import render
from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.errors import BackendUnavailableError
from hurray_gpu.kernels import get_kernel, kernel_names
from hurray_gpu.kernels.check import offline_compiler
from tests.vyre.lower_programs import corpus_kernels

ARCH = "compute_80"
# A float multiply-add in PTX: fma.rn.f32, fma.rn.ftz.f32, mad.rn.f32, mad.f32, fma.rn.f16x2,
# fma.rn.f64... (integer mad.lo.s32 / mad.wide.u32 are exact and stay allowed).
FLOAT_FMA = re.compile(r"\b(?:fma|mad)(?:\.[a-z0-9]+)*\.(?:f16|bf16|f32|f64)(?:x2)?\b")
ASKS_FMA = re.compile(r"\bFMA(?:_RN)?\(")


@pytest.fixture(scope="module")
def compiler() -> CUDACompiler:
    try:
        return offline_compiler("cuda", ARCH)
    except BackendUnavailableError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"NVRTC must be installed under CI=true (the nvrtc extra): {exc}")
        pytest.skip(f"NVRTC is not installed: {exc}")


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
    kernels = corpus_kernels()
    assert len(kernels) > 20
    bad, asked = _scan(compiler, kernels)
    assert bad == {}
    assert len(asked) == 1  # the explicit fma program (FMA_RN)
