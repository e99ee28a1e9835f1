"""Probing the kernel compilers this machine offers: NVRTC, hipRTC, OpenCL, glslang, host cc.

Each probe returns ``{"name", "available", "version" or "reason"}`` and never raises: a missing
toolchain is information for ``hurray-gpu devices``, not a failure.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from typing import Any

from hurray_gpu import config
from hurray_gpu.cli.common import one_line
from hurray_gpu.errors import HurrayGPUError

__all__ = ["probe_toolchains"]

# A compiler that does not answer --version within this many seconds counts as broken.
VERSION_TIMEOUT_S = 10


def _ok(name: str, version: str, used_by: str) -> dict[str, Any]:
    return {"name": name, "available": True, "version": version, "used_by": used_by}


def _missing(name: str, reason: str, used_by: str) -> dict[str, Any]:
    return {"name": name, "available": False, "reason": one_line(reason), "used_by": used_by}


def _first_line(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT_S,
                          check=False)
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else f"{argv[0]} (no version output)"


def _rtc(name: str, loader_name: str, used_by: str) -> dict[str, Any]:
    from hurray_gpu.kernels import rtc

    try:
        return _ok(name, getattr(rtc, loader_name)().version(), used_by)
    except HurrayGPUError as exc:
        return _missing(name, str(exc), used_by)


def _nvrtc() -> dict[str, Any]:
    return _rtc("NVRTC", "nvrtc", "cuda (and `python -m hurray_gpu.kernels check`)")


def _hiprtc() -> dict[str, Any]:
    return _rtc("hipRTC", "hiprtc", "rocm")


def _opencl() -> dict[str, Any]:
    used_by = "opencl"
    try:
        import pyopencl as cl
    except ImportError as exc:
        return _missing("OpenCL", f"pyopencl is not installed ({exc}). Fix: pip install "
                        "'hurray_gpu[opencl]'.", used_by)
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        return _missing("OpenCL", f"no OpenCL platform ({exc}). Fix: install an ICD, e.g. "
                        "apt install pocl-opencl-icd.", used_by)
    names = ", ".join(f"{p.name} {p.version}".strip() for p in platforms) or "no platforms"
    return _ok("OpenCL", f"pyopencl {cl.VERSION_TEXT}; {names}", used_by)


def _glslang() -> dict[str, Any]:
    used_by = "vulkan (GLSL -> SPIR-V)"
    exe = shutil.which("glslangValidator")
    if exe is None:
        return _missing("glslang", "glslangValidator is not on PATH. Fix: apt install "
                        "glslang-tools.", used_by)
    try:
        return _ok("glslang", _first_line([exe, "--version"]), used_by)
    except (OSError, subprocess.SubprocessError) as exc:
        return _missing("glslang", f"{exe} --version failed: {exc}", used_by)


def _host_cc() -> dict[str, Any]:
    used_by = "cpu (C11 + OpenMP)"
    cc = config.c_compiler()
    if cc is None:
        return _missing("host C compiler", "no cc on PATH and HURRAY_GPU_CC/CC unset. Fix: "
                        "apt install gcc.", used_by)
    try:
        return _ok("host C compiler", f"{cc}: {_first_line([cc, '--version'])}", used_by)
    except (OSError, subprocess.SubprocessError) as exc:
        return _missing("host C compiler", f"{cc} --version failed: {exc}", used_by)


PROBES: tuple[Callable[[], dict[str, Any]], ...] = (_nvrtc, _hiprtc, _opencl, _glslang, _host_cc)


def probe_toolchains() -> list[dict[str, Any]]:
    """Probe every kernel toolchain.

    Returns:
        One dict per toolchain: ``name``, ``available``, ``used_by`` and ``version`` (when
        available) or ``reason`` (when not, with a ``Fix:`` hint).
    """
    return [probe() for probe in PROBES]
