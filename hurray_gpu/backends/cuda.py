"""CUDA backend (device tag 0x01) over CuPy, imported only when a device is opened.

standard = cudaMalloc, host_pinned = cudaHostAlloc (portable, mapped), unified =
cudaMallocManaged, peer = cudaMalloc with peer access enabled. Kernels: NVRTC -> cubin.
Streams and events are CuPy's (``cupy.cuda.Stream`` / ``Event``). Launches and copies go on
this thread's current hurray_gpu stream of the device, so they run in one order.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import struct
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hurray_gpu.backends.rtc import binding, include_dirs
from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.errors import (
    BackendUnavailableError,
    CompileError,
    DeviceError,
    ProtocolError,
    UnsupportedOpError,
)
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import Allocation, Allocator, MemoryClass
from hurray_gpu.runtime.program import Compiler, Program
from hurray_gpu.runtime.stream import Event, Stream, current_stream

__all__ = ["DEVICE", "CUDAAllocator", "CUDACompiler", "CUDADevice", "CUDAProgram", "CuEvent",
           "CuStream", "IpcEvent", "check", "external_stream", "pack_ipc", "unpack_ipc"]

# cudaError_t / hipError_t values this module acts on (identical in CUDA and HIP).
SUCCESS = 0
ERROR_MEMORY_ALLOCATION = 2
ERROR_INSUFFICIENT_DRIVER = 35
ERROR_NO_DEVICE = 100
ERROR_NOT_READY = 600
ERROR_PEER_ACCESS_ALREADY_ENABLED = 704
# cudaHostAllocPortable | cudaHostAllocMapped (same bits for hipHostMalloc).
HOST_ALLOC_FLAGS = 0x01 | 0x02
# Grid limits per axis (x, y, z) on every CUDA and ROCm GPU this backend targets.
MAX_GRID = (2**31 - 1, 65535, 65535)


def check(status: int, what: str = "CUDA call") -> None:
    """Raise DeviceError unless ``status`` is cudaSuccess (0).

    Args:
        status: a cudaError_t / hipError_t / CUresult value.
        what: the call that returned it.

    Raises:
        DeviceError: for any non-zero status.
    """
    if status != SUCCESS:
        raise DeviceError(f"{what} failed with status {status}",
                          fix="check nvidia-smi / rocm-smi and the driver, then retry.")


def load_cupy(kind: str, hip: bool) -> Any:
    """Import CuPy and check it is the build for this backend.

    Args:
        kind: ``"cuda"`` or ``"rocm"`` (the pip extra that brings the right CuPy).
        hip: True for the ROCm backend (CuPy must be its HIP build).

    Raises:
        BackendUnavailableError: CuPy is missing, or built for the other platform.
    """
    fix = f"pip install 'hurray_gpu[{kind}]'."
    try:
        import cupy
        from cupy.cuda import runtime
    except ImportError as exc:
        raise BackendUnavailableError(f"the {kind} backend needs CuPy ({exc})", fix=fix) from exc
    if bool(getattr(runtime, "is_hip", False)) != hip:
        built = "ROCm/HIP" if not hip else "CUDA"
        raise BackendUnavailableError(f"the installed CuPy is the {built} build, not {kind}",
                                      fix=fix)
    return cupy


def device_status(exc: BaseException) -> int | None:
    """The cudaError_t of a CuPy runtime/driver exception, or None for anything else."""
    status = getattr(exc, "status", None)
    return int(status) if isinstance(status, int) else None


@dataclass(eq=False)
class CUDAMemory:
    """A device address plus the CuPy object that owns (and frees) the memory; ``keep``:
    what must live as long as the memory (the interprocess event of an IPC export)."""

    ptr: int
    owner: Any
    keep: Any = None


# cudaIpcMemHandle_t and cudaIpcEventHandle_t (and HIP's) are 64 opaque bytes.
IPC_HANDLE_BYTES = 64
_IPC_HEAD = "<QQ"  # the IPC record: offset from the handle's base, bytes; then the handles
_IPC_FIX = "attach to a hg.share() of a tensor on this same GPU."


def pack_ipc(offset: int, nbytes: int, handle: bytes, event: bytes = b"") -> bytes:
    """The IPC record of ``nbytes`` at ``offset`` into the allocation ``handle`` opens, with
    the interprocess ``event`` handle of event mode (empty: producer-synced)."""
    return struct.pack(_IPC_HEAD, offset, nbytes) + handle + event


def unpack_ipc(record: bytes) -> tuple[int, int, bytes, bytes]:
    """``(offset, nbytes, memory handle, event handle or b"")`` of a :func:`pack_ipc` record.

    Raises:
        ProtocolError: the record is not one (its length, or no bytes to open).
    """
    head = struct.calcsize(_IPC_HEAD)
    if len(record) not in (head + IPC_HANDLE_BYTES, head + 2 * IPC_HANDLE_BYTES):
        raise ProtocolError(f"a CUDA/ROCm IPC record of {len(record)} bytes, not {head} + 64 "
                            "or + 128", fix=_IPC_FIX)
    offset, nbytes = struct.unpack_from(_IPC_HEAD, record)
    if not nbytes or offset + nbytes >= 1 << 63:
        raise ProtocolError(f"an IPC record of {nbytes} bytes at offset {offset}", fix=_IPC_FIX)
    handle = record[head:head + IPC_HANDLE_BYTES]
    return offset, nbytes, handle, record[head + IPC_HANDLE_BYTES:]


class _Opened:
    """Another process's allocation opened here (cudaIpcOpenMemHandle); closed, after the
    device's queued work, with the last Buffer over it."""

    def __init__(self, device: Any, ptr: int) -> None:
        self.ptr = ptr
        weakref.finalize(self, _close_opened, device, ptr)


