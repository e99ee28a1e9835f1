"""OpenCL backend (device tag 0x08) over pyopencl.

standard = device cl_mem, host_pinned = CL_MEM_ALLOC_HOST_PTR, unified = coarse-grain SVM.
A stream is an in-order command queue and an event a cl_event marker; inter-stream waits are
``clEnqueueBarrierWithWaitList`` on the waiting queue: the device orders the work, the host
never blocks.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from hurray_gpu.errors import CompileError, DeviceError, UnsupportedOpError
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import Allocation, Allocator, MemoryClass
from hurray_gpu.runtime.program import Compiler, Program
from hurray_gpu.runtime.stream import Event, Stream, current_stream

try:
    import pyopencl as cl
except ImportError as _exc:  # the registry turns this into BackendUnavailableError
    raise ImportError(f"pyopencl is not installed ({_exc})") from _exc

__all__ = ["CLAllocator", "CLCompiler", "CLDevice", "CLEvent", "CLProgram", "CLStream", "DEVICE",
           "check"]

# OpenCL C version the portable subset targets (pocl has no fp16 arithmetic).
CL_STD = "-cl-std=CL1.2"


def check(status: int | BaseException, what: str = "OpenCL call") -> None:
    """Raise DeviceError for a non-zero cl status code or a pyopencl error."""
    if isinstance(status, BaseException):
        code = getattr(getattr(status, "code", None), "__int__", lambda: -9999)()
        raise DeviceError(f"{what} failed: {status} (status {code})",
                          fix="check the OpenCL driver (clinfo) and the arguments.") from status
    if status != 0:
        raise DeviceError(f"{what} failed with status {status}",
                          fix="look the status up in CL/cl.h, check the OpenCL driver with clinfo, "
                              "and retry on device='cpu' to tell a driver fault from a bad argument.")


@contextmanager
def _cl_call(what: str) -> Iterator[None]:
    try:
        yield
    except cl.MemoryError:
        raise
    except cl.Error as exc:
        check(exc, what)


def _call(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with every pyopencl error (out of memory too) a DeviceError."""
    try:
        return fn(*args, **kwargs)
    except cl.Error as exc:
        check(exc, what)


def _all_devices() -> list[Any]:
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []  # no ICD loader platforms: zero devices, not an error
    found: list[Any] = []
    for platform in platforms:
        try:
            found.extend(platform.get_devices())
        except cl.Error:
            continue
    return found


class CLStream(Stream):
    """A profiling-enabled in-order command queue (the default stream is the device's queue)."""

    def __init__(self, device: Any = None, *, _default: bool = False) -> None:
        super().__init__(device, _default=_default)
        dev: Any = self.device
        if _default:
            self.queue = dev.queue
        else:
            self.queue = _call("clCreateCommandQueue", cl.CommandQueue, dev.context,
                               dev.cl_device,
                               properties=cl.command_queue_properties.PROFILING_ENABLE)
            dev.streams.add(self)

    @property
    def handle(self) -> Any:
        return self.queue

    def synchronize(self) -> None:
        _call("clFinish", self.queue.finish)

    def query(self) -> bool:
        marker = _call("clEnqueueMarker", cl.enqueue_marker, self.queue)
        self.queue.flush()
        return bool(marker.command_execution_status == cl.command_execution_status.COMPLETE)


class CLEvent(Event):
    """A marker event enqueued on a stream's queue (it completes after all earlier work)."""

    _event: Any = None

    def _record(self, stream: Stream) -> None:
        queue = stream.queue  # type: ignore[attr-defined]
        self._event = _call("clEnqueueMarker", cl.enqueue_marker, queue)
        # Submit now: another queue or the host may wait on this marker next.
        queue.flush()

    def _wait(self, stream: Stream) -> None:
        _call("clEnqueueBarrierWithWaitList", cl.enqueue_barrier,
              stream.queue, wait_for=[self._event])  # type: ignore[attr-defined]

    def _synchronize(self) -> None:
        _call("clWaitForEvents", self._event.wait)

    def _query(self) -> bool:
        status = self._event.command_execution_status
        if status < 0:
            raise DeviceError(f"the work before this event failed (status {status})",
                              fix="check the kernels launched before the event.")
        return bool(status == cl.command_execution_status.COMPLETE)

    def _timestamp_ns(self) -> int:
        try:
            return int(self._event.profile.end)
        except cl.Error as exc:
            raise UnsupportedOpError(f"no profiling timestamp for this event ({exc})",
                                     fix="record events on streams of this device.") from exc

    def _release(self) -> None:
        # pyopencl releases the cl_event when its last reference goes.
        self._event = None


