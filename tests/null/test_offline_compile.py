"""The offline check compiles with the cuda and rocm backends' own compilers (without a
device): every kernel's CUDA rendering for sm_80 and sm_90 through NVRTC (the pinned wheel,
required under CI=true), every HIP rendering (built-in kernels, vyre's programs, the vyre test
corpus) for gfx90a through hipRTC (Debian's libamdhip64, required under CI=true), cached like
any compiled kernel; GLSL with glslang."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hurray_gpu.backends.cuda import CUDACompiler
from hurray_gpu.backends.rocm import ROCmCompiler
from hurray_gpu.dialect import render
from hurray_gpu.errors import BackendUnavailableError, CompileError
from hurray_gpu.kernels import get_kernel, kernel_names
from hurray_gpu.kernels.check import check_dialect, offline_compiler, vyre_kernels
from tests._support import skip_or_fail
from tests.vyre.lower_programs import corpus_kernels

HIP_ARCH = "gfx90a"  # the newest target Debian 12's ROCm 5.2 hipRTC compiles for


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
    assert [r.kernel for r in results] == [*kernel_names(), *(n for n, _ in vyre_kernels())]
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


def test_every_kernel_compiles_to_wgsl() -> None:
    """Every built-in and vyre kernel's WGSL passes naga and builds a pipeline (wgpu)."""
    from hurray_gpu.runtime.registry import is_available

    if not is_available(0x05):
        skip_or_fail("no WebGPU adapter", "pip install .[webgpu]; apt-get install "
                     "mesa-vulkan-drivers")
    results = check_dialect("wgsl")
    bad = [(r.kernel, r.detail) for r in results if r.status != "ok"]
    assert not bad, bad
    # vyre's correctly rounded functions (softmax's exp) compile too, on the f64 emulation.
    assert any("CR_" in kernel.body for _, kernel in vyre_kernels())
    assert len(results) == len(kernel_names()) + len(vyre_kernels())
    assert all(" bytes on webgpu:0" in r.detail for r in results)


def test_every_kernel_compiles_to_spirv() -> None:
    if shutil.which("glslangValidator") is None:
        skip_or_fail("glslangValidator is not on PATH", "apt-get install glslang-tools")
    results = check_dialect("glsl")
    bad = [(r.kernel, r.detail) for r in results if r.status != "ok"]
    assert not bad, bad
    assert len(results) == len(kernel_names()) + len(vyre_kernels())


# hipRTC runs in a child process: comgr's LLVM and pocl's cannot share one (either order
# aborts the process with "CommandLine Error: Option ... registered more than once"), and a
# test worker may have opened the OpenCL device already.
CHECK_HIP = [sys.executable, "-m", "hurray_gpu.kernels", "check", "--dialect", "hip"]
COMPILE_FILES = """
import sys
from pathlib import Path
from hurray_gpu.errors import CompileError
from hurray_gpu.kernels.check import offline_compiler
compiler = offline_compiler("hip", sys.argv[1])
for path in sorted(Path(sys.argv[2]).glob("*.hip")):
    try:
        code = compiler.compile_cached(path.read_text(), compiler.options(sys.argv[1]))
        print(path.stem, code[:4].hex())
    except CompileError as exc:
        print(path.stem, "failed", exc.log.replace(chr(10), " ")[:2000])
"""


