"""NVRTC and hipRTC through ctypes: compile CUDA/HIP renderings without a GPU or cupy.

NVRTC comes from the ``nvidia-cuda-nvrtc`` wheel (headers from ``nvidia-cuda-runtime``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hurray_gpu.errors import BackendUnavailableError, CompileError

__all__ = ["RTC", "find_library_paths", "hiprtc", "nvrtc"]

# Fallback locations of a ROCm install (hipRTC is not on PyPI).
ROCM_LIB_DIRS = ("/opt/rocm/lib", "/opt/rocm/lib64")


def _site_dirs() -> list[str]:
    return [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]


def find_library_paths(pattern: str) -> list[str]:
    """Files matching ``nvidia/*/lib/<pattern>`` in every site-packages directory."""
    found: list[str] = []
    for site in _site_dirs():
        found += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", pattern)))
    return found


def _nvidia_include_dirs() -> list[str]:
    dirs = []
    for site in _site_dirs():
        for header in glob.glob(os.path.join(site, "nvidia", "*", "include", "cuda_fp16.h")):
            dirs.append(os.path.dirname(header))
    return dirs


@dataclass
class RTC:
    """One runtime compiler library (the NVRTC and hipRTC C APIs differ only in names).

    Args:
        lib: the loaded library.
        prefix: ``"nvrtc"`` or ``"hiprtc"``.
        code: the name of the code getter (``"CUBIN"`` for NVRTC with a real arch,
            ``"Code"`` for hipRTC).
        include_dirs: header directories passed as ``-I``.
    """

    lib: ctypes.CDLL
    prefix: str
    code: str
    include_dirs: tuple[str, ...] = ()

    def _fn(self, name: str) -> Any:
        return getattr(self.lib, f"{self.prefix}{name}")

    def version(self) -> str:
        """``"<prefix> <major>.<minor>"``."""
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self._fn("Version")(ctypes.byref(major), ctypes.byref(minor)), "Version")
        return f"{self.prefix} {major.value}.{minor.value}"

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            err = self._fn("GetErrorString")
            err.restype = ctypes.c_char_p
            raise BackendUnavailableError(f"{self.prefix}{what} failed: {err(status).decode()}")

    def _log(self, prog: ctypes.c_void_p) -> str:
        size = ctypes.c_size_t()
        self._fn("GetProgramLogSize")(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value + 1)
        self._fn("GetProgramLog")(prog, buf)
        return buf.value.decode(errors="replace")

    def compile(self, source: str, name: str, options: Sequence[str]) -> tuple[bytes, str]:
        """Compile ``source`` and return ``(code, log)``.

        Raises:
            CompileError: the compiler rejected the source (log attached).
        """
        opts = [*options, *[f"-I{d}" for d in self.include_dirs]]
        prog = ctypes.c_void_p()
        self._check(self._fn("CreateProgram")(ctypes.byref(prog), source.encode(),
                                              f"{name}.cu".encode(), 0, None, None),
                    "CreateProgram")
        try:
            arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
            status = self._fn("CompileProgram")(prog, len(opts), arr)
            log = self._log(prog)
            if status != 0:
                raise CompileError(f"{self.prefix} rejected {name}", source, tuple(opts), log)
            size = ctypes.c_size_t()
            self._check(self._fn(f"Get{self.code}Size")(prog, ctypes.byref(size)), "GetSize")
            out = ctypes.create_string_buffer(size.value)
            self._check(self._fn(f"Get{self.code}")(prog, out), "GetCode")
            return out.raw, log
        finally:
            self._fn("DestroyProgram")(ctypes.byref(prog))


def _load(paths: Sequence[str], what: str, fix: str) -> ctypes.CDLL:
    errors = []
    for path in paths:
        try:
            return ctypes.CDLL(path)
        except OSError as exc:
            errors.append(f"{path}: {exc}")
    raise BackendUnavailableError(f"{what} not found ({'; '.join(errors) or 'no candidates'})",
                                  fix=fix)


@functools.lru_cache(maxsize=1)
def nvrtc() -> RTC:
    """NVRTC from the pip wheel (or the system library).

    Raises:
        BackendUnavailableError: no libnvrtc could be loaded.
    """
    paths = find_library_paths("libnvrtc.so*") + find_library_paths("nvrtc64_*.dll")
    paths = [p for p in paths if "builtins" not in p and ".alt." not in p]
    # libnvrtc dlopens its builtins by soname; the wheel's lib dir is not on the loader path.
    for builtins in find_library_paths("libnvrtc-builtins.so*"):
        if ".alt." not in builtins:
            try:
                ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue
    system = ctypes.util.find_library("nvrtc")
    lib = _load(paths + ([system] if system else []), "libnvrtc",
                "pip install 'nvidia-cuda-nvrtc==13.0.*' nvidia-cuda-runtime "
                "(or hurray_gpu[cuda]).")
    return RTC(lib, "nvrtc", "CUBIN", tuple(_nvidia_include_dirs()))


@functools.lru_cache(maxsize=1)
def hiprtc() -> RTC:
    """hipRTC from a ROCm install.

    Raises:
        BackendUnavailableError: no libhiprtc could be loaded.
    """
    paths = [p for d in ROCM_LIB_DIRS for p in sorted(glob.glob(f"{d}/libhiprtc.so*"))]
    system = ctypes.util.find_library("hiprtc")
    lib = _load(paths + ([system] if system else []), "libhiprtc",
                "install ROCm (hipRTC ships with it; it is not on PyPI).")
    return RTC(lib, "hiprtc", "Code")
