"""Vulkan backend (device tag 0x04) over the ``vulkan`` cffi package; kernels are GLSL -> SPIR-V.

standard = DEVICE_LOCAL, host_pinned = HOST_VISIBLE, unified = DEVICE_LOCAL|HOST_VISIBLE,
peer = exportable (opaque fd) DEVICE_LOCAL.

This module: the Device, Allocator, Compiler and Program; the GLSL ABI the backend adds to the
shared dialect; compute pipelines; and launch planning. Under it, in one direction:
``vulkan_sync`` (streams, events on timeline semaphores), then ``vulkan_context`` (instance,
device, queue, memory, one-shot submission).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import struct
import subprocess
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hurray_gpu.backends import vulkan_context as vkc
from hurray_gpu.backends.vulkan_context import VulkanContext, call, check, count_devices
from hurray_gpu.backends.vulkan_sync import PoolPoints, VkEvent, VkStream
from hurray_gpu.backends.windows import (
    LOOP_PROBE,
    PROBE_PASSES,
    Limits,
    Span,
    Step,
    WindowedProgram,
    plan_launch,
)
from hurray_gpu.dialect.glsl import GLSLRenderer
from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.errors import (
    BackendUnavailableError,
    CompileError,
    DeviceError,
    ProtocolError,
    UnsupportedOpError,
)
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.cache import KernelCacheBackend
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import Allocation, Allocator, MemoryClass
from hurray_gpu.runtime.program import Compiler

__all__ = ["DEVICE", "Limits", "Span", "Step", "VulkanAllocator", "VulkanCompiler",
           "VulkanDevice", "VulkanGLSLRenderer", "VulkanPipeline", "VulkanProgram", "check",
           "plan_launch"]

GLSLANG = "glslangValidator"
# SPIR-V 1.3 (Vulkan 1.1) is what every conformant driver since 2018 consumes.
TARGET_ENV = ("--target-env", "vulkan1.1")
COMPILE_TIMEOUT_S = 120
SPIRV_MAGIC = 0x07230203
VK_PHYSICAL_DEVICE_TYPE_CPU = 4
# Push-constant words before the per-buffer offsets: the work-item base on each axis.
PUSH_HEADER_WORDS = 3
# Bumped whenever the GLSL that VulkanGLSLRenderer adds changes meaning (part of the cache key).
VULKAN_GLSL_ABI = 1
# -- GLSL: the shared dialect plus dispatch bases and windowed subscripts ------------------
# A launch may be split into dispatches over windows of big buffers, so work-item ids get a
# per-dispatch base and every subscript is rebased and range-checked against its binding.

def push_words(kernel: KernelDef) -> int:
    """Push-constant words a kernel uses: 3 bases, one offset per buffer, one per scalar."""
    return PUSH_HEADER_WORDS + len(kernel.buffers) + len(kernel.scalars)


def guard_subscripts(pattern: str) -> str:
    """Wrap every ``{b}[...]`` subscript of a load/store pattern in ``hg_ix_{b}(...)``."""
    out, pos, opener = [], 0, "{b}["
    while (start := pattern.find(opener, pos)) >= 0:
        depth, end = 1, start + len(opener)
        while depth:
            if end >= len(pattern):
                raise ValueError(f"unbalanced subscript in GLSL pattern {pattern!r}")
            depth += {"[": 1, "]": -1}.get(pattern[end], 0)
            end += 1
        inner = pattern[start + len(opener):end - 1]
        out.append(pattern[pos:start] + "{b}[hg_ix_{b}(" + inner + ")]")
        pos = end
    return "".join(out) + pattern[pos:]


class VulkanGLSLRenderer(GLSLRenderer):
    """GLSLRenderer whose ids carry a dispatch base and whose subscripts are rebased.

    Push constants: ``hg_base0..2`` (work-item base per axis), ``hg_d_<buffer>`` (words from
    the bound window's start to the buffer's element 0, modulo 2**32), then the scalars.
    Binding ``len(buffers)`` is a one-word fault flag set when an index leaves its window.
    """

    index_expr = tuple(  # type: ignore[assignment]
        f"(gl_GlobalInvocationID.{axis} + hg_pc.hg_base{d})" for d, axis in enumerate("xyz"))
    load_map: ClassVar[dict[str, str]] = {
        k: guard_subscripts(v) for k, v in GLSLRenderer.load_map.items()}
    store_map: ClassVar[dict[str, str]] = {
        k: guard_subscripts(v) for k, v in GLSLRenderer.store_map.items()}

    def render_accessors(self, kernel: KernelDef) -> str:
        lines = super().render_accessors(kernel).split("\n")
        blocks = [line for line in lines if line.startswith("layout(std430")]
        functions = [line for line in lines if not line.startswith("layout(")]
        fault = (f"layout(std430, set = 0, binding = {len(kernel.buffers)}) buffer "
                 "hg_fault_block { uint hg_fault; };")
        return "\n".join(blocks + [fault, self.render_push_block(kernel)]
                         + self.render_index_helpers(kernel) + functions)

    def render_push_block(self, kernel: KernelDef) -> str:
        """The push-constant block: bases, per-buffer word offsets, then the scalars."""
        names = [f"hg_base{d}" for d in range(PUSH_HEADER_WORDS)]
        names += [f"hg_d_{p.name}" for p in kernel.buffers]
        fields = [f"uint {name};" for name in names]
        fields += [f"{self.type_map[p.dtype]} {p.name};" for p in kernel.scalars]
        return f"layout(push_constant) uniform hg_push_block {{ {' '.join(fields)} }} hg_pc;"

    def render_index_helpers(self, kernel: KernelDef) -> list[str]:
        """``hg_ix_<b>``: rebase a word index into the window; flag it when outside."""
        return [
            f"uint hg_ix_{p.name}(uint hg_j) {{ uint hg_k = hg_j + hg_pc.hg_d_{p.name}; "
            f"if (hg_k >= uint({p.name}.length())) {{ atomicOr(hg_fault, 1u); }} return hg_k; }}"
            for p in kernel.buffers]


def check_push_size(kernel: KernelDef, limit: int) -> int:
    """Return the push-constant bytes of ``kernel``.

    Raises:
        UnsupportedOpError: more than the device's ``maxPushConstantsSize``.
    """
    size = 4 * push_words(kernel)
    if size > limit:
        raise UnsupportedOpError(
            f"kernel {kernel.name} needs {size} bytes of Vulkan push constants; the device "
            f"allows {limit}",
            fix="pass fewer scalars or buffers (each takes one 32-bit word).")
    return size


_RENDERER = VulkanGLSLRenderer()


# -- compute pipelines ---------------------------------------------------------------------
# Shader module, descriptor layout and push constants; a launch's dispatches (one per chunk)
# are recorded into one command buffer on the current stream.

@dataclass(frozen=True)
class Dispatch:
    """One vkCmdDispatch: buffer windows per binding, push-constant bytes and group counts."""

    windows: tuple[tuple[Any, int, int], ...]  # (VkBuffer, byte offset, byte range) per binding
    push: bytes
    groups: tuple[int, int, int]


class VulkanPipeline:
    """A compute pipeline for one SPIR-V module with ``n_buffers`` storage-buffer bindings.

    Args:
        ctx: the device context.
        spirv: the SPIR-V binary (a multiple of 4 bytes).
        n_buffers: storage buffers bound at set 0, bindings 0..n-1.
        push_size: bytes of push constants (0 for none); at most maxPushConstantsSize.
        entry: the entry point name.
    """

    def __init__(
        self, ctx: VulkanContext, spirv: bytes, n_buffers: int, push_size: int,
        entry: str = "main",
    ) -> None:
        self.ctx, self.n_buffers, self.push_size = ctx, n_buffers, push_size
        vk, dev = ctx.vk, ctx.device
        self._handles: list[tuple[str, Any]] = []
        module_info = ctx._info("SHADER_MODULE_CREATE_INFO", codeSize=len(spirv), pCode=spirv)
        self.module = self._own("vkDestroyShaderModule", call(
            vk.vkCreateShaderModule, dev, module_info, None))
        self.set_layout = self._own("vkDestroyDescriptorSetLayout", self._create_set_layout())
        self.layout = self._own("vkDestroyPipelineLayout", self._create_layout())
        stage = ctx._info(
            "PIPELINE_SHADER_STAGE_CREATE_INFO", stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            module=self.module, pName=entry)
        info = ctx._info("COMPUTE_PIPELINE_CREATE_INFO", stage=stage, layout=self.layout)
        infos = [info]
        self.pipeline = self._own("vkDestroyPipeline", call(
            vk.vkCreateComputePipelines, dev, None, 1, infos, None)[0])

    def _own(self, destroy: str, handle: Any) -> Any:
        self._handles.append((destroy, handle))
        return handle

    def _create_set_layout(self) -> Any:
        vk, ctx = self.ctx.vk, self.ctx
        bindings = [
            vk.VkDescriptorSetLayoutBinding(
                binding=i, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                descriptorCount=1, stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
            for i in range(self.n_buffers)]
        info = ctx._info(
            "DESCRIPTOR_SET_LAYOUT_CREATE_INFO", bindingCount=len(bindings),
            pBindings=bindings or None)
        return call(vk.vkCreateDescriptorSetLayout, ctx.device, info, None)

    def _create_layout(self) -> Any:
        vk, ctx = self.ctx.vk, self.ctx
        layouts = [self.set_layout]
        ranges = [vk.VkPushConstantRange(
            stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=self.push_size)]
        info = ctx._info(
            "PIPELINE_LAYOUT_CREATE_INFO", setLayoutCount=1, pSetLayouts=layouts,
            pushConstantRangeCount=1 if self.push_size else 0,
            pPushConstantRanges=ranges if self.push_size else None)
        return call(vk.vkCreatePipelineLayout, ctx.device, info, None)

    def run(self, dispatches: list[Dispatch]) -> None:
        """Record every dispatch into one command buffer and submit it on the current stream."""
        if not dispatches:
            return
        ctx, vk = self.ctx, self.ctx.vk
        pool = self._create_pool(len(dispatches))
        try:
            sets = self._write_sets(pool, dispatches)
        except BaseException:
            vk.vkDestroyDescriptorPool(ctx.device, pool, None)
            raise
        # On a non-default stream the work runs later: the pool lives until it completed.
        ctx.submit(lambda cmd: self._record(cmd, sets, dispatches),
                   cleanup=lambda: vk.vkDestroyDescriptorPool(ctx.device, pool, None),
                   wait=False)

    def _create_pool(self, count: int) -> Any:
        vk, ctx = self.ctx.vk, self.ctx
        sizes = [vk.VkDescriptorPoolSize(
            type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=max(1, count * self.n_buffers))]
        info = ctx._info(
            "DESCRIPTOR_POOL_CREATE_INFO", maxSets=count, poolSizeCount=1, pPoolSizes=sizes)
        return call(vk.vkCreateDescriptorPool, ctx.device, info, None)

    def _write_sets(self, pool: Any, dispatches: list[Dispatch]) -> list[Any]:
        vk, ctx = self.ctx.vk, self.ctx
        layouts = [self.set_layout] * len(dispatches)
        info = ctx._info(
            "DESCRIPTOR_SET_ALLOCATE_INFO", descriptorPool=pool,
            descriptorSetCount=len(dispatches), pSetLayouts=layouts)
        sets = list(call(vk.vkAllocateDescriptorSets, ctx.device, info))
        if self.n_buffers == 0:
            return sets
        # Every nested struct stays referenced until vkUpdateDescriptorSets returns (cffi).
        infos, writes = [], []
        for dset, dispatch in zip(sets, dispatches, strict=True):
            for binding, (buffer, offset, size) in enumerate(dispatch.windows):
                buffer_info = [vk.VkDescriptorBufferInfo(buffer=buffer, offset=offset, range=size)]
                infos.append(buffer_info)
                writes.append(ctx._info(
                    "WRITE_DESCRIPTOR_SET", dstSet=dset, dstBinding=binding,
                    descriptorCount=1, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                    pBufferInfo=buffer_info))
        vk.vkUpdateDescriptorSets(ctx.device, len(writes), writes, 0, None)
        return sets

    def _record(self, cmd: Any, sets: list[Any], dispatches: list[Dispatch]) -> None:
        vk = self.ctx.vk
        vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pipeline)
        barrier = [self.ctx._info(
            "MEMORY_BARRIER", srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
            dstAccessMask=vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT)]
        for i, (dset, dispatch) in enumerate(zip(sets, dispatches, strict=True)):
            if i:  # chunks may overlap at window edges; keep them ordered
                vk.vkCmdPipelineBarrier(
                    cmd, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, barrier, 0, None, 0, None)
            vk.vkCmdBindDescriptorSets(
                cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.layout, 0, 1, [dset], 0, None)
            if self.push_size:
                data = self.ctx.vk.ffi.new("char[]", dispatch.push)
                vk.vkCmdPushConstants(
                    cmd, self.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, self.push_size, data)
            vk.vkCmdDispatch(cmd, *dispatch.groups)

    def close(self) -> None:
        """Destroy the pipeline, layouts and shader module (idempotent)."""
        handles, self._handles = self._handles, []
        for destroy, handle in reversed(handles):
            getattr(self.ctx.vk, destroy)(self.ctx.device, handle, None)


# -- the device ----------------------------------------------------------------------------

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

    def _busy(self, raw: Any, fences: list[Any]) -> bool:
        return self._points.busy(raw)

    @functools.cached_property
    def _points(self) -> PoolPoints:
        return PoolPoints(self._ctx)

    def _alloc(self, nbytes: int, memory_class: MemoryClass) -> vkc.VulkanMemory:
        return vkc.create_memory(self._ctx, nbytes, memory_class)

    def _free(self, raw: vkc.VulkanMemory, nbytes: int, memory_class: MemoryClass) -> None:
        self._points.forget(raw)
        with self._ctx.lock:
            vkc.destroy_memory(self._ctx, raw)

    def _copyin(self, raw: vkc.VulkanMemory, src: memoryview) -> None:
        vkc.write_memory(self._ctx, raw, src)

    def _copyout(self, dest: memoryview, raw: vkc.VulkanMemory) -> None:
        vkc.read_memory(self._ctx, dest, raw)

    def _offset(self, raw: vkc.VulkanMemory, offset: int, nbytes: int) -> vkc.VulkanMemory:
        return vkc.window(raw, offset)

    def _copy(self, dest: vkc.VulkanMemory, src: vkc.VulkanMemory, nbytes: int) -> None:
        # Device to device in one vkCmdCopyBuffer (no size limit, no host staging).
        vkc.copy_memory(self._ctx, dest, src, nbytes)

    def _host_view(self, raw: vkc.VulkanMemory, nbytes: int) -> np.ndarray | None:
        # Host-visible memory stays mapped for its lifetime; a non-coherent mapping would need
        # a flush or invalidate around every host access, so it offers no plain view.
        if raw.mapped is None or not raw.coherent:
            return None
        return raw.mapped[raw.offset:raw.offset + nbytes]

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
                fix="apt-get install glslang-tools (or put glslangValidator on PATH).")
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


class VulkanProgram(WindowedProgram):
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

    def _launch(self, buffers: list[Allocation], scalars: Sequence[np.generic],
                global_size: tuple[int, int, int], local_size: tuple[int, int, int],
                wait: bool) -> float | None:
        dev: VulkanDevice = self.device  # type: ignore[assignment]
        roots, spans, steps, words = self._windows(buffers, scalars, global_size, local_size)
        stream = dev.async_stream()
        fault = ((dev.fault if stream is None else stream.lane.fault).buffer, 0, 4),
        dispatches = [
            Dispatch(
                tuple((mem.buffer, off, size) for (mem, _, _), (off, size) in
                      zip(roots, step.windows, strict=True)) + fault,
                np.array(step.base + step.deltas, np.uint32).tobytes() + words, step.groups)
            for step in steps]
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
            self._raise_fault(spans, steps)
        return elapsed if wait else None

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


# The Vulkan IPC record: bytes, the VkDeviceMemory's allocationSize, its memory type index.
_IPC_RECORD = "<QQI"


def _close_import(ctx: VulkanContext, raw: vkc.VulkanMemory) -> None:
    """Free an imported memory once no Buffer uses it, after the work queued on it."""
    try:
        for stream in list(ctx.streams):
            stream.drain()
        with ctx.lock:
            vkc.destroy_memory(ctx, raw)
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
        self.local_limits = (tuple(int(n) for n in lim.maxComputeWorkGroupSize),
                             int(lim.maxComputeWorkGroupInvocations))
        # A one-word flag the shaders set when an index leaves its binding's window.
        self.fault = vkc.create_memory(ctx, 4, MemoryClass.HOST_PINNED)
        # Bound in place of zero-byte buffers: Vulkan has no null storage-buffer descriptor.
        self.empty = vkc.create_memory(ctx, 4, MemoryClass.STANDARD)
        super().__init__(index, ctx.name, VulkanAllocator(self),
                         VulkanCompiler(self.identity()), vkc.offered_classes(ctx))

    @classmethod
    def count(cls) -> int:
        """How many Vulkan devices the loader sees.

        Raises:
            BackendUnavailableError: the ``vulkan`` package or libvulkan is missing.
        """
        return count_devices()

    def binding_of(self, allocation: Allocation) -> tuple[vkc.VulkanMemory, int, int]:
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
    def fp64(self) -> bool:
        return self.ctx.fp64

    @property
    def ipc_class(self) -> MemoryClass | None:
        """PEER: the exportable (opaque fd) memory, where the driver has it."""
        return MemoryClass.PEER if self.ctx.exportable else None

    @functools.cached_property
    def ipc_id(self) -> bytes:  # type: ignore[override]
        """deviceUUID + driverUUID: an opaque fd opens only on the same device and driver."""
        return self.ctx.uuids() if self.ctx.exportable else b""

    def ipc_export(self, allocation: Allocation, event: bool) -> tuple[bytes, int | None]:
        """An opaque fd of a root PEER allocation and the record that imports it: its size
        in bytes, the VkDeviceMemory's allocationSize and memory type index (an import must
        repeat both).

        Raises:
            UnsupportedOpError: ``event`` (no external semaphores here: share producer-synced),
                or not a whole PEER buffer of this device.
        """
        if event or allocation.base is not None:
            raise UnsupportedOpError(
                "Vulkan shares whole PEER buffers, producer-synced only (no external "
                "semaphore fd)", fix="share with sync='producer_synced'.")
        fd = self.export_fd(allocation)
        raw: vkc.VulkanMemory = allocation.raw
        req = self.ctx.vk.vkGetBufferMemoryRequirements(self.ctx.device, raw.buffer)
        index = vkc.pick_memory_type(self.ctx.memory_type_flags(), req.memoryTypeBits,
                                     *vkc.CLASS_FLAGS[MemoryClass.PEER])
        return struct.pack(_IPC_RECORD, allocation.nbytes, int(req.size), index), fd

    def ipc_import(self, record: bytes, fd: int | None) -> tuple[Allocation, None]:
        """Import another process's opaque fd (VkImportMemoryFdInfoKHR) with no host copy,
        after checking the driver imports opaque fds and that this device's buffer of that
        size needs the same allocationSize and allows the same memory type.

        Raises:
            ProtocolError: a malformed record, a size or memory type this device would not
                allocate so, or an fd the driver refuses (not Vulkan memory of this driver).
            UnsupportedOpError: the driver cannot import opaque fds.
        """
        ctx, fix = self.ctx, "attach to a hg.share() of a tensor on this same Vulkan device."
        if not ctx.importable:
            raise UnsupportedOpError(f"{self} cannot import Vulkan memory fds",
                                     fix="share a host copy: hg.share(t, path, host=True).")
        try:
            nbytes, size, index = struct.unpack(_IPC_RECORD, record)
        except struct.error:
            raise ProtocolError(f"a Vulkan memory record of {len(record)} bytes, not "
                                f"{struct.calcsize(_IPC_RECORD)}", fix=fix) from None
        if fd is None or not 0 < nbytes <= size or nbytes > self.max_alloc:
            raise ProtocolError(f"cannot import {nbytes} bytes in {size} bytes of memory",
                                fix=fix)
        flags = ctx.memory_type_flags()
        with ctx.lock:
            buffer, req = ctx.create_buffer(-(-nbytes // 4) * 4, external=True)
            try:
                if (int(req.size) != size or index >= len(flags)
                        or not int(req.memoryTypeBits) >> index & 1):
                    raise ProtocolError(
                        f"the producer's memory ({size} bytes, type {index}) is not what this "
                        f"device allocates for {nbytes} bytes ({int(req.size)} bytes, types "
                        f"{int(req.memoryTypeBits):#x})", fix=fix)
                own, ours = os.dup(fd), os.fstat(fd)  # the driver owns the fd it imports
                try:
                    memory = ctx.import_fd(own, size, index, buffer)
                except DeviceError as exc:
                    # Some drivers (lavapipe) close it on failure too: close it only if it
                    # is still our file, never a descriptor reused since.
                    with contextlib.suppress(OSError):
                        if os.path.samestat(os.fstat(own), ours):
                            os.close(own)
                    raise ProtocolError(
                        f"the driver refused to import {size} bytes from the fd: not Vulkan "
                        f"memory of this driver, or less than the record says ({exc._args[0]})",
                        fix=fix) from None
                call(ctx.vk.vkBindBufferMemory, ctx.device, buffer, memory, 0)
            except BaseException:
                ctx.vk.vkDestroyBuffer(ctx.device, buffer, None)
                raise
        raw = vkc.VulkanMemory(buffer, memory, -(-nbytes // 4) * 4, flags[index], None)
        allocation = Allocation(raw, nbytes, MemoryClass.PEER, external=True, readonly=True)
        weakref.finalize(allocation, _close_import, ctx, raw)
        return allocation, None

    @property
    def max_alloc(self) -> int:
        return max(self.ctx.heap_size(i) for i in range(len(self.ctx.memory_type_flags())))

    def memory_info(self) -> tuple[int, int]:
        flags = self.ctx.memory_type_flags()
        heaps = {int(self.ctx.memory_props.memoryTypes[i].heapIndex): self.ctx.heap_size(i)
                 for i, f in enumerate(flags) if f & vkc.DEVICE_LOCAL}
        total = sum(heaps.values())
        return (max(0, total - self.allocator.allocated_bytes), total)

    def identity(self) -> str:
        return f"vulkan:{self.ctx.identity()}|glsl-abi-{VULKAN_GLSL_ABI}"

    @functools.cached_property
    def loop_budget(self) -> int | None:  # type: ignore[override]
        """The loop passes a one-item probe loop of PROBE_PASSES steps makes (llvmpipe: 65535),
        None when it runs to its end; measured once per device (its pipeline is disk-cached)."""
        res = Buffer(self, 8)
        self.run(LOOP_PROBE, res, n=PROBE_PASSES, wait=True)
        passes = int(res.numpy(np.uint32)[0])
        return passes if passes < PROBE_PASSES else None

    def synchronize(self) -> None:
        self.ctx.wait_idle()

    def stream_class(self) -> type:
        """Timeline-semaphore streams (Vulkan 1.2); host streams on older drivers."""
        return VkStream if self.ctx.timeline else super().stream_class()

    def event_class(self) -> type:
        return VkEvent if self.ctx.timeline else super().event_class()

    def async_stream(self) -> Any:
        """The current stream when it is a non-default one (its work is queued, not waited)."""
        hook = self.ctx.current
        stream = hook() if hook is not None else None
        return None if stream is None or stream.is_default else stream

    def finalize(self) -> None:
        """Release pooled memory, loaded pipelines and the staging buffer."""
        super().finalize()
        vkc.release_staging(self.ctx)

    def compile_options(self, kernel: KernelDef) -> tuple[str, ...]:
        return TARGET_ENV

    def render(self, kernel: KernelDef) -> str:
        """The shared GLSL rendering plus dispatch bases and windowed subscripts."""
        return _RENDERER.render(kernel)


DEVICE = VulkanDevice