def _check_hip(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m hurray_gpu.kernels check --dialect hip <args>``; hipRTC missing is a skip
    here, a failure under CI=true."""
    done = subprocess.run([*CHECK_HIP, *args], capture_output=True, text=True, timeout=600)
    if done.returncode == 2 and "libhiprtc not found" in done.stderr:
        skip_or_fail(f"hipRTC is not installed ({done.stderr.strip()})",
                     "apt-get install hipcc libamdhip64-dev")
    return done


def test_every_hip_rendering_compiles_with_hiprtc() -> None:
    done = _check_hip("--arch", HIP_ARCH)
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    rows = [line.split()[:4] for line in done.stdout.splitlines()]
    names = [*kernel_names(), *(name for name, _ in vyre_kernels())]
    assert [r[1] for r in rows] == names and len(names) > len(kernel_names()) + 30
    assert all(r[0] == "ok" and r[2:] == ["hip", HIP_ARCH] for r in rows), rows
    assert all(" bytes Code (hiprtc" in line for line in done.stdout.splitlines())


def test_vyre_test_corpus_compiles_with_hiprtc(tmp_path: Path) -> None:
    kernels = corpus_kernels()
    assert len(kernels) > 20
    for kernel in kernels:
        (tmp_path / f"{kernel.name}.hip").write_text(render(kernel, "hip"))
    _check_hip("--arch", HIP_ARCH, "--kernel", "fill_u32")  # skips when hipRTC is missing
    done = subprocess.run([sys.executable, "-c", COMPILE_FILES, HIP_ARCH, str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    got = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert got == {k.name: b"\x7fELF".hex() for k in kernels}  # AMDGPU code objects


def test_hip_code_objects_are_cached(tmp_path: Path) -> None:
    env = {**os.environ, "HURRAY_GPU_CACHE_DIR": str(tmp_path)}
    args = [*CHECK_HIP, "--arch", f"{HIP_ARCH},gfx908", "--kernel", "fill_u32", "--kernel",
            "vyre.crc32"]
    _check_hip("--arch", HIP_ARCH, "--kernel", "fill_u32")
    runs = [subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
            for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs
    first, second = (r.stdout.splitlines() for r in runs)
    assert len(first) == 4 and not any("cached" in line for line in first)
    assert [line.replace(", cached)", ")") for line in second] == first
    assert all(line.endswith(", cached)") for line in second)
    # The key: domain, source, options, compiler version and the target (identity).
    source = render(get_kernel("fill_u32"), "hip")
    compiler = ROCmCompiler.__new__(ROCmCompiler)
    keys = set()
    for identity, text, arch, version in (("a|gfx90a", source, "gfx90a", "v1"),
                                          ("a|gfx90a", source + " ", "gfx90a", "v1"),
                                          ("a|gfx90a", source, "gfx908", "v1"),
                                          ("a|gfx908", source, "gfx90a", "v1"),
                                          ("a|gfx90a", source, "gfx90a", "v2")):
        compiler.identity = identity
        compiler.version = lambda v=version: v  # type: ignore[method-assign]
        keys.add(compiler.cache_key(text, ROCmCompiler.options(arch)))
    assert len(keys) == 5


def test_hip_rejected_source_carries_the_log(tmp_path: Path) -> None:
    (tmp_path / "bad.hip").write_text('extern "C" __global__ void k() { undefined_name = 1; }')
    _check_hip("--arch", HIP_ARCH, "--kernel", "fill_u32")
    done = subprocess.run([sys.executable, "-c", COMPILE_FILES, HIP_ARCH, str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.startswith("bad failed "), done.stdout + done.stderr
    assert "use of undeclared identifier 'undefined_name'" in done.stdout


def test_cli_check_hip_refuses_an_arch_hiprtc_cannot_target() -> None:
    done = _check_hip("--arch", f"{HIP_ARCH},gfx9999", "--kernel", "fill_u32")
    # ROCm 5.2's hipRTC aborts the process on an arch it lacks: refused before compiling.
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert "cannot compile for gfx9999; it targets" in done.stderr and "gfx90a" in done.stderr
    assert "Fix: pass one of those archs" in done.stderr


def test_hip_renderings_compile_with_hipcc_too(tmp_path: Path) -> None:
    """The headers hipRTC must not see (#if !defined(__HIPCC_RTC__)) are the ones hipcc needs."""
    if shutil.which("hipcc") is None:
        skip_or_fail("hipcc is not on PATH", "apt-get install hipcc")
    for name in ("f16_to_f32", "fill_u32"):
        src, out = tmp_path / f"{name}.hip", tmp_path / f"{name}.co"
        src.write_text(render(get_kernel(name), "hip"))
        argv = ["hipcc", f"--offload-arch={HIP_ARCH}", "--genco", *ROCmCompiler.codegen, str(src),
                "-o", str(out)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "HIP_PLATFORM": "amd"})
        assert done.returncode == 0, done.stderr
        assert out.read_bytes().startswith(b"__CLANG_OFFLOAD_BUNDLE__")  # holds the gfx90a ELF


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
