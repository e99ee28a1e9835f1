"""Vulkan backend (device tag 0x04) over the ``vulkan`` cffi package; kernels are GLSL -> SPIR-V.

standard = DEVICE_LOCAL, host_pinned = HOST_VISIBLE, unified = DEVICE_LOCAL|HOST_VISIBLE,
peer = exportable (opaque fd) DEVICE_LOCAL. Helpers: ``vulkan_context/memory/pipeline/plan/glsl``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_gpu.backends import vulkan_memory as vmem
from hurray_gpu.backends.vulkan_context import VulkanContext, check, count_devices
from hurray_gpu.backends.vulkan_glsl import VULKAN_GLSL_ABI, VulkanGLSLRenderer, check_push_size
from hurray_gpu.backends.vulkan_pipeline import Dispatch, VulkanPipeline
from hurray_gpu.backends.vulkan_plan import Limits, Span, plan_launch
from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.errors import BackendUnavailableError, CompileError, UnsupportedOpError
from hurray_gpu.runtime.cache import KernelCacheBackend
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import Allocation, Allocator, MemoryClass
from hurray_gpu.runtime.program import Compiler, Program

__all__ = ["DEVICE", "VulkanAllocator", "VulkanCompiler", "VulkanDevice", "VulkanProgram", "check"]

GLSLANG = "glslangValidator"
# SPIR-V 1.3 (Vulkan 1.1) is what every conformant driver since 2018 consumes.
TARGET_ENV = ("--target-env", "vulkan1.1")
COMPILE_TIMEOUT_S = 120
SPIRV_MAGIC = 0x07230203
VK_PHYSICAL_DEVICE_TYPE_CPU = 4
_RENDERER = VulkanGLSLRenderer()


class VulkanAllocator(Allocator):
    """One VkBuffer + VkDeviceMemory per allocation; raw handles are VulkanMemory records."""

    def _put_pooled(self, raw: Any, nbytes: int, memory_class: MemoryClass) -> None:
        # Streams may still use the buffer; its next user's stream waits for them.
        if self._ctx.streams:
            self._points.fence(raw)
        super()._put_pooled(raw, nbytes, memory_class)

    def _take_pooled(self, nbytes: int, memory_class: MemoryClass) -> Any:
        raw = super()._take_pooled(nbytes, memory_class)
        if raw is not None:
            self._points.wait(raw)
        return raw

    @functools.cached_property
    def _points(self) -> Any:
        from hurray_gpu.backends.vulkan_sync import PoolPoints

        return PoolPoints(self._ctx)

    def _alloc(self, nbytes: int, memory_class: MemoryClass) -> vmem.VulkanMemory:
        return vmem.create_memory(self._ctx, nbytes, memory_class)

    def _free(self, raw: vmem.VulkanMemory, nbytes: int, memory_class: MemoryClass) -> None:
        self._points.forget(raw)
        with self._ctx.lock:
            vmem.destroy_memory(self._ctx, raw)

    def _copyin(self, raw: vmem.VulkanMemory, src: memoryview) -> None:
        vmem.write_memory(self._ctx, raw, src)

    def _copyout(self, dest: memoryview, raw: vmem.VulkanMemory) -> None:
        vmem.read_memory(self._ctx, dest, raw)

    def _offset(self, raw: vmem.VulkanMemory, offset: int, nbytes: int) -> vmem.VulkanMemory:
        return vmem.window(raw, offset)

    def _copy(self, dest: vmem.VulkanMemory, src: vmem.VulkanMemory, nbytes: int) -> None:
        # Device to device in one vkCmdCopyBuffer (no size limit, no host staging).
        vmem.copy_memory(self._ctx, dest, src, nbytes)

    @property
    def _ctx(self) -> VulkanContext:
        return self.device.ctx  # type: ignore[attr-defined, no-any-return]


@functools.lru_cache(maxsize=4)
def _glslang_version(path: str) -> str:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendUnavailableError(f"{path} does not run: {exc}",
                                      fix="apt-get install glslang-tools.") from exc
    return " ".join(done.stdout.split("\n", 2)[:2]).strip()


class VulkanCompiler(Compiler):
    """GLSL 450 -> SPIR-V with ``glslangValidator``; the SPIR-V is the cached binary.

    Args:
        identity: the device identity (vendor, device id, driver version, name).
        cache: the binary store; default: ``HURRAY_GPU_CACHE_DIR/vulkan``.
    """

    backend = "vulkan"

    def __init__(self, identity: str, cache: KernelCacheBackend | None = None) -> None:
        self.glslang = shutil.which(GLSLANG)
        super().__init__(identity, cache)

    def _require_glslang(self) -> str:
        if self.glslang is None:
            raise BackendUnavailableError(
                f"{GLSLANG} was not found on PATH; Vulkan kernels need it to build SPIR-V",
                fix="apt-get install glslang-tools (or put glslangValidator on PATH).",
            )
        return self.glslang

    def version(self) -> str:
        """The glslangValidator version lines (part of the cache key)."""
        return _glslang_version(self._require_glslang())

    def compile(self, source: str, options: Sequence[str] = ()) -> bytes:
        """Compile a GLSL compute shader to SPIR-V.

        Raises:
            BackendUnavailableError: glslangValidator is not installed.
            CompileError: glslang rejected the shader or did not run.
        """
        tool = self._require_glslang()
        with tempfile.TemporaryDirectory(prefix="hurray_gpu_vk_") as tmp:
            out = os.path.join(tmp, "kernel.spv")
            cmd = [tool, "--stdin", "-S", "comp", "-V", *options, "-o", out]
            try:
                done = subprocess.run(cmd, input=source, capture_output=True, text=True,
                                      timeout=COMPILE_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise CompileError(f"{tool} failed to run: {exc}", source, tuple(options)) from exc
            if done.returncode != 0 or not os.path.exists(out):
                raise CompileError("glslangValidator rejected the kernel", source, tuple(options),
                                   (done.stdout + done.stderr).strip())
            with open(out, "rb") as handle:
                return handle.read()


class VulkanProgram(Program):
    """A compute pipeline; a launch is planned into dispatches over buffer windows.

    Raises (on load):
        CompileError: the cached binary is not SPIR-V.
        UnsupportedOpError: the kernel needs more push constants or bindings than allowed.
    """

    def __init__(self, device: Device, kernel: KernelDef, binary: bytes) -> None:
        super().__init__(device, kernel, binary)
        dev: VulkanDevice = device  # type: ignore[assignment]
        magic = int.from_bytes(binary[:4], "little")
        if len(binary) < 20 or len(binary) % 4 or magic != SPIRV_MAGIC:
            raise CompileError(f"the binary of {kernel.name} is not SPIR-V", "", (), "",
                               fix="clear HURRAY_GPU_CACHE_DIR and retry.")
        limits = dev.ctx.limits
        self._push_size = check_push_size(kernel, int(limits.maxPushConstantsSize))
        bindings = len(kernel.buffers) + 1
        if bindings > int(limits.maxPerStageDescriptorStorageBuffers):
            raise UnsupportedOpError(
                f"kernel {kernel.name} needs {bindings} storage buffers; {dev} allows "
                f"{limits.maxPerStageDescriptorStorageBuffers}", fix="use fewer buffers.")
        with dev.ctx.lock:
            self._pipeline = VulkanPipeline(dev.ctx, binary, bindings, self._push_size)

    def _launch(self, buffers: list[Allocation], scalars: list[np.generic],
                global_size: tuple[int, int, int], local_size: tuple[int, int, int],
                wait: bool) -> float | None:
        dev: VulkanDevice = self.device  # type: ignore[assignment]
        roots = [dev.binding_of(a) for a in buffers]
        spans = [Span(mem.size, offset, nbytes) for (mem, offset, _), nbytes
                 in zip(roots, self._needed(buffers, scalars), strict=True)]
        steps = plan_launch(spans, global_size, local_size, dev.plan_limits)
        words = np.array([np.asarray(s).view(np.uint32) for s in scalars], np.uint32).tobytes()
        stream = dev.async_stream()
        fault = ((dev.fault if stream is None else stream.lane.fault).buffer, 0, 4),
        dispatches = [
            Dispatch(
                tuple((mem.buffer, off, size) for (mem, _, _), (off, size) in
                      zip(roots, step.windows, strict=True)) + fault,
                np.array(step.base + step.deltas, np.uint32).tobytes() + words, step.groups)
            for step in steps
        ]
        if stream is not None:  # queued in stream order; faults surface at synchronize()
            start = time.perf_counter()
            with dev.ctx.lock:
                self._pipeline.run(dispatches)
            if not wait:
                return None
            stream.synchronize()
            return time.perf_counter() - start
        with dev.ctx.lock:
            dev.fault.mapped[:4] = 0  # type: ignore[index]
            start = time.perf_counter()
            self._pipeline.run(dispatches)
            elapsed = time.perf_counter() - start
            faulted = int(dev.fault.mapped[:4].view(np.uint32)[0])  # type: ignore[index]
        if faulted:
            self._raise_fault(len(steps) > 1 and any(s.nbytes > dev.plan_limits.max_range
                                                     for s in spans))
        return elapsed if wait else None

    def _needed(self, buffers: list[Allocation], scalars: list[np.generic]) -> list[int]:
        """Bytes of each buffer the launch touches: its extent, capped by the buffer.

        Windows of big buffers are proportional to these, so a small launch over a huge
        buffer binds only the part it uses.
        """
        values = {p.name: v.item() for p, v in zip(self.kernel.scalars, scalars, strict=True)}
        extents = self.kernel.extents(values)
        out = []
        for param, allocation in zip(self.kernel.buffers, buffers, strict=True):
            need = int(extents.get(param.name, 0)) * param.itemsize
            out.append(min(allocation.nbytes, need) if need > 0 else allocation.nbytes)
        return out

    def _raise_fault(self, chunked: bool) -> None:
        name = self.kernel.name
        if chunked:
            raise UnsupportedOpError(
                f"kernel {name} indexed outside the window of a buffer larger than "
                "maxStorageBufferRange: its accesses are not proportional to its work items, "
                "so the launch cannot be split; the outputs are not valid",
                fix="run it on smaller buffers (split the data), or on another backend.")
        raise UnsupportedOpError(
            f"kernel {name} indexed outside its buffers; the outputs are not valid",
            fix="check the kernel's extents() and its index arithmetic.")

    def __del__(self) -> None:
        pipeline = getattr(self, "_pipeline", None)
        ctx = getattr(pipeline, "ctx", None)
        if pipeline is None or ctx is None or getattr(ctx, "device", None) is None:
            return
        try:
            for stream in list(ctx.streams):  # queued launches may still use the pipeline
                stream.drain()
            with ctx.lock:
                pipeline.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn down cffi
            pass


class VulkanDevice(Device):
    """One Vulkan physical device with a logical device and one compute queue."""

    tag = 0x04
    kind = "vulkan"
    dialect = "glsl"
    program_cls = VulkanProgram

    def __init__(self, index: int = 0) -> None:
        self.ctx = ctx = VulkanContext(index)
        self.emulated = int(ctx.props.deviceType) == VK_PHYSICAL_DEVICE_TYPE_CPU
        lim = ctx.limits
        self.plan_limits = Limits(int(lim.maxStorageBufferRange),
                                  int(lim.minStorageBufferOffsetAlignment),
                                  tuple(int(g) for g in lim.maxComputeWorkGroupCount))  # type: ignore[arg-type]
        # A one-word flag the shaders set when an index leaves its binding's window.
        self.fault = vmem.create_memory(ctx, 4, MemoryClass.HOST_PINNED)
        # Bound in place of zero-byte buffers: Vulkan has no null storage-buffer descriptor.
        self.empty = vmem.create_memory(ctx, 4, MemoryClass.STANDARD)
        super().__init__(index, ctx.name, VulkanAllocator(self),
                         VulkanCompiler(self.identity()), vmem.offered_classes(ctx))

    @classmethod
    def count(cls) -> int:
        """How many Vulkan devices the loader sees.

        Raises:
            BackendUnavailableError: the ``vulkan`` package or libvulkan is missing.
        """
        return count_devices()

    def binding_of(self, allocation: Allocation) -> tuple[vmem.VulkanMemory, int, int]:
        """(root memory, byte offset, nbytes) to bind for an allocation or view."""
        if allocation.nbytes == 0:
            return self.empty, 0, 0
        return allocation.root.raw, allocation.offset, allocation.nbytes

    def export_fd(self, buffer: Any) -> int:
        """Export a PEER-class buffer's memory as a new POSIX fd (opaque fd handle type).

        The caller owns the fd; a peer imports it with VkImportMemoryFdInfoKHR.

        Args:
            buffer: a :class:`~hurray_gpu.runtime.buffer.Buffer` (or Allocation) of class ``peer``.

        Raises:
            UnsupportedOpError: the buffer is not PEER memory of this device.
        """
        allocation = getattr(buffer, "allocation", buffer)
        if (getattr(buffer, "device", self) is not self or not isinstance(allocation, Allocation)
                or allocation.memory_class != MemoryClass.PEER or allocation.nbytes == 0):
            raise UnsupportedOpError("only non-empty peer buffers of this device export an fd",
                                     fix="allocate the buffer with memory_class='peer'.")
        with self.ctx.lock:
            return self.ctx.export_fd(allocation.root.raw.memory)

    @property
    def max_alloc(self) -> int:
        return max(self.ctx.heap_size(i) for i in range(len(self.ctx.memory_type_flags())))

    def memory_info(self) -> tuple[int, int]:
        flags = self.ctx.memory_type_flags()
        heaps = {int(self.ctx.memory_props.memoryTypes[i].heapIndex): self.ctx.heap_size(i)
                 for i, f in enumerate(flags) if f & vmem.DEVICE_LOCAL}
        total = sum(heaps.values())
        return (max(0, total - self.allocator.allocated_bytes), total)

    def identity(self) -> str:
        return f"vulkan:{self.ctx.identity()}|glsl-abi-{VULKAN_GLSL_ABI}"

    def synchronize(self) -> None:
        self.ctx.wait_idle()

    def stream_class(self) -> type:
        """Timeline-semaphore streams (Vulkan 1.2); host streams on older drivers."""
        if not self.ctx.timeline:
            return super().stream_class()
        from hurray_gpu.backends.vulkan_sync import VkStream

        return VkStream

    def event_class(self) -> type:
        if not self.ctx.timeline:
            return super().event_class()
        from hurray_gpu.backends.vulkan_sync import VkEvent

        return VkEvent

    def async_stream(self) -> Any:
        """The current stream when it is a non-default one (its work is queued, not waited)."""
        hook = self.ctx.current
        stream = hook() if hook is not None else None
        return None if stream is None or stream.is_default else stream

    def finalize(self) -> None:
        """Release pooled memory, loaded pipelines and the staging buffer."""
        super().finalize()
        vmem.release_staging(self.ctx)

    def compile_options(self, kernel: KernelDef) -> tuple[str, ...]:
        return TARGET_ENV

    def render(self, kernel: KernelDef) -> str:
        """The shared GLSL rendering plus dispatch bases and windowed subscripts."""
        return _RENDERER.render(kernel)


DEVICE = VulkanDevice