def _close_opened(device: Any, ptr: int) -> None:
    try:
        with device.context():
            device.synchronize()
            device.runtime.ipcCloseMemHandle(ptr)
    except Exception:  # noqa: BLE001 - a finaliser cannot raise; shutdown may have torn CuPy down
        pass


class CUDAAllocator(Allocator):
    """Direct CuPy allocations (no CuPy pool underneath: pooling lives in the base class)."""

    pool_fences = True

    def _alloc(self, nbytes: int, memory_class: MemoryClass) -> CUDAMemory:
        dev: CUDADevice = self.device  # type: ignore[assignment]
        memory = dev.cupy.cuda.memory
        with dev.context():
            try:
                if memory_class == MemoryClass.HOST_PINNED:
                    owner = dev.cupy.cuda.pinned_memory.PinnedMemory(nbytes, HOST_ALLOC_FLAGS)
                elif memory_class == MemoryClass.UNIFIED:
                    owner = memory.ManagedMemory(nbytes)
                else:
                    if memory_class == MemoryClass.PEER:
                        dev.enable_peers()
                    owner = memory.Memory(nbytes)
            except dev.runtime.CUDARuntimeError as exc:
                if device_status(exc) == ERROR_MEMORY_ALLOCATION:
                    raise MemoryError(str(exc)) from exc
                check(device_status(exc) or -1, f"allocation of {nbytes} bytes")
                raise
        return CUDAMemory(int(owner.ptr), owner)

    def _free(self, raw: CUDAMemory, nbytes: int, memory_class: MemoryClass) -> None:
        raw.owner = raw.keep = None  # CuPy frees on the last reference

    def _copyin(self, raw: CUDAMemory, src: memoryview) -> None:
        host = np.frombuffer(src, dtype=np.uint8)
        self._memcpy(raw.ptr, host.ctypes.data, host.size, "host to device", True)

    def _copyout(self, dest: memoryview, raw: CUDAMemory) -> None:
        host = np.frombuffer(dest, dtype=np.uint8)
        self._memcpy(host.ctypes.data, raw.ptr, host.size, "device to host", True)

    def _offset(self, raw: CUDAMemory, offset: int, nbytes: int) -> CUDAMemory:
        return CUDAMemory(raw.ptr + offset, raw.owner)

    def _copy(self, dest: CUDAMemory, src: CUDAMemory, nbytes: int) -> None:
        self._memcpy(dest.ptr, src.ptr, nbytes, "device to device", False)

    def _host_view(self, raw: CUDAMemory, nbytes: int) -> np.ndarray | None:
        # Pinned host memory is mapped into the process: NumPy addresses it in place. The
        # pointer object keeps the PinnedMemory (and so the memory) alive with the array.
        pinned = self.device.cupy.cuda.pinned_memory  # type: ignore[attr-defined]
        if not isinstance(raw.owner, pinned.PinnedMemory):
            return None
        pointer = pinned.PinnedMemoryPointer(raw.owner, raw.ptr - int(raw.owner.ptr))
        return np.frombuffer(pointer, np.uint8, count=nbytes)

    def _memcpy(self, dst: int, src: int, nbytes: int, what: str, host: bool) -> None:
        """Queue the copy on the current stream, after the work that wrote ``src``; ``host``:
        wait for it, as the host reads the bytes, or may reuse ``src`` (a pageable copy-in
        returns before its DMA lands; a pinned one reads ``src`` asynchronously)."""
        dev: CUDADevice = self.device  # type: ignore[assignment]
        runtime = dev.runtime
        with dev.context():
            try:
                stream = current_stream(dev).cupy_stream  # type: ignore[attr-defined]
                # Unified addressing: the driver works out host/device/managed on its own.
                runtime.memcpyAsync(dst, src, nbytes, runtime.memcpyDefault, stream.ptr)
                if host:
                    stream.synchronize()
            except runtime.CUDARuntimeError as exc:
                check(device_status(exc) or -1, f"cudaMemcpyAsync ({what})")


