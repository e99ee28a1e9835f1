"""Offline compile checks of every kernel's rendering, per dialect, with no GPU needed.

cuda: NVRTC per ``sm_XX``; hip: hipRTC per ``gfxNNN``; glsl: glslangValidator to SPIR-V;
opencl: build on the first OpenCL device; c: the host C compiler.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hurray_gpu.errors import BackendUnavailableError, CompileError
from hurray_gpu.kernels import get_kernel, kernel_names
from hurray_gpu.kernels.dialect import render
from hurray_gpu.kernels.dialect.kernel import KernelDef

__all__ = ["CheckResult", "check_dialect", "DEFAULT_ARCHS"]

DEFAULT_ARCHS = {"cuda": ("sm_80", "sm_90"), "hip": ("gfx90a", "gfx942"), "glsl": ("vulkan1.1",),
                 "opencl": ("device",), "c": ("host",)}
GLSLANG_TIMEOUT_S = 120


@dataclass(frozen=True)
class CheckResult:
    """One kernel compiled for one target: ok, failed (with the log) or skipped (why)."""

    kernel: str
    dialect: str
    arch: str
    status: str
    detail: str = ""


def _nvrtc(kernel: KernelDef, arch: str) -> str:
    from hurray_gpu.kernels.rtc import nvrtc

    code, log = nvrtc().compile(render(kernel, "cuda"), kernel.name,
                                [f"--gpu-architecture={arch}", "-default-device"])
    return f"{len(code)} bytes cubin{'; ' + log.strip() if log.strip() else ''}"


def _hiprtc(kernel: KernelDef, arch: str) -> str:
    from hurray_gpu.kernels.rtc import hiprtc

    code, log = hiprtc().compile(render(kernel, "hip"), kernel.name, [f"--offload-arch={arch}"])
    return f"{len(code)} bytes code object{'; ' + log.strip() if log.strip() else ''}"


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
    "cuda": _nvrtc, "hip": _hiprtc, "glsl": _glslang, "opencl": _device_build("opencl"),
    "c": _device_build("cpu"),
}


def check_dialect(dialect: str, archs: Sequence[str] = (),
                  names: Sequence[str] = ()) -> list[CheckResult]:
    """Compile every (or each named) kernel's rendering for each arch.

    Returns:
        One result per (kernel, arch); a missing toolchain gives ``skipped`` results.

    Raises:
        ValueError: unknown dialect.
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
            except BackendUnavailableError as exc:
                results.append(CheckResult(name, dialect, arch, "skipped", str(exc)))
            except CompileError as exc:
                results.append(CheckResult(name, dialect, arch, "failed", exc.log or str(exc)))
    return results
