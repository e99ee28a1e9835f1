"""Offline compile checks of every kernel's rendering, per dialect, with no GPU needed.

cuda/hip: the cuda/rocm backends' own compiler (``CUDACompiler.offline``/``ROCmCompiler``) per
``sm_XX``/``gfxNNN``, with the options, headers and binary getter a device uses; glsl:
glslangValidator to SPIR-V; opencl: a build on the first OpenCL device; c: the host C compiler.
A missing toolchain raises BackendUnavailableError.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hurray_gpu.dialect import render
from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.errors import BackendUnavailableError, CompileError
from hurray_gpu.kernels import get_kernel, kernel_names

if TYPE_CHECKING:
    from hurray_gpu.backends.cuda import CUDACompiler

__all__ = ["CheckResult", "check_dialect", "DEFAULT_ARCHS", "offline_compiler"]

DEFAULT_ARCHS = {"cuda": ("sm_80", "sm_90"), "hip": ("gfx90a", "gfx942"), "glsl": ("vulkan1.1",),
                 "opencl": ("device",), "c": ("host",)}
GLSLANG_TIMEOUT_S = 120


@dataclass(frozen=True)
class CheckResult:
    """One kernel compiled for one target: ``ok`` or ``failed`` (with the compiler's log)."""

    kernel: str
    dialect: str
    arch: str
    status: str
    detail: str = ""


@functools.lru_cache(maxsize=8)
def offline_compiler(dialect: str, arch: str) -> CUDACompiler:
    """The cuda (``dialect="cuda"``) or rocm (``"hip"``) backend's compiler, without a device.

    Raises:
        BackendUnavailableError: the runtime compiler (NVRTC, hipRTC) cannot be loaded.
    """
    from hurray_gpu.backends.cuda import CUDACompiler
    from hurray_gpu.backends.rocm import ROCmCompiler

    compiler = (ROCmCompiler if dialect == "hip" else CUDACompiler).offline(arch)
    compiler.version()  # loads the library now: a missing one fails before any kernel
    return compiler


def _rtc(dialect: str) -> Callable[[KernelDef, str], str]:
    def build(kernel: KernelDef, arch: str) -> str:
        compiler = offline_compiler(dialect, arch)
        options = compiler.options(arch)
        binary = compiler.compile(render(kernel, dialect), options)
        return (f"{len(binary)} bytes {compiler.binary_getter(options)} "
                f"({compiler.version()} via {compiler.rtc.origin})")

    return build


def _glslang(kernel: KernelDef, arch: str) -> str:
    tool = shutil.which("glslangValidator")
    if tool is None:
        raise BackendUnavailableError("glslangValidator not found",
                                      fix="apt-get install glslang-tools.")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = f"{tmp}/{kernel.name}.comp", f"{tmp}/{kernel.name}.spv"
        with open(src, "w") as handle:
            handle.write(render(kernel, "glsl"))
        done = subprocess.run([tool, "-V", "--target-env", arch, src, "-o", out],
                              capture_output=True, text=True, timeout=GLSLANG_TIMEOUT_S)
        if done.returncode != 0:
            raise CompileError("glslangValidator rejected the kernel", render(kernel, "glsl"),
                               (), done.stdout + done.stderr)
        with open(out, "rb") as handle:
            return f"{len(handle.read())} bytes SPIR-V"


def _device_build(kind: str) -> Callable[[KernelDef, str], str]:
    def build(kernel: KernelDef, arch: str) -> str:
        from hurray_gpu.runtime.registry import resolve_device

        dev = resolve_device(kind)
        source = dev.render(kernel)
        compiler: Any = dev.compiler
        binary = compiler.compile(source, dev.compile_options(kernel))
        return f"{len(binary)} bytes on {dev.spec}"

    return build


CHECKERS: dict[str, Callable[[KernelDef, str], str]] = {
    "cuda": _rtc("cuda"), "hip": _rtc("hip"), "glsl": _glslang, "opencl": _device_build("opencl"),
    "c": _device_build("cpu")}


def check_dialect(dialect: str, archs: Sequence[str] = (),
                  names: Sequence[str] = ()) -> list[CheckResult]:
    """Compile every (or each named) kernel's rendering for each arch.

    Returns:
        One result per (kernel, arch).

    Raises:
        ValueError: unknown dialect.
        BackendUnavailableError: the dialect's toolchain is missing here.
    """
    if dialect not in CHECKERS:
        raise ValueError(f"unknown dialect {dialect!r}; use one of {sorted(CHECKERS)}")
    results = []
    for name in names or kernel_names():
        kernel = get_kernel(name)
        for arch in archs or DEFAULT_ARCHS[dialect]:
            try:
                detail = CHECKERS[dialect](kernel, arch)
                results.append(CheckResult(name, dialect, arch, "ok", detail))
            except CompileError as exc:
                results.append(CheckResult(name, dialect, arch, "failed", exc.log or str(exc)))
    return results