class CUDACompiler(Compiler):
    """NVRTC: CUDA C -> cubin (real ``sm_XY``) or PTX (virtual ``compute_XY``), GPU or not.

    A device's compiler and the offline check (:meth:`offline`) are this one class: one option
    list (:meth:`options`), include path and binary getter; only the ``kernels.rtc.Binding``
    that reaches the library differs (CuPy's when there is CuPy, else ctypes).

    Args:
        identity: the target identity (name, architecture, driver and runtime versions).
        cupy: the imported CuPy module, or None (the library is loaded with ctypes).

    Raises:
        BackendUnavailableError: no CuPy and no loadable library.
    """

    backend = "cuda"
    hip: ClassVar[bool] = False
    arch_flag: ClassVar[str] = "--gpu-architecture"
    # No contraction of a*b+c into one rounding the kernel did not ask for (FMA/FMA_RN ask):
    # kernels must round like their references and the other backends. Part of every cache key.
    codegen: ClassVar[tuple[str, ...]] = ("-fmad=false",)

    def __init__(self, identity: str, cupy: Any = None) -> None:
        self.cupy = cupy
        self.rtc = binding(self.hip, cupy)
        super().__init__(identity)

    @classmethod
    def offline(cls, arch: str) -> CUDACompiler:
        """The compiler without a device, for ``arch`` (``sm_90``, ``compute_90``, ``gfx942``),
        through this backend's CuPy when it imports, as on a device, else with ctypes.

        Raises:
            BackendUnavailableError: no CuPy and no loadable library.
        """
        try:
            cupy = load_cupy(cls.backend, cls.hip)
        except BackendUnavailableError:
            cupy = None
        return cls(f"{cls.backend}:offline|{arch}", cupy)

    @classmethod
    def options(cls, arch: str) -> tuple[str, ...]:
        """Every compile's options for ``arch``: the target, then :attr:`codegen`."""
        return (f"{cls.arch_flag}={arch}", *cls.codegen)

    def version(self) -> str:
        """The runtime compiler's version (part of the cache key)."""
        return self.rtc.version().replace(" ", "-")

    def binary_getter(self, options: Sequence[str]) -> str:
        """``CUBIN`` for a real architecture (sm_XY), ``PTX`` for a virtual one."""
        return "PTX" if any("compute_" in opt for opt in options) else "CUBIN"

    def compile(self, source: str, options: Sequence[str] = ()) -> bytes:
        """Compile CUDA/HIP C to a loadable binary (``-I`` of ``rtc.include_dirs`` added: the
        headers do not change the binary, so they stay out of the cache key).

        Raises:
            CompileError: the runtime compiler rejected the source.
            BackendUnavailableError: NVRTC needs cuda_fp16.h and it is not installed.
        """
        rtc, opts, dirs = self.rtc, tuple(options), include_dirs(self.hip)
        # NVRTC has no cuda_fp16.h of its own; hipRTC may find the HIP headers by itself.
        if not dirs and not self.hip and "#include" in source:
            raise BackendUnavailableError("NVRTC needs the CUDA headers (cuda_fp16.h), none found",
                                          fix="pip install 'nvidia-cuda-runtime==13.0.*', or "
                                              "set CUDA_PATH to a CUDA toolkit.")
        prog = rtc.create(source, "hurray_gpu_kernel.cu")
        try:
            status = rtc.compile(prog, opts + tuple(f"-I{d}" for d in dirs))
            if status != 0:
                raise CompileError(f"{self.backend} runtime compilation failed ({rtc.library} "
                                   f"status {status}, via {rtc.origin})", source, opts,
                                   rtc.log(prog))
            return rtc.code(prog, self.binary_getter(opts))
        finally:
            rtc.destroy(prog)


