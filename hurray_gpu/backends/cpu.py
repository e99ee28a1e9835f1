"""CPU backend (device tag 0x00): host memory, kernels as C11 + OpenMP (or threads) built by the
host cc or zig cc (see hostcc.py).

The tinygrad ClangDevice model: render C, compile a shared object, load it with ctypes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import platform
import shlex
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_gpu import config
from hurray_gpu.backends.hostcc import INSTALL_FIX, SEARCHED, Toolchain, find_toolchain
from hurray_gpu.errors import BackendUnavailableError, CompileError, DeviceError, UnsupportedOpError
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.hostmem import aligned_empty, pool_alignment
from hurray_gpu.runtime.memory import DEFAULT_POOL_LIMIT, Allocation, Allocator, MemoryClass
from hurray_gpu.runtime.program import Compiler, Program

__all__ = ["HOST_ISA_TAG", "CPUAllocator", "CPUCompiler", "CPUDevice", "CPUProgram", "DEVICE",
           "check"]

# Standard buffers are aligned as pool_alignment says (64 bytes and up: Hurray requires 64);
# pinned memory is page aligned so mlock covers exactly its own pages.
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
COMPILE_TIMEOUT_S = 120


def check(status: int, what: str = "host call") -> None:
    """Raise DeviceError for a non-zero libc status (errno attached)."""
    if status != 0:
        err = ctypes.get_errno()
        raise DeviceError(f"{what} failed with status {status}: {os.strerror(err)} (errno {err})",
                          fix="report it with the errno: libc refused to release page-locked "
                              "memory, which stays locked until the process exits.")


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name, use_errno=True) if name else None


def host_pool_limit() -> int:
    """The cpu pool's limit: an eighth of physical memory, at least DEFAULT_POOL_LIMIT, so it
    keeps a multi-GiB result for the next (docs/reliability.md: fresh memory's first touch)."""
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * PAGE
    except (ValueError, OSError, AttributeError):
        physical = 0
    return max(DEFAULT_POOL_LIMIT, physical // 8)


class CPUAllocator(Allocator):
    """numpy-backed host memory; host_pinned is page-aligned and mlock'ed. A standard buffer
    is aligned to :func:`pool_alignment` of its size (up to 2 MiB), so any pooled buffer
    serves any request of its size."""

    host_memory = True

    def __init__(self, device: Device, pool_limit: int | None = None) -> None:
        super().__init__(device, host_pool_limit() if pool_limit is None else pool_limit)

    def _alloc(self, nbytes: int, memory_class: MemoryClass) -> np.ndarray:
        if memory_class == MemoryClass.HOST_PINNED:
            return self._alloc_pinned(nbytes)
        return aligned_empty(nbytes, pool_alignment(nbytes))

    def _alloc_pinned(self, nbytes: int) -> np.ndarray:
        array = aligned_empty(-(-nbytes // PAGE) * PAGE, PAGE)
        libc = _libc()
        if libc.mlock(ctypes.c_void_p(array.ctypes.data), ctypes.c_size_t(array.nbytes)) != 0:
            err = ctypes.get_errno()
            raise UnsupportedOpError(
                f"page-locking {nbytes} bytes failed: {os.strerror(err)} (errno {err})",
                fix="raise the locked-memory limit (ulimit -l / RLIMIT_MEMLOCK) or use "
                    "standard memory.")
        return array[:nbytes]

    def _free(self, raw: np.ndarray, nbytes: int, memory_class: MemoryClass) -> None:
        if memory_class == MemoryClass.HOST_PINNED:
            size = -(-nbytes // PAGE) * PAGE
            check(_libc().munlock(ctypes.c_void_p(raw.ctypes.data), ctypes.c_size_t(size)),
                  "munlock")

    def _copyin(self, raw: np.ndarray, src: memoryview) -> None:
        raw[:] = np.frombuffer(src, dtype=np.uint8)

    def _copyout(self, dest: memoryview, raw: np.ndarray) -> None:
        np.frombuffer(dest, dtype=np.uint8)[:] = raw

    def _offset(self, raw: np.ndarray, offset: int, nbytes: int) -> np.ndarray:
        return raw[offset:offset + nbytes]

    def _copy(self, dest: np.ndarray, src: np.ndarray, nbytes: int) -> None:
        np.copyto(dest, src)  # a memmove: both are host memory


@functools.cache
def _stream_bytes() -> int:
    """Output bytes beyond which host kernels write past the cache (non-temporal stores, see
    SCALE8): the largest CPU cache sysfs reports, capped at 16 MiB per CPU this process may
    run on (32 MiB when sysfs cannot be read). A VM's sysfs may report its host's whole cache
    (480 MiB on a 2-vCPU guest), and with that threshold no output ever streamed: measured
    there, MXFP8 -> bf16 reached 0.67 of copy bandwidth with plain stores and 0.80 streaming,
    NF4 -> bf16 0.65 and 1.15."""
    sizes = []
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:  # listdir and bytes: a glob cost a warm first call half a millisecond
        paths = [f"{root}/{n}/size" for n in os.listdir(root) if n.startswith("index")]
    except OSError:
        paths = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                text = handle.read().decode("utf-8", "replace").strip()
            sizes.append(int(text[:-1]) << (10 if text[-1] == "K" else 20) if text[-1] in "KM"
                         else int(text))
        except (OSError, ValueError, IndexError):
            continue
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(max(sizes, default=32 << 20), (16 << 20) * (cpus or 1))


# Kernels that are faster with the host's instruction set opt in with this tag (the table
# dequant kernels: AVX-512 vectorises their per-block table builds). Not every kernel: gcc
# vectorises the affine 8-bit loop worse with AVX-512 than with the portable flags.
HOST_ISA_TAG = "host_isa"


class CPUCompiler(Compiler):
    """Compiles host C into a shared object (the binary that is cached) with the toolchain
    :mod:`hostcc` finds: a system cc, else the ziglang wheel's zig cc. With neither, the
    cached kernels still load (keyed by the recorded identity of the compiler that built
    them) and any other kernel is refused."""

    backend = "cpu"

    def __init__(self, identity: str) -> None:
        super().__init__(identity)
        self._toolchain: Toolchain | None = None

    @property
    def toolchain(self) -> Toolchain:
        """The toolchain, found on first use (it may run the compiler: not at device open).

        Raises:
            BackendUnavailableError: no compiler, and none built kernels on this host before.
        """
        if self._toolchain is None:
            found = find_toolchain()
            if found is None:
                raise BackendUnavailableError(
                    f"no C compiler to build cpu kernels (looked for {SEARCHED}) and no "
                    "kernels built on this machine before", fix=INSTALL_FIX)
            self._toolchain = found
        return self._toolchain

    def version(self) -> str:
        return self.toolchain.version

    def options(self, host_isa: bool = False) -> tuple[str, ...]:
        """Flags for a kernel: OpenMP where the compiler has it, else POSIX threads.

        Args:
            host_isa: also target this host's instruction set (kernels tagged
                ``HOST_ISA_TAG``); the flags are spelled out, so they key the cache.
        """
        # -O3 vectorises the loops with a counter-only index (e.g. 8-bit dequantization), which
        # -O2 leaves scalar. -ffp-contract=off is -std=c11's default, said out loud: no fused
        # multiply-adds beyond FMA(), so kernels round every operation as their references.
        # -fno-trapping-math lets a conditional multiply become a select (no kernel unmasks FP
        # traps, so results are unchanged), which keeps table lookups like MX scaling vectorised.
        tc = self.toolchain
        flags: tuple[str, ...] = ("-O3", "-std=c11", "-fno-math-errno", "-ffp-contract=off",
                                  "-fno-trapping-math")
        if host_isa:
            flags += (*tc.native, f"-DHG_STREAM_BYTES={_stream_bytes()}u")
        else:
            flags += tc.portable
        return flags + tc.parallel

    def compile(self, source: str, options: Sequence[str] = ()) -> bytes:
        command = self.toolchain.command
        if not command:
            where = getattr(self.cache, "root", "the kernel cache")
            raise BackendUnavailableError(
                f"no C compiler to build this cpu kernel: it is not among the kernels cached "
                f"here ({where}) by {self.toolchain.version}", fix=INSTALL_FIX)
        with tempfile.TemporaryDirectory(prefix="hurray_gpu_cc_") as tmp:
            src, out = os.path.join(tmp, "kernel.c"), os.path.join(tmp, "kernel.so")
            with open(src, "w", encoding="utf-8") as handle:
                handle.write(source)
            cmd = [*command, *options, "-shared", "-fPIC", src, "-o", out, "-lm"]
            try:
                done = subprocess.run(cmd, capture_output=True, text=True,
                                      timeout=COMPILE_TIMEOUT_S, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise CompileError(f"{command[0]} failed to run: {exc}", source,
                                   tuple(options)) from exc
            if done.returncode != 0:
                raise CompileError(f"{shlex.join(command)} rejected the kernel", source,
                                   tuple(options), done.stderr)
            with open(out, "rb") as handle:
                return handle.read()


_ENTRY_ARGTYPES = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint32),
                   ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]


@functools.lru_cache(maxsize=1)
def _prefer_passive_openmp() -> str | None:
    """Default ``OMP_WAIT_POLICY`` to PASSIVE before the first kernel library loads libgomp.

    libgomp's default policy keeps its worker threads spinning after every parallel region;
    on a small busy machine they steal the CPU from the launching thread, so a tiny kernel
    launch costs milliseconds instead of tens of microseconds. Kernels here are short and launched from
    Python, so sleeping workers are the right trade. libgomp reads the variable only once,
    when it is first loaded: if another library (or an earlier import) already loaded it,
    this setting cannot take effect, and a policy the user set is always kept.

    Returns:
        The policy now in the environment.
    """
    return config.omp_wait_policy(default="PASSIVE")


class CPUProgram(Program):
    """A kernel shared object loaded with ctypes; calls release the GIL."""

    def __init__(self, device: Device, kernel: Any, binary: bytes) -> None:
        super().__init__(device, kernel, binary)
        _prefer_passive_openmp()  # before CDLL: the kernel's libgomp dependency reads it
        with tempfile.NamedTemporaryFile(prefix="hurray_gpu_", suffix=".so", delete=False) as f:
            f.write(binary)
            path = f.name
        try:
            self._lib = ctypes.CDLL(path)
        except OSError as exc:
            # A kernel built with OpenMP needs libgomp: a cache warmed where gcc was installed
            # does not load where neither gcc nor libgomp is.
            fix = ("install the library it names (libgomp.so.1: apt-get install libgomp1), or "
                   "pip install ziglang, whose kernels need none." if "libgomp" in str(exc)
                   else "clear HURRAY_GPU_CACHE_DIR and retry.")
            raise DeviceError(f"cannot load compiled kernel {kernel.name}: {exc}",
                              fix=fix) from exc
        finally:
            os.unlink(path)  # the mapping stays valid after unlink
        self._fn = getattr(self._lib, kernel.name)
        self._fn.argtypes = _ENTRY_ARGTYPES
        self._fn.restype = None
        self._ptrs = ctypes.c_void_p * max(1, len(kernel.buffers))
        self._words = ctypes.c_uint32 * max(1, len(kernel.scalars))
        # id of a launch's typed-scalar tuple -> (the tuple, its packed words): a Launch keeps
        # its tuple, so a repeated launch passes the same words (the entry reads them const).
        self._packed: dict[int, tuple[Sequence[np.generic], Any]] = {}

    def _launch(self, buffers: list[Allocation], scalars: Sequence[np.generic],
                global_size: tuple[int, int, int], local_size: tuple[int, int, int],
                wait: bool) -> float | None:
        # Small launches (a KV decode step) are dominated by this marshalling: addresses are
        # cached per allocation (its memory never moves) and every scalar is one 32-bit word.
        ptrs = self._ptrs(*[b.address or _address(b) for b in buffers])
        packed = self._packed.get(id(scalars))
        if packed is None or packed[0] is not scalars:
            packed = (scalars, self._words.from_buffer_copy(
                b"".join([s.tobytes() for s in scalars]) or bytes(4)))
            if type(scalars) is tuple:  # immutable: safe to recognise by identity
                if len(self._packed) >= 64:
                    self._packed.clear()
                self._packed[id(scalars)] = packed  # the tuple is kept: its id is not reused
        start = time.perf_counter()
        self._fn(ptrs, packed[1], *global_size)
        return time.perf_counter() - start if wait else None

    def host_call(self, launch: Any, fixed: Any = None) -> Any:
        # The entry without argtypes, its words and grid as ready ctypes values, and one
        # address array per call site, filled once with the fixed addresses and per call with
        # the others: ctypes then converts nothing (a thread that finds the array in use by
        # another builds its own).
        if launch.grid is None or not launch.grid[0] * launch.grid[1] * launch.grid[2]:
            return None  # the checked launch raises why, or runs nothing
        fn = self._lib[self.kernel.name]
        fn.restype = None
        words = self._words.from_buffer_copy(b"".join([s.tobytes() for s in launch.typed])
                                             or bytes(4))
        grid = [ctypes.c_int64(n) for n in launch.grid]
        fixed = dict(fixed or {})
        base = [_address(fixed[i]) if i in fixed else None for i in range(len(self.kernel.buffers))]
        moving = [i for i in range(len(base)) if i not in fixed]
        ptrs, busy = self._ptrs, threading.Lock()
        mine = ptrs(*base)

        def call(allocations: Sequence[Allocation]) -> None:
            held = busy.acquire(False)
            into = mine if held else ptrs(*base)
            try:
                for i, a in zip(moving, allocations, strict=True):
                    into[i] = a.address or _address(a)
                fn(into, words, *grid)
            finally:
                if held:
                    busy.release()

        return call


# Host addresses of root arrays by id: a pooled buffer comes back as a new Allocation over the
# same array, and asking NumPy for an address costs more than the rest of a small launch.
_ADDRESSES: dict[int, tuple[weakref.ref[np.ndarray], int]] = {}


def _forget(key: int, _dead: object) -> None:
    _ADDRESSES.pop(key, None)


def _address(allocation: Allocation) -> int | None:
    """The host address of ``allocation``'s bytes (None when empty), computed once."""
    cached = allocation.address
    if cached is False:
        raw = allocation.raw
        hit = _ADDRESSES.get(id(raw))
        if not allocation.nbytes:
            cached = None
        elif hit is not None and hit[0]() is raw:
            cached = hit[1]
        else:
            try:  # a third of the cost of raw.ctypes.data
                cached = ctypes.addressof(ctypes.c_uint8.from_buffer(raw))
            except TypeError:  # read-only memory
                cached = raw.ctypes.data
            if allocation.base is None and not allocation.external:  # pooled memory
                key = id(raw)  # the entry leaves with its array
                _ADDRESSES[key] = (weakref.ref(raw, functools.partial(_forget, key)), cached)
        allocation.address = cached
    return cached


class CPUDevice(Device):
    """The host CPU: always one device."""

    tag = 0x00
    kind = "cpu"
    dialect = "c"
    program_cls = CPUProgram

    def __init__(self, index: int = 0) -> None:
        classes = [MemoryClass.STANDARD]
        libc = _libc()
        if libc is not None and hasattr(libc, "mlock"):
            classes.append(MemoryClass.HOST_PINNED)
        name = platform.processor() or platform.machine() or "cpu"
        super().__init__(index, name, CPUAllocator(self), CPUCompiler(self.identity_for(name)),
                         classes)

    @staticmethod
    def identity_for(name: str) -> str:
        """Machine and OS: a shared object built here runs on any machine matching both."""
        return f"cpu:{platform.machine()}:{platform.system()}:{name}"

    @classmethod
    def count(cls) -> int:
        return 1

    def identity(self) -> str:
        return self.identity_for(self.name)

    @functools.cached_property
    def max_alloc(self) -> int:
        """Physical memory: one buffer larger than RAM is refused before numpy tries (read
        once: every allocation asks)."""
        return self.memory_info()[1]

    def memory_info(self) -> tuple[int, int]:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * PAGE
            total = os.sysconf("SC_PHYS_PAGES") * PAGE
        except (ValueError, OSError, AttributeError):
            return (0, 0)
        return (free, total)

    def kernel_support(self) -> tuple[str, str]:
        compiler: CPUCompiler = self.compiler  # type: ignore[assignment]
        try:
            toolchain = compiler.toolchain
        except BackendUnavailableError as exc:
            return "none", str(exc)
        if toolchain.command:
            return "all", ""
        return "cached", (f"no C compiler (looked for {SEARCHED}): kernels cached here by "
                          f"{toolchain.version} still run; others cannot be built. "
                          f"Fix: {INSTALL_FIX}")

    def compile_options(self, kernel: Any) -> tuple[str, ...]:
        compiler: CPUCompiler = self.compiler  # type: ignore[assignment]
        return compiler.options(host_isa=HOST_ISA_TAG in getattr(kernel, "tags", ()))


DEVICE = CPUDevice