class CLAllocator(Allocator):
    """cl_mem buffers (raw = (mem, offset)); SVM memory (raw = numpy array over SVM)."""

    oom_errors = (MemoryError, cl.MemoryError)
    pool_fences = True

    def _alloc(self, nbytes: int, memory_class: MemoryClass) -> Any:
        dev: CLDevice = self.device  # type: ignore[assignment]
        flags: Any = cl.mem_flags.READ_WRITE
        if memory_class == MemoryClass.UNIFIED:
            return cl.svm_empty(dev.context, cl.svm_mem_flags.READ_WRITE, (nbytes,), np.uint8,
                                alignment=dev.alignment)
        if memory_class == MemoryClass.HOST_PINNED:
            flags |= cl.mem_flags.ALLOC_HOST_PTR
        try:
            return (cl.Buffer(dev.context, flags, nbytes), 0)
        except cl.MemoryError:
            raise
        except cl.Error as exc:
            check(exc, "clCreateBuffer")
            raise

    def _free(self, raw: Any, nbytes: int, memory_class: MemoryClass) -> None:
        if isinstance(raw, tuple):
            raw[0].release()

    def _copyin(self, raw: Any, src: memoryview) -> None:
        dev: CLDevice = self.device  # type: ignore[assignment]
        queue = dev.current_queue()
        with _cl_call("clEnqueueWriteBuffer"):
            if isinstance(raw, tuple):
                cl.enqueue_copy(queue, raw[0], src, dst_offset=raw[1], is_blocking=True)
            else:  # coarse-grain SVM: the host touches it only while mapped
                with cl.SVM(raw).map_rw(queue) as mapped:
                    mapped[:] = np.frombuffer(src, dtype=np.uint8)

    def _copyout(self, dest: memoryview, raw: Any) -> None:
        dev: CLDevice = self.device  # type: ignore[assignment]
        queue = dev.current_queue()
        with _cl_call("clEnqueueReadBuffer"):
            if isinstance(raw, tuple):
                cl.enqueue_copy(queue, dest, raw[0], src_offset=raw[1], is_blocking=True)
            else:
                with cl.SVM(raw).map_ro(queue) as mapped:
                    np.frombuffer(dest, dtype=np.uint8)[:] = mapped

    def _offset(self, raw: Any, offset: int, nbytes: int) -> Any:
        if isinstance(raw, tuple):
            return (raw[0], raw[1] + offset)
        return raw[offset:offset + nbytes]

    def _copy(self, dest: Any, src: Any, nbytes: int) -> None:
        dev: CLDevice = self.device  # type: ignore[assignment]
        queue = dev.current_queue()
        with _cl_call("clEnqueueCopyBuffer"):
            if isinstance(dest, tuple) and isinstance(src, tuple):
                event = cl.enqueue_copy(queue, dest[0], src[0], byte_count=nbytes,
                                        src_offset=src[1], dst_offset=dest[1])
            elif not isinstance(dest, tuple) and not isinstance(src, tuple):
                event = cl.enqueue_copy(queue, cl.SVM(dest), cl.SVM(src))  # SVM memcpy
            else:  # cl_mem <-> SVM: no single command copies between the two kinds
                super()._copy(dest, src, nbytes)
                return
            # Callers may free or reuse src at once; wait so no later host access races it.
            event.wait()


class CLCompiler(Compiler):
    """Builds OpenCL C for one device; the binary is the device program binary."""

    backend = "opencl"

    def __init__(self, device: CLDevice) -> None:
        self.cl_device = device.cl_device
        self.context = device.context
        super().__init__(device.identity())

    def version(self) -> str:
        d = self.cl_device
        return f"{d.platform.version}|{d.version}|{d.driver_version}"

    def compile(self, source: str, options: Sequence[str] = ()) -> bytes:
        try:
            program = cl.Program(self.context, source).build(options=list(options),
                                                             devices=[self.cl_device])
        except cl.Error as exc:
            raise CompileError("OpenCL build failed", source, tuple(options), str(exc)) from exc
        return bytes(program.get_info(cl.program_info.BINARIES)[0])