class CUDAProgram(Program):
    """A loaded module and its entry function; launches go on the current stream."""

    def __init__(self, device: Device, kernel: KernelDef, binary: bytes) -> None:
        super().__init__(device, kernel, binary)
        dev: CUDADevice = device  # type: ignore[assignment]
        with dev.context():
            try:
                self._module = dev.cupy.cuda.function.Module()
                self._module.load(binary)
                self._function = self._module.get_function(kernel.name)
            except Exception as exc:  # noqa: BLE001 - driver errors of any CuPy version
                raise CompileError(f"the {dev.kind} binary of {kernel.name} did not load", "",
                                   (), str(exc), fix="clear HURRAY_GPU_CACHE_DIR and retry.") from exc

    def _launch(self, buffers: list[Allocation], scalars: Sequence[np.generic],
                global_size: tuple[int, int, int], local_size: tuple[int, int, int],
                wait: bool) -> float | None:
        dev: CUDADevice = self.device  # type: ignore[assignment]
        grid = tuple(-(-g // loc) for g, loc in zip(global_size, local_size, strict=True))
        if any(g > limit for g, limit in zip(grid, MAX_GRID, strict=True)):
            raise UnsupportedOpError(f"grid {grid} exceeds the {dev.kind} limits {MAX_GRID}",
                                     fix="launch fewer work items per call.")
        # Pointers go as 64-bit integers: CuPy passes numpy scalars by value.
        args = [np.uint64(b.raw.ptr if b.nbytes else 0) for b in buffers] + list(scalars)
        cuda = dev.cupy.cuda
        with dev.context():
            try:
                stream = current_stream(dev).cupy_stream  # type: ignore[attr-defined]
                start, end = (cuda.Event(), cuda.Event()) if wait else (None, None)
                if start is not None:
                    start.record(stream)
                self._function(grid, local_size, args, stream=stream)
                if end is None:
                    return None
                end.record(stream)
                end.synchronize()
                return float(cuda.get_elapsed_time(start, end)) / 1000.0
            except (dev.runtime.CUDARuntimeError, cuda.driver.CUDADriverError) as exc:
                check(device_status(exc) or -1, f"launch of {self.kernel.name}")
                raise


class CuStream(Stream):
    """A CuPy stream of one CUDA/ROCm device (non-blocking: no implicit legacy-stream sync).

    ``with stream:`` makes its device current and enters the CuPy stream too, so CuPy work
    in the block runs on it as well as every launch and copy hurray_gpu queues. The default
    stream is CuPy's current stream, so code using ``with cupy.cuda.Stream():`` directly stays
    in order too.

    Args:
        device: the CUDA/ROCm Device or spec.
        ptr: wrap an existing ``cudaStream_t`` / ``hipStream_t`` (not owned) instead of
            creating one.
    """

    def __init__(self, device: Any = None, *, _default: bool = False,
                 ptr: int | None = None) -> None:
        super().__init__(device, _default=_default)
        dev: Any = self.device
        self._cp: Any = None
        if _default:
            return
        with dev.context():
            if ptr is None:
                self._cp = dev.cupy.cuda.Stream(non_blocking=True)
                dev.streams.add(self)  # pooled memory waits for it (Allocator.pool_fences)
            else:
                if not isinstance(ptr, int) or isinstance(ptr, bool) or ptr < 0:
                    raise UnsupportedOpError(f"stream pointer {ptr!r} is not a handle",
                                             fix="pass the integer value of a cudaStream_t.")
                self._cp = dev.cupy.cuda.Stream.from_external(_Foreign(ptr))

    @property
    def cupy_stream(self) -> Any:
        """The CuPy stream (for the default stream: CuPy's current one on this thread)."""
        if self._cp is not None:
            return self._cp
        dev: Any = self.device
        with dev.context():
            return dev.cupy.cuda.get_current_stream()

    @property
    def handle(self) -> int:
        """The native stream pointer (0 for the legacy default stream)."""
        return int(self.cupy_stream.ptr)

    def __enter__(self) -> Stream:
        # The device first: CuPy enters a stream only while its device is current. Each step
        # is undone if a later one fails, so a failed enter leaves no stack pushed.
        device = self.device.context()  # type: ignore[attr-defined]
        device.__enter__()
        try:
            if self._cp is not None:
                self._cp.__enter__()
        except BaseException:
            device.__exit__(None, None, None)
            raise
        return super().__enter__()

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)  # refuses an out-of-order exit before anything is popped
        try:
            if self._cp is not None:
                self._cp.__exit__(*exc)
        finally:
            self.device.context().__exit__(None, None, None)  # type: ignore[attr-defined]

    def synchronize(self) -> None:
        dev: Any = self.device
        with dev.context():
            self.cupy_stream.synchronize()

    def query(self) -> bool:
        return bool(self.cupy_stream.done)


@dataclass(frozen=True)
class _Foreign:
    """A stream pointer in the CUDA stream protocol, which CuPy wraps without owning it."""

    ptr: int

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.ptr)


