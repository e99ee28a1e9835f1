"""The cpu backend's C toolchain: which compiler builds host kernels (a system cc, else the
``ziglang`` wheel's ``zig cc``), what it offers on this CPU (OpenMP, the instruction-set flags of
``-march=native``), and, with no compiler installed, the identity of the one that built the
kernels already in the cache, so that a warm cache runs without any compiler."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

import blake3

from hurray_gpu import config
from hurray_gpu.errors import BackendUnavailableError
from hurray_gpu.runtime.cache import default_cache

__all__ = ["INSTALL_FIX", "SEARCHED", "Toolchain", "find_command", "find_toolchain"]

# Where a compiler is looked for, in order (every refusal says so).
SEARCHED = "$HURRAY_GPU_CC, $CC, cc/gcc/clang on PATH, the ziglang package"
INSTALL_FIX = ("pip install ziglang (or pip install 'hurray_gpu[cpu]'; its zig cc builds the "
               "kernels), or apt-get install gcc, or set CC=/path/to/cc.")
PROBE_TIMEOUT_S = 120  # zig's first run builds its libc stubs: seconds on a small machine


@dataclass(frozen=True)
class Toolchain:
    """The compiler that builds cpu kernels here, or the one that built the cached ones.

    Attributes:
        command: the argv prefix that compiles C (``("/usr/bin/gcc",)``,
            ``("/.../ziglang/zig", "cc")``); empty when no compiler is installed and this is
            the recorded identity of the one that built this host's cached kernels.
        origin: where ``command`` came from: ``HURRAY_GPU_CC``, ``CC``, ``PATH``, ``ziglang``,
            or ``recorded`` (no compiler: cached kernels only).
        version: the compiler's version line (part of every kernel's cache key).
        openmp: kernels use OpenMP (``-fopenmp``); else the threads of ``-DHG_THREADS``.
        native: the flags that target this CPU's instruction set: gcc's expansion of
            ``-march=native``; for a compiler that does not print one, ``-march=native`` and
            a digest of this CPU, so that a cache key still names the instruction set.
        portable: the flags that target the architecture's baseline (zig targets this CPU
            unless told otherwise).
    """

    command: tuple[str, ...]
    origin: str
    version: str
    openmp: bool
    native: tuple[str, ...]
    portable: tuple[str, ...] = ()

    @property
    def parallel(self) -> tuple[str, ...]:
        """The flags that make kernels use every core: OpenMP, else POSIX threads."""
        return ("-fopenmp",) if self.openmp else ("-DHG_THREADS", "-pthread")

    def describe(self) -> str:
        """One line for ``hurray-gpu devices``: what builds kernels and how they run."""
        if not self.command:
            return f"none installed; kernels cached here by {self.version} still load"
        how = "OpenMP" if self.openmp else "threads (no OpenMP)"
        return f"{shlex.join(self.command)} [{self.origin}]: {self.version}; {how}"


def _executable(word: str) -> str | None:
    found = shutil.which(word)
    if found is None and os.path.isfile(word) and os.access(word, os.X_OK):
        found = word
    return found


def _zig() -> str | None:
    """The zig binary of the ``ziglang`` wheel (what ``python -m ziglang`` runs), found
    without importing the package."""
    try:
        spec = importlib.util.find_spec("ziglang")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        exe = _executable(os.path.join(folder, "zig.exe" if os.name == "nt" else "zig"))
        if exe:
            return exe
    return None


def find_command() -> tuple[tuple[str, ...], str] | None:
    """The compiler command kernels are built with, and where it came from; None if none.

    A compiler a user named ($HURRAY_GPU_CC, else $CC; several words allowed, e.g.
    ``CC="zig cc"``) must exist: it is never silently replaced by another.

    Raises:
        BackendUnavailableError: the named compiler is not an executable.
    """
    named = config.c_compiler_setting()
    if named is not None:
        var, value = named
        words = shlex.split(value)
        exe = _executable(words[0]) if words else None
        if exe is None:
            raise BackendUnavailableError(
                f"${var}={value!r} names no executable C compiler",
                fix=f"set {var} to an installed compiler (e.g. {var}=gcc) or unset it.")
        return (exe, *words[1:]), var
    for name in ("cc", "gcc", "clang"):
        exe = shutil.which(name)
        if exe:
            return (exe,), "PATH"
    zig = _zig()
    return ((zig, "cc"), "ziglang") if zig else None


def _run(command: tuple[str, ...], args: list[str],
         source: str = "") -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run([*command, *args], input=source, capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None


def _version(command: tuple[str, ...], origin: str) -> str:
    done = _run(command, ["--version"])
    if done is None or done.returncode != 0:
        raise BackendUnavailableError(
            f"C compiler {shlex.join(command)} does not run"
            + (f": {done.stderr.strip()[:300]}" if done else ""), fix=INSTALL_FIX)
    line = (done.stdout.splitlines() or [command[0]])[0].strip()
    if origin == "ziglang":  # the wheel's version names its libc headers too
        import importlib.metadata  # here: importing it cost every device open milliseconds

        line = f"zig {importlib.metadata.version('ziglang')} ({line})"
    return line


def _has_openmp(command: tuple[str, ...]) -> bool:
    source = "#include <omp.h>\nint f(void) { return omp_get_max_threads(); }\n"
    with tempfile.TemporaryDirectory() as tmp:
        done = _run(command, ["-fopenmp", "-shared", "-fPIC", "-x", "c", "-", "-o",
                              f"{tmp}/t.so"], source)
    return done is not None and done.returncode == 0


def _native_flags(command: tuple[str, ...], cpu_digest: str) -> tuple[str, ...]:
    """The instruction-set flags ``-march=native`` stands for, spelled out.

    Spelled out, they are part of every kernel's cache key, so a shared object built for one
    host's instruction set is never loaded on a host that lacks it. clang (and zig cc) print
    target features in a form no driver flag takes: there ``-march=native`` stays, with this
    CPU's digest as a define that only keys the cache. Empty when neither works: portable code.
    """
    done = _run(command, ["-march=native", "-E", "-v", "-x", "c", "-", "-o", os.devnull])
    if done is None or done.returncode != 0:
        return ()
    for line in done.stderr.splitlines():
        words = line.split()
        if any(w.startswith("-march=") and w != "-march=native" for w in words):
            return tuple(w for w in words if w.startswith("-m") and w != "-march=native")
    return ("-march=native", f"-DHG_BUILT_FOR_CPU={cpu_digest}")


@functools.cache
def _host_cpu() -> str:
    """What the host's instruction set depends on: the first processor's identity lines."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            first = handle.read(1 << 16).split("\n\n")[0]
    except OSError:
        return platform.processor()
    keep = ("vendor_id", "cpu family", "model", "flags", "isa", "cpu part", "Features")
    return "\n".join(line for line in first.splitlines() if line.startswith(keep))


