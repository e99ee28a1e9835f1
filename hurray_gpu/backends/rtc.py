"""The runtime compilers (NVRTC, hipRTC) behind one small interface: :class:`Binding`.

``CUDACompiler``/``ROCmCompiler`` (backends/cuda.py, backends/rocm.py) are the one compile path,
on a GPU and offline alike; a Binding only reaches the library: CuPy's own binding when the
compiler has CuPy (the library CuPy links against), else the library loaded here with ctypes
(NVRTC from the ``nvidia-cuda-nvrtc`` wheel or the system, hipRTC from ROCm).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import os
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from hurray_gpu.errors import BackendUnavailableError

__all__ = ["Binding", "CtypesBinding", "CupyBinding", "amdgpu_targets", "binding", "hiprtc",
           "include_dirs", "nvrtc"]


class Binding(Protocol):
    """The runtime compiler's C API as the compiler class uses it, status codes and no policy:
    ``version()`` (``"nvrtc 13.0"``), ``create(source, name)`` (a program handle),
    ``compile(prog, options)`` (the status, 0 on success), ``log(prog)``, ``code(prog, kind)``
    (kind ``CUBIN``/``PTX`` for NVRTC, ``Code`` for hipRTC) and ``destroy(prog)``;
    ``library`` is ``nvrtc``/``hiprtc``, ``origin`` where it came from."""

    library: str
    origin: str

    def version(self) -> str: ...
    def create(self, source: str, name: str) -> int: ...
    def compile(self, prog: int, options: Sequence[str]) -> int: ...
    def log(self, prog: int) -> str: ...
    def code(self, prog: int, kind: str) -> bytes: ...
    def destroy(self, prog: int) -> None: ...


class CupyBinding:
    """:class:`Binding` over ``cupy.cuda.nvrtc`` (NVRTC, or hipRTC in CuPy's ROCm build)."""

    def __init__(self, cupy: Any, library: str) -> None:
        self.api, self.library = cupy.cuda.nvrtc, library
        self.origin = f"CuPy {getattr(cupy, '__version__', '?')}"

    def version(self) -> str:
        try:
            major, minor = self.api.getVersion()
        except Exception as exc:  # noqa: BLE001 - CuPy raises RuntimeError when libnvrtc is absent
            raise BackendUnavailableError(f"{self.library} cannot be loaded through CuPy: {exc}",
                                          fix="pip install 'hurray_gpu[cuda]' (or [rocm]).") from exc
        return f"{self.library} {major}.{minor}"

    def create(self, source: str, name: str) -> int:
        return int(self.api.createProgram(source, name, (), ()))

    def compile(self, prog: int, options: Sequence[str]) -> int:
        try:
            self.api.compileProgram(prog, list(options))
        except self.api.NVRTCError as exc:
            return int(exc.status)
        return 0

    def log(self, prog: int) -> str:
        return str(self.api.getProgramLog(prog))

    def code(self, prog: int, kind: str) -> bytes:
        # CuPy's ROCm build maps hiprtcGetCode onto getPTX.
        return bytes(getattr(self.api, "getCUBIN" if kind == "CUBIN" else "getPTX")(prog))

    def destroy(self, prog: int) -> None:
        self.api.destroyProgram(prog)


class CtypesBinding:
    """:class:`Binding` over a libnvrtc/libhiprtc loaded with ctypes (the two C APIs differ
    only in the ``nvrtc``/``hiprtc`` prefix, ``library``)."""

    def __init__(self, lib: ctypes.CDLL, library: str, origin: str) -> None:
        self.lib, self.library, self.origin = lib, library, origin

    def _call(self, name: str, *args: Any) -> None:
        status = getattr(self.lib, f"{self.library}{name}")(*args)
        if status != 0:
            err = getattr(self.lib, f"{self.library}GetErrorString")
            err.restype = ctypes.c_char_p
            raise BackendUnavailableError(
                f"{self.library}{name} failed: {err(status).decode()} ({self.origin})",
                fix=f"reinstall {self.library} (NVRTC: pip install 'nvidia-cuda-nvrtc==13.0.*').")

    def version(self) -> str:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._call("Version", ctypes.byref(major), ctypes.byref(minor))
        runtime = ctypes.c_int()
        # hipRTC inside libamdhip64 (ROCm < 5.3) always says 9.0: the HIP runtime's version
        # (major * 10^7 + minor * 10^5 + patch, no GPU needed) tells such compilers apart.
        get_runtime = getattr(self.lib, "hipRuntimeGetVersion", None)
        if get_runtime is not None and get_runtime(ctypes.byref(runtime)) == 0:
            return f"{self.library} {major.value}.{minor.value} hip {runtime.value}"
        return f"{self.library} {major.value}.{minor.value}"

    def create(self, source: str, name: str) -> int:
        prog = ctypes.c_void_p()
        self._call("CreateProgram", ctypes.byref(prog), source.encode(), name.encode(), 0, None,
                   None)
        return int(prog.value or 0)

    def compile(self, prog: int, options: Sequence[str]) -> int:
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        compile_program = getattr(self.lib, f"{self.library}CompileProgram")
        return int(compile_program(ctypes.c_void_p(prog), len(options), opts))

    def _sized(self, prog: int, what: str) -> bytes:
        size = ctypes.c_size_t()
        self._call(f"Get{what}Size", ctypes.c_void_p(prog), ctypes.byref(size))
        out = ctypes.create_string_buffer(size.value)
        self._call(f"Get{what}", ctypes.c_void_p(prog), out)
        return out.raw

    def log(self, prog: int) -> str:
        return self._sized(prog, "ProgramLog").rstrip(b"\0").decode(errors="replace")

    def code(self, prog: int, kind: str) -> bytes:
        raw = self._sized(prog, kind)
        return raw.rstrip(b"\0") if kind == "PTX" else raw  # PTX text ends in a NUL

    def destroy(self, prog: int) -> None:
        self._call("DestroyProgram", ctypes.byref(ctypes.c_void_p(prog)))


def _wheel_files(pattern: str) -> list[str]:
    """Files matching ``nvidia/*/<pattern>`` in every site-packages directory."""
    sites = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    return [f for site in sites for f in sorted(glob.glob(os.path.join(site, "nvidia", "*",
                                                                        pattern)))]


def _roots(names: Sequence[str], default: str) -> list[str]:
    return [os.environ[n] for n in names if os.environ.get(n)] + [default]


def _load(paths: Sequence[str], library: str, fix: str, system: Sequence[str] = (),
          symbol: str = "") -> CtypesBinding:
    """The first of ``paths``, then of the system's ``lib<name>`` for each of ``system`` (default
    ``library``), that loads and (when given) exports ``symbol``."""
    found = [ctypes.util.find_library(name) for name in system or (library,)]
    errors = []
    for path in [*paths, *[f for f in found if f]]:
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            errors.append(f"{path}: {exc}")
            continue
        if symbol and not hasattr(lib, symbol):
            errors.append(f"{path}: no {symbol}")
            continue
        return CtypesBinding(lib, library, path)
    raise BackendUnavailableError(f"lib{library} not found ({'; '.join(errors) or 'no candidates'})",
                                  fix=fix)


@functools.lru_cache(maxsize=1)
def nvrtc() -> CtypesBinding:
    """NVRTC from the pip wheel (or the system).

    Raises:
        BackendUnavailableError: no libnvrtc could be loaded.
    """
    paths = _wheel_files("lib/libnvrtc.so*") + _wheel_files("bin/nvrtc64_*.dll")
    # libnvrtc dlopens its builtins by soname; the wheel's lib dir is not on the loader path.
    for builtins in _wheel_files("lib/libnvrtc-builtins.so*"):
        if ".alt." not in builtins:
            try:
                ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue
    return _load([p for p in paths if "builtins" not in p and ".alt." not in p], "nvrtc",
                 "pip install 'nvidia-cuda-nvrtc==13.0.*' nvidia-cuda-runtime "
                 "(the 'nvrtc' extra of hurray_gpu).")


@functools.lru_cache(maxsize=1)
def hiprtc() -> CtypesBinding:
    """hipRTC from a ROCm install (``$ROCM_PATH``, ``$ROCM_HOME``, ``/opt/rocm``) or the system.

    ROCm before 5.3 (Debian 12's 5.2 among them) has no libhiprtc: hipRTC lives inside
    libamdhip64, so that library is the last candidate, taken only if it exports hipRTC.

    Raises:
        BackendUnavailableError: neither libhiprtc nor a libamdhip64 with hipRTC loads.
    """
    roots = _roots(("ROCM_PATH", "ROCM_HOME"), "/opt/rocm")
    paths = [p for name in ("libhiprtc.so*", "libamdhip64.so*") for root in roots
             for p in sorted(glob.glob(os.path.join(root, "lib*", name)))]
    return _load(paths, "hiprtc", "install ROCm (hipRTC ships with it, it is not on PyPI; on "
                 "Debian/Ubuntu: apt-get install libamdhip64-dev) and set ROCM_PATH to its root "
                 "if it is not /opt/rocm.", system=("hiprtc", "amdhip64"),
                 symbol="hiprtcCreateProgram")


def _comgr(rtc: CtypesBinding) -> Any:
    """The code-object manager (comgr) hipRTC compiles through: linked into it (its symbols
    resolve through its handle), else the one beside it or on the loader path (ROCm 5.2's
    libamdhip64 dlopens libamd_comgr.so.2 by name), else None."""
    if getattr(rtc.lib, "amd_comgr_get_isa_count", None) is not None:
        return rtc.lib
    near = sorted(glob.glob(os.path.join(os.path.dirname(rtc.origin), "libamd_comgr.so*")))
    for path in [*near, "libamd_comgr.so.2", ctypes.util.find_library("amd_comgr")]:
        try:
            return ctypes.CDLL(path) if path else None
        except OSError:
            continue
    return None


def amdgpu_targets(rtc: Binding) -> frozenset[str] | None:
    """The gfx targets (``gfx90a``, no feature flags) a ctypes-loaded hipRTC can compile for,
    as its comgr lists them; None where they cannot be listed (CuPy's binding, no comgr)."""
    comgr = _comgr(rtc) if isinstance(rtc, CtypesBinding) and rtc.library == "hiprtc" else None
    count = ctypes.c_size_t()
    if comgr is None or comgr.amd_comgr_get_isa_count(ctypes.byref(count)) != 0:
        return None
    names = set()
    for index in range(count.value):
        name = ctypes.c_char_p()
        if comgr.amd_comgr_get_isa_name(ctypes.c_size_t(index), ctypes.byref(name)) == 0:
            # "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" -> "gfx90a"
            names.add((name.value or b"").decode().rpartition("--")[2].split(":")[0])
    return frozenset(names - {""})


def binding(hip: bool, cupy: Any | None) -> Binding:
    """CuPy's binding when ``cupy`` is given, else the library loaded with ctypes.

    Raises:
        BackendUnavailableError: no CuPy and no loadable library.
    """
    if cupy is not None:
        return CupyBinding(cupy, "hiprtc" if hip else "nvrtc")
    return hiprtc() if hip else nvrtc()


@functools.lru_cache(maxsize=2)
def include_dirs(hip: bool) -> tuple[str, ...]:
    """The header directory the kernels' ``#include`` needs (cuda_fp16.h, hip/hip_fp16.h), or ().

    CUDA: the ``nvidia-cuda-runtime`` wheel, else CUDA Python's pathfinder (CuPy's way), else
    ``$CUDA_PATH``, ``$CUDA_HOME``, ``/usr/local/cuda``; ROCm: its root's ``include``.
    """
    if hip:
        found = [os.path.join(r, "include") for r in _roots(("ROCM_PATH", "ROCM_HOME"),
                                                              "/opt/rocm")]
        return tuple(d for d in found if os.path.isfile(os.path.join(d, "hip", "hip_fp16.h")))[:1]
    found = [os.path.dirname(h) for h in _wheel_files("include/cuda_fp16.h")]
    try:
        from cuda.pathfinder import find_nvidia_header_directory  # type: ignore[import-not-found]

        found.append(find_nvidia_header_directory("cudart") or "")
    except Exception:  # noqa: BLE001, S110 - absent or failing: the next candidates decide
        pass
    found += [os.path.join(r, "include") for r in _roots(("CUDA_PATH", "CUDA_HOME"),
                                                          "/usr/local/cuda")]
    return tuple(d for d in found if d and os.path.isfile(os.path.join(d, "cuda_fp16.h")))[:1]