def external_stream(device: Any, ptr: int) -> CuStream:
    """A hurray_gpu Stream over a foreign stream pointer (torch's ``stream.cuda_stream``...).

    Raises:
        UnsupportedOpError: ``ptr`` is not a non-negative integer.
    """
    return CuStream(device, ptr=ptr)


class CuEvent(Event):
    """A CuPy event; ``elapsed_ms`` is ``cudaEventElapsedTime``."""

    _ev: Any = None

    def _record(self, stream: Stream) -> None:
        dev: Any = self.device
        cs: CuStream = stream  # type: ignore[assignment]
        with dev.context():
            if self._ev is None:
                self._ev = dev.cupy.cuda.Event(disable_timing=not self.timing)
            self._ev.record(cs.cupy_stream)

    def _wait(self, stream: Stream) -> None:
        dev: Any = self.device
        cs: CuStream = stream  # type: ignore[assignment]
        with dev.context():
            cs.cupy_stream.wait_event(self._ev)

    def _synchronize(self) -> None:
        self._ev.synchronize()

    def _query(self) -> bool:
        return bool(self._ev.done)

    def _elapsed_ms(self, end: Event) -> float:
        dev: Any = self.device
        return float(dev.cupy.cuda.get_elapsed_time(self._ev, end._ev))  # type: ignore[attr-defined]

    def _release(self) -> None:
        self._ev = None  # CuPy destroys the cudaEvent_t with its last reference


class IpcEvent(CuEvent):
    """The producer's interprocess event, opened here: consumers wait on it, only its
    producer records it."""

    def __init__(self, device: Any, ptr: int) -> None:
        super().__init__(device, timing=False)
        self._ptr, self.recorded = ptr, True

    def _record(self, stream: Stream) -> None:
        raise UnsupportedOpError("an IPC event is recorded by its producer only",
                                 fix="record an Event of your own instead.")

    def _wait(self, stream: Stream) -> None:
        dev: Any = self.device
        with dev.context():
            dev.runtime.streamWaitEvent(stream.cupy_stream.ptr, self._ptr, 0)  # type: ignore[attr-defined]

    def _synchronize(self) -> None:
        self.device.runtime.eventSynchronize(self._ptr)  # type: ignore[attr-defined]

    def _query(self) -> bool:
        status = int(self.device.runtime.eventQuery(self._ptr))  # type: ignore[attr-defined]
        if status != ERROR_NOT_READY:
            check(status, "cudaEventQuery of an IPC event")
        return status == SUCCESS

    def _release(self) -> None:
        self.device.runtime.eventDestroy(self._ptr)  # type: ignore[attr-defined]