def _key(*parts: object) -> str:
    return blake3.blake3(json.dumps(["toolchain", 2, *parts]).encode()).hexdigest()


def _host_key() -> str:
    # The compiler-less record: the toolchain that last built kernels on this OS, machine and
    # CPU (another CPU may lack the instruction set its native kernels use).
    return _key("host", platform.system(), platform.machine(), _host_cpu())


def _decode(raw: bytes | None, command: tuple[str, ...], origin: str) -> Toolchain | None:
    if raw is None:
        return None
    try:
        version, openmp, native, portable = json.loads(raw)[:4]
        return Toolchain(command, origin, str(version), bool(openmp),
                         tuple(str(f) for f in native), tuple(str(f) for f in portable))
    except (ValueError, TypeError):
        return None  # an unreadable record is a miss


def _encode(tc: Toolchain) -> bytes:
    return json.dumps([tc.version, tc.openmp, list(tc.native), list(tc.portable)]).encode()


@functools.lru_cache(maxsize=8)
def probe(command: tuple[str, ...], origin: str) -> Toolchain:
    """What ``command`` offers on this host, asked once per binary and CPU.

    Asking runs the compiler three times, far slower than a cached kernel load, so the answer
    is kept in the cpu kernel cache, keyed by the compiler binary's resolved path, size and
    mtime and by this host's CPU: an upgraded compiler, or another machine sharing the cache
    directory, asks again.

    Raises:
        BackendUnavailableError: the compiler does not run.
    """
    cache, cpu = default_cache("cpu"), _host_cpu()
    try:
        real = os.path.realpath(command[0])
        st = os.stat(real)
        key: str | None = _key(real, list(command[1:]), st.st_size, st.st_mtime_ns, cpu)
    except OSError:
        key = None
    found = _decode(cache.load(key), command, origin) if key else None
    if found is None:
        digest = blake3.blake3(cpu.encode()).hexdigest()[:16]
        # zig cc targets the CPU it runs on unless told otherwise; gcc and clang do not.
        portable = ("-mcpu=baseline",) if origin == "ziglang" else ()
        found = Toolchain(command, origin, _version(command, origin), _has_openmp(command),
                          _native_flags(command, digest), portable)
        if key:
            cache.save(key, _encode(found), f"toolchain identity of {real}")
    if _decode(cache.load(_host_key()), (), "recorded") != _untied(found):
        cache.save(_host_key(), _encode(found), "the toolchain that built this host's kernels")
    return found


def _untied(tc: Toolchain) -> Toolchain:
    return Toolchain((), "recorded", tc.version, tc.openmp, tc.native, tc.portable)


def find_toolchain() -> Toolchain | None:
    """The toolchain cpu kernels are built (or were built) with here.

    Returns:
        The installed compiler's toolchain; with none installed, the recorded identity of the
        one that built this host's cached kernels (``command`` empty), so that their cache
        keys are known; None when there is neither.

    Raises:
        BackendUnavailableError: a named compiler is missing, or the compiler does not run.
    """
    found = find_command()
    if found is not None:
        return probe(*found)
    return _decode(default_cache("cpu").load(_host_key()), (), "recorded")
