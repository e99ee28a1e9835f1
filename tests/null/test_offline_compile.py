"""The offline check compiles with the cuda backend's own compiler (CUDACompiler without a
device): every kernel's CUDA rendering for sm_80 and sm_90 through NVRTC (the pinned wheel,
required under CI=true), GLSL with glslang; hip fails with a Fix when hipRTC is missing."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from hurray_gpu.backends.cuda import CUDACompiler
from hurray_gpu.backends.rocm import ROCmCompiler
from hurray_gpu.errors import BackendUnavailableError, CompileError
from hurray_gpu.kernels import kernel_names
from hurray_gpu.kernels.check import check_dialect, offline_compiler
from tests._support import skip_or_fail


def _nvrtc(arch: str) -> CUDACompiler:
    """The offline CUDA compiler; NVRTC missing is a skip here, a failure under CI=true."""
    try:
        return offline_compiler("cuda", arch)
    except BackendUnavailableError as exc:
        skip_or_fail(f"NVRTC is not installed ({exc})", "pip install .[nvrtc]")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_kernel_compiles_with_nvrtc(arch: str) -> None:
    _nvrtc(arch)
    results = check_dialect("cuda", [arch])
    assert [r.kernel for r in results] == list(kernel_names())
    bad = [(r.kernel, r.detail) for r in results if r.status != "ok"]
    assert not bad, bad
    assert all(" bytes CUBIN (nvrtc-" in r.detail for r in results)


def test_check_uses_the_backends_compiler_and_options() -> None:
    compiler = _nvrtc("sm_90")
    assert type(compiler) is CUDACompiler  # the class a CUDADevice compiles with
    assert compiler.options("sm_90") == ("--gpu-architecture=sm_90", "-fmad=false")
    assert compiler.binary_getter(compiler.options("sm_90")) == "CUBIN"
    assert compiler.binary_getter(compiler.options("compute_90")) == "PTX"
    assert ROCmCompiler.options("gfx942") == ("--offload-arch=gfx942", "-ffp-contract=off")
    cubin = compiler.compile("extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }",
                             compiler.options("sm_90"))
    assert cubin[:4] == b"\x7fELF"
    ptx = compiler.compile("extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }",
                           compiler.options("compute_90")).decode()
    assert ".target sm_90" in ptx and ".visible .entry k(" in ptx
    assert compiler.version().startswith("nvrtc-")


def test_rejected_source_carries_the_log() -> None:
    compiler = _nvrtc("sm_80")
    with pytest.raises(CompileError) as info:
        compiler.compile("extern \"C\" __global__ void k() { undefined_name = 1; }",
                         compiler.options("sm_80"))
    assert "undefined_name" in info.value.log and "is undefined" in info.value.log
    assert info.value.options == ("--gpu-architecture=sm_80", "-fmad=false")
    assert "Fix:" in str(info.value)


def test_every_kernel_compiles_to_spirv() -> None:
    if shutil.which("glslangValidator") is None:
        skip_or_fail("glslangValidator is not on PATH", "apt-get install glslang-tools")
    results = check_dialect("glsl")
    bad = [(r.kernel, r.detail) for r in results if r.status != "ok"]
    assert not bad, bad
    assert len(results) == len(kernel_names())


def test_hip_check_compiles_or_says_how_to_get_hiprtc() -> None:
    try:
        results = check_dialect("hip", ["gfx90a"], ["fill_u32"])
    except BackendUnavailableError as exc:
        assert "hiprtc" in str(exc) and "Fix: install ROCm" in str(exc)
        done = subprocess.run([sys.executable, "-m", "hurray_gpu.kernels", "check", "--dialect",
                               "hip", "--kernel", "fill_u32"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and done.stdout == ""
        assert "error: cannot check hip: libhiprtc not found" in done.stderr
        assert "Fix: install ROCm" in done.stderr
        return
    assert [(r.kernel, r.status) for r in results] == [("fill_u32", "ok")], results


def test_cli_check_cuda() -> None:
    _nvrtc("sm_80")
    done = subprocess.run(
        [sys.executable, "-m", "hurray_gpu.kernels", "check", "--dialect", "cuda", "--arch",
         "sm_80,sm_90", "--kernel", "axpy_f32", "--kernel", "f16_to_f32"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[:4] for line in lines] == [
        ["ok", "axpy_f32", "cuda", "sm_80"], ["ok", "axpy_f32", "cuda", "sm_90"],
        ["ok", "f16_to_f32", "cuda", "sm_80"], ["ok", "f16_to_f32", "cuda", "sm_90"]]


def test_cli_list_and_render() -> None:
    done = subprocess.run([sys.executable, "-m", "hurray_gpu.kernels", "list"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "axpy_f32" in done.stdout
    done = subprocess.run([sys.executable, "-m", "hurray_gpu.kernels", "render", "fill_u32",
                           "--dialect", "opencl"], capture_output=True, text=True, timeout=120)
    assert "__kernel" in done.stdout