class CUDADevice(Device):
    """One CUDA GPU through CuPy.

    Raises:
        BackendUnavailableError: CuPy (the ``cuda`` extra) is missing, or no GPU ``index``.
    """

    tag = 0x01
    kind = "cuda"
    dialect = "cuda"
    program_cls = CUDAProgram
    hip: ClassVar[bool] = False
    allocator_cls: ClassVar[type[CUDAAllocator]] = CUDAAllocator
    compiler_cls: ClassVar[type[CUDACompiler]] = CUDACompiler

    def __init__(self, index: int = 0) -> None:
        self.cupy = load_cupy(self.kind, self.hip)
        self.runtime = self.cupy.cuda.runtime
        count = self.count()
        if not 0 <= index < count:
            raise BackendUnavailableError(f"{self.kind} device {index} does not exist "
                                          f"({count} found)",
                                          fix=f"pick an index below {count}, or install the "
                                              f"'{self.kind}' extra on a machine with a GPU.")
        self.cuda_device = self.cupy.cuda.Device(index)
        self.index = index  # _memory_classes() and the allocator need it before Device.__init__
        self.props = self.runtime.getDeviceProperties(index)
        self.arch = self.detect_arch()
        self._peers_enabled = False
        self._peer_lock = threading.Lock()
        self.streams: weakref.WeakSet[CuStream] = weakref.WeakSet()  # those it created
        name = self.props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        super().__init__(index, name, self.allocator_cls(self),
                         self.compiler_cls(self.identity_for(name), self.cupy),
                         self._memory_classes())

    @classmethod
    def count(cls) -> int:
        """How many GPUs the runtime sees (0 when none).

        Raises:
            BackendUnavailableError: CuPy is missing, or the driver is missing or too old.
        """
        cupy = load_cupy(cls.kind, cls.hip)
        try:
            return int(cupy.cuda.runtime.getDeviceCount())
        except cupy.cuda.runtime.CUDARuntimeError as exc:
            if device_status(exc) == ERROR_NO_DEVICE:
                return 0
            raise BackendUnavailableError(
                f"the {cls.kind} driver is not usable: {exc}",
                fix=f"install or update the GPU driver (nvidia-smi / rocm-smi must work) and "
                    f"pip install 'hurray_gpu[{cls.kind}]' for its CUDA/ROCm version.",
            ) from exc

    def context(self) -> Any:
        """A context manager making this device current (CuPy's ``with Device(i):``)."""
        return self.cuda_device

    def detect_arch(self) -> str:
        """The architecture NVRTC targets: the GPU's own (``sm_90``) when NVRTC knows it,
        else the newest virtual one it knows (``compute_90``; the driver JITs the PTX)."""
        capability = int(self.cuda_device.compute_capability)
        try:
            known = [a for a in self.cupy.cuda.nvrtc.getSupportedArchs() if a <= capability]
        except Exception:  # noqa: BLE001 - NVRTC < 11.2 cannot list; trust the device
            known = [capability]
        if capability in known or not known:
            return f"sm_{capability}"
        return f"compute_{max(known)}"

    def identity_for(self, name: str) -> str:
        """Name, architecture, driver and runtime versions: the cache key's target."""
        driver = self.runtime.driverGetVersion()
        runtime = self.runtime.runtimeGetVersion()
        return f"{self.kind}:{name}|{self.arch}|driver {driver}|runtime {runtime}"

    def identity(self) -> str:
        return self.identity_for(self.name)

    def _memory_classes(self) -> tuple[MemoryClass, ...]:
        classes = [MemoryClass.STANDARD, MemoryClass.HOST_PINNED]
        if int(self.props.get("managedMemory", 0)):
            classes.append(MemoryClass.UNIFIED)
        if self._peers():
            classes.append(MemoryClass.PEER)
        return tuple(classes)

    def _peers(self) -> list[int]:
        count = self.count()
        # PEER memory lives here and is reached by the others: can `other` access this GPU?
        return [other for other in range(count) if other != self.index
                and self.runtime.deviceCanAccessPeer(other, self.index)]

    def enable_peers(self) -> None:
        """Let every peer GPU reach this device's memory (once per device)."""
        with self._peer_lock:
            if self._peers_enabled:
                return
            for other in self._peers():
                with self.cupy.cuda.Device(other):
                    try:
                        self.runtime.deviceEnablePeerAccess(self.index)
                    except self.runtime.CUDARuntimeError as exc:
                        # CuPy resets the runtime's last error before raising, so an expected
                        # 704 does not surface later in another library's launch check.
                        if device_status(exc) != ERROR_PEER_ACCESS_ALREADY_ENABLED:
                            check(device_status(exc) or -1, "cudaDeviceEnablePeerAccess")
            self._peers_enabled = True

    @property
    def ipc_class(self) -> MemoryClass | None:
        """Device memory (cudaMalloc / hipMalloc) travels as an IPC memory handle."""
        return MemoryClass.STANDARD

    @functools.cached_property
    def ipc_id(self) -> bytes:  # type: ignore[override]
        """The PCI bus id: a handle opens only on the GPU whose memory it names."""
        return str(self.runtime.deviceGetPCIBusId(self.index)).lower().encode()

    def ipc_export(self, allocation: Allocation, event: bool) -> tuple[bytes, None]:
        """The IPC memory handle of the cudaMalloc that holds ``allocation`` and its offset
        there (:meth:`ipc_base`: a view or a CuPy pool's sub-allocation lies inside a bigger
        one; the consumer opens the base and adds the offset), and in event mode an
        interprocess event (cudaEventInterprocess | DisableTiming) recorded on the current
        stream after the queued work.

        Raises:
            UnsupportedOpError: the driver refused the IPC handles (no IPC on this system).
        """
        raw: CUDAMemory = allocation.raw
        base = self.ipc_base(raw.ptr)
        root: CUDAMemory = allocation.root.raw
        with self.context():
            try:
                handle, ev = bytes(self.runtime.ipcGetMemHandle(base)), b""
                if event:
                    root.keep = self.cupy.cuda.Event(disable_timing=True, interprocess=True)
                    root.keep.record(current_stream(self).cupy_stream)  # type: ignore[attr-defined]
                    ev = bytes(self.runtime.ipcGetEventHandle(root.keep.ptr))
            except self.runtime.CUDARuntimeError as exc:
                raise UnsupportedOpError(
                    f"{self} refused an IPC handle ({exc})",
                    fix="share a host copy: hg.share(t, path, host=True).") from exc
        return pack_ipc(raw.ptr - base, allocation.nbytes, handle, ev), None

    def ipc_base(self, ptr: int) -> int:
        """The start of the cudaMalloc / hipMalloc that holds ``ptr`` (cuMemGetAddressRange):
        an IPC handle opens at it, whatever sub-allocation (a CuPy pool's) ``ptr`` is.

        Raises:
            UnsupportedOpError: the driver library or its call is missing.
            DeviceError: the driver does not know ``ptr``.
        """
        lib, name = ("amdhip64", "hipMemGetAddressRange") if self.hip else (
            "cuda", "cuMemGetAddressRange_v2")
        try:
            query = getattr(ctypes.CDLL(ctypes.util.find_library(lib) or f"lib{lib}.so"), name)
        except (OSError, AttributeError) as exc:
            raise UnsupportedOpError(f"{name} is not available ({exc})", fix="share a host "
                                     "copy: hg.share(t, path, host=True).") from None
        base, size = ctypes.c_uint64(), ctypes.c_size_t()
        with self.context():
            check(query(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr)), name)
        return int(base.value)

    def ipc_import(self, record: bytes, fd: int | None) -> tuple[Allocation, Event | None]:
        """Open another process's allocation (cudaIpcOpenMemHandle, the base plus the offset)
        and its interprocess event; closed with the last Buffer over it.

        Raises:
            ProtocolError: a malformed record, an fd, or handles the driver refuses.
        """
        offset, nbytes, handle, ev = unpack_ipc(record)
        if fd is not None:
            raise ProtocolError("a CUDA/ROCm IPC handoff carries no fd", fix=_IPC_FIX)
        with self.context():
            try:
                opened = _Opened(self, int(self.runtime.ipcOpenMemHandle(handle)))
                event = IpcEvent(self, ptr=int(self.runtime.ipcOpenEventHandle(ev))) if ev else None
            except self.runtime.CUDARuntimeError as exc:
                raise ProtocolError(f"{self} refused the IPC handles ({exc})",
                                    fix=_IPC_FIX) from None
        raw = CUDAMemory(opened.ptr + offset, opened)
        return Allocation(raw, nbytes, MemoryClass.STANDARD, external=True, readonly=True), event

    @property
    def max_alloc(self) -> int:
        return int(self.props.get("totalGlobalMem", 0))

    def memory_info(self) -> tuple[int, int]:
        with self.context():
            free, total = self.runtime.memGetInfo()
        return int(free), int(total)

    def synchronize(self) -> None:
        self.cuda_device.synchronize()

    def stream_class(self) -> type:
        """CuPy streams (:class:`CuStream`); ROCm gets CuPy's HIP streams."""
        return CuStream

    def event_class(self) -> type:
        return CuEvent

    def compile_options(self, kernel: KernelDef) -> tuple[str, ...]:
        compiler: CUDACompiler = self.compiler  # type: ignore[assignment]
        return compiler.options(self.arch)


DEVICE = CUDADevice