class CLProgram(Program):
    """A device binary loaded into the device's context; launches are serialised per program."""

    def __init__(self, device: Device, kernel: Any, binary: bytes) -> None:
        super().__init__(device, kernel, binary)
        dev: CLDevice = device  # type: ignore[assignment]
        try:
            program = cl.Program(dev.context, [dev.cl_device], [binary]).build()
            self._kernel = cl.Kernel(program, kernel.name)
        except cl.Error as exc:
            raise CompileError("OpenCL binary did not load", "", (), str(exc),
                               fix="clear HURRAY_GPU_CACHE_DIR and retry.") from exc
        self._lock = threading.Lock()

    def _arg(self, alloc: Allocation) -> Any:
        if alloc.nbytes == 0:
            return None
        if not isinstance(alloc.raw, tuple):
            return cl.SVM(alloc.raw)
        mem, offset = alloc.raw
        if offset == 0 and alloc.base is None:
            return mem
        dev: CLDevice = self.device  # type: ignore[assignment]
        if offset % dev.alignment:
            raise UnsupportedOpError(
                f"OpenCL sub-buffer offset {offset} is not a multiple of "
                f"CL_DEVICE_MEM_BASE_ADDR_ALIGN ({dev.alignment} bytes)",
                fix="align views passed to kernels, or copy them to a fresh buffer.")
        with _cl_call("clCreateSubBuffer"):
            return mem.get_sub_region(offset, alloc.nbytes)

    def _launch(self, buffers: list[Allocation], scalars: Sequence[np.generic],
                global_size: tuple[int, int, int], local_size: tuple[int, int, int],
                wait: bool) -> float | None:
        dev: CLDevice = self.device  # type: ignore[assignment]
        padded = tuple(-(-g // loc) * loc for g, loc in zip(global_size, local_size, strict=True))
        args = [self._arg(b) for b in buffers] + list(scalars)
        queue = dev.current_queue()
        with self._lock, _cl_call(f"launch of {self.kernel.name}"):
            self._kernel.set_args(*args)
            event = cl.enqueue_nd_range_kernel(queue, self._kernel, padded, local_size)
        if not wait:
            return None
        with _cl_call("clWaitForEvents"):
            event.wait()
            return (event.profile.end - event.profile.start) * 1e-9


class CLDevice(Device):
    """One OpenCL device with its own context and in-order profiling queue."""

    tag = 0x08
    kind = "opencl"
    dialect = "opencl"
    program_cls = CLProgram

    def __init__(self, index: int = 0) -> None:
        self.cl_device = _all_devices()[index]
        with _cl_call("clCreateContext"):
            self.context = cl.Context([self.cl_device])
            self.queue = cl.CommandQueue(
                self.context, self.cl_device,
                properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.alignment = max(1, self.cl_device.mem_base_addr_align // 8)
        self.streams: weakref.WeakSet[Any] = weakref.WeakSet()  # non-default streams, to sync
        self.emulated = bool(self.cl_device.type & cl.device_type.CPU)
        super().__init__(index, self.cl_device.name.strip(), CLAllocator(self),
                         CLCompiler(self), self._memory_classes())

    def _memory_classes(self) -> tuple[MemoryClass, ...]:
        classes = [MemoryClass.STANDARD, MemoryClass.HOST_PINNED]
        try:
            svm = self.cl_device.svm_capabilities
        except (cl.Error, AttributeError):
            svm = 0
        if svm & cl.device_svm_capabilities.COARSE_GRAIN_BUFFER:
            classes.append(MemoryClass.UNIFIED)
        return tuple(classes)

    @classmethod
    def count(cls) -> int:
        return len(_all_devices())

    @property
    def max_alloc(self) -> int:
        return int(self.cl_device.max_mem_alloc_size)

    @property
    def offset_alignment(self) -> int:
        """CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: kernels take sub-buffers aligned to it."""
        return self.alignment

    @property
    def fp64(self) -> bool:
        return "cl_khr_fp64" in self.cl_device.extensions.split()

    def memory_info(self) -> tuple[int, int]:
        total = int(self.cl_device.global_mem_size)
        return (max(0, total - self.allocator.allocated_bytes), total)

    def identity(self) -> str:
        d = self.cl_device
        return f"opencl:{d.platform.name}|{d.vendor}|{d.name}|{d.driver_version}"

    def synchronize(self) -> None:
        with _cl_call("clFinish"):
            self.queue.finish()
            for stream in list(self.streams):
                stream.queue.finish()

    def stream_class(self) -> type:
        return CLStream

    def event_class(self) -> type:
        return CLEvent

    def current_queue(self) -> Any:
        """The command queue of this thread's current stream (launches and copies use it)."""
        return current_stream(self).queue  # type: ignore[attr-defined]

    def compile_options(self, kernel: Any) -> tuple[str, ...]:
        return (CL_STD,)


DEVICE = CLDevice
