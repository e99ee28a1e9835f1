"""WebGPU backend (device tag 0x05) over wgpu-py; kernels are WGSL (hurray_gpu.dialect.wgsl).

WebGPU reaches Vulkan, Metal and D3D12 GPUs through one API. Memory: only the standard class
(a GPUBuffer with STORAGE | COPY_SRC | COPY_DST usage; the Hurray format defines no pinned,
unified or peer WebGPU memory). Host copies: ``queue.write_buffer`` in, a mapped MAP_READ
staging buffer out (one CHUNK at a time). Kernels: the WGSL module is validated by
wgpu's shader compiler (naga) when compiled and its text is the cached "binary"; a program
owns its compute pipeline with an explicit bind-group layout (storage windows, one uniform
block, the fault word).

Ordering: WebGPU has one queue per device and runs submissions in order, each visible to the
next, and every host read (a buffer map) waits for the submissions before it. So every
stream of a webgpu device is the host stream (its work is done for every observer once
issued); ``synchronize`` waits for the queue's submitted work (a word copied after them is read
back). A launch reads the fault word back before it returns, as Vulkan's default stream does.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hurray_gpu.backends.windows import LOOP_PROBE, PROBE_PASSES, WORD, Limits, WindowedProgram
from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.dialect.wgsl import uniform_words
from hurray_gpu.errors import (
    BackendUnavailableError,
    CompileError,
    DeviceError,
    UnsupportedOpError,
)
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.cache import KernelCacheBackend
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import CHUNK, Allocation, Allocator, MemoryClass
from hurray_gpu.runtime.program import Compiler

__all__ = ["DEVICE", "WebGPUAllocator", "WebGPUCompiler", "WebGPUDevice", "WebGPUMemory",
           "WebGPUProgram", "adapters"]

INSTALL = "pip install 'hurray_gpu[webgpu]' (it brings wgpu, the wgpu-native bindings)"
# Bumped whenever the WGSL ABI (bindings, uniform block, fault word) changes meaning.
WGSL_ABI = 1
# naga's runtime checks a program's module keeps (wgpu-native's WGPUShaderRuntimeChecks):
# bounds checks only. Its loop bounding (a 64-bit counter on every loop, against compilers
# that assume loops end) is left out: the kernels' loops end, GLSL's carry no such counter,
# and it cost the Hilbert layout about 30% of its time on lavapipe.
RUNTIME_CHECKS = 0x1
# WebGPU's minimum for minUniformBufferOffsetAlignment: each dispatch's uniform block starts on
# a multiple of the adapter's value, which is at most this.
UNIFORM_ALIGN = 256
# Limits a device is asked for at the adapter's maximum (the defaults are far lower: 128 MiB
# bindings, 256 invocations per work group, 16 KiB of work-group memory).
_LIMITS = ("max-buffer-size", "max-storage-buffer-binding-size", "max-storage-buffers-per-shader-stage",
           "max-compute-invocations-per-workgroup", "max-compute-workgroup-size-x",
           "max-compute-workgroup-size-y", "max-compute-workgroup-size-z",
           "max-compute-workgroup-storage-size", "max-compute-workgroups-per-dimension",
           "max-bind-groups", "max-bindings-per-bind-group")
# Adapter backends tried for compute, best first; wgpu's OpenGL backend lacks what kernels need
# (storage buffers in every stage, large bindings) and duplicates the Vulkan adapters.
_BACKENDS = ("Vulkan", "Metal", "D3D12")
_NO_WAYLAND = "/nonexistent/hurray-gpu-headless"  # see adapters()


def _wgpu() -> Any:
    try:
        import wgpu
    except ImportError as exc:
        raise BackendUnavailableError(f"the wgpu package is not installed ({exc})",
                                      fix=INSTALL + ".") from exc
    return wgpu


@functools.lru_cache(maxsize=1)
def adapters() -> tuple[Any, ...]:
    """The compute-capable adapters wgpu finds (Vulkan, Metal, D3D12), in wgpu's order.

    Raises:
        BackendUnavailableError: wgpu is not installed, or its native library does not load.
    """
    wgpu = _wgpu()
    try:
        # Only the backends with compute (Vulkan, Metal, D3D12): probing OpenGL would set up
        # EGL (slow, noisy) for adapters that are then left out. wgpu takes this only before
        # its instance exists; an application that made one keeps its own choice.
        from wgpu.backends.wgpu_native import extras

        extras.set_instance_extras(backends=["Primary"])
    except Exception:  # noqa: BLE001, S110 - an instance exists already: adapters are filtered
        pass
    # Mesa's device-select Vulkan layer (loaded implicitly) asks Wayland for the default GPU
    # when an instance enables surface extensions, as wgpu's does; with no Wayland session
    # libwayland prints "error: XDG_RUNTIME_DIR is invalid ..." to stderr (4 lines per
    # enumeration) before failing. Where no connection could succeed anyway, an absolute
    # WAYLAND_DISPLAY naming no socket makes it fail quietly; the environment is restored
    # after the enumeration (the only step that probes).
    headless = not (os.environ.get("WAYLAND_DISPLAY") or os.environ.get("WAYLAND_SOCKET")
                    or os.environ.get("XDG_RUNTIME_DIR", "").startswith("/"))
    if headless:
        os.environ["WAYLAND_DISPLAY"] = _NO_WAYLAND
    try:
        found = wgpu.gpu.enumerate_adapters_sync()
    except Exception as exc:  # noqa: BLE001 - wgpu-native loading errors are not typed
        raise BackendUnavailableError(f"wgpu cannot enumerate adapters: {exc}",
                                      fix="reinstall wgpu (" + INSTALL + ").") from exc
    finally:
        if headless and os.environ.get("WAYLAND_DISPLAY") == _NO_WAYLAND:
            del os.environ["WAYLAND_DISPLAY"]
    return tuple(a for a in found if a.info.get("backend_type") in _BACKENDS)


@dataclass(frozen=True)
class WebGPUMemory:
    """A GPUBuffer (``size`` bytes, a multiple of 4) and the byte offset a view starts at."""

    buffer: Any
    size: int
    offset: int = 0


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


class WebGPUAllocator(Allocator):
    """One GPUBuffer per allocation (sizes rounded up to words: WGSL sees u32 arrays).

    Every GPUBuffer it made is also held here until really freed: the cyclic collector
    finalizes each object of a garbage cycle, and wgpu's GPUBuffer releases its handle then,
    while the Buffer's finalizer in the same cycle pools it for reuse. Held from outside the
    cycle, the GPUBuffer is not garbage and keeps its handle.
    """

    oom_errors = (MemoryError,)

    def __init__(self, device: Device) -> None:
        super().__init__(device)
        self._live: dict[int, Any] = {}

    @property
    def _dev(self) -> WebGPUDevice:
        return self.device  # type: ignore[return-value]

    def _alloc(self, nbytes: int, memory_class: MemoryClass) -> WebGPUMemory:
        dev = self._dev
        size = _round_up(nbytes, WORD)
        try:
            buffer = dev.gpu.create_buffer(size=size, usage=dev.storage_usage)
        except Exception as exc:  # noqa: BLE001 - wgpu reports out-of-memory untyped
            if "memory" in str(exc).lower():
                raise MemoryError(str(exc)) from exc
            raise DeviceError(f"wgpu could not create a {size}-byte buffer: {exc}",
                              fix="check the adapter's limits (hurray-gpu devices).") from exc
        # One dict operation each, atomic on its own: no lock (the pool's is not needed here,
        # and _alloc may run for a finaliser inside one of the pool's sections).
        self._live[id(buffer)] = buffer
        return WebGPUMemory(buffer, size)

    def _free(self, raw: WebGPUMemory, nbytes: int, memory_class: MemoryClass) -> None:
        self._live.pop(id(raw.buffer), None)
        # wgpu keeps a destroyed buffer's memory until the submissions using it are done.
        raw.buffer.destroy()

    def _offset(self, raw: WebGPUMemory, offset: int, nbytes: int) -> WebGPUMemory:
        return WebGPUMemory(raw.buffer, raw.size, raw.offset + offset)

    def _copyin(self, raw: WebGPUMemory, src: memoryview) -> None:
        dev, start, n = self._dev, raw.offset, src.nbytes
        low, high = start // WORD * WORD, _round_up(start + n, WORD)
        if (low, high) != (start, start + n):
            # write_buffer takes whole words: the partial edge words keep their other bytes.
            staged = bytearray(high - low)
            dev.read(raw.buffer, low, memoryview(staged)[:WORD])
            dev.read(raw.buffer, high - WORD, memoryview(staged)[-WORD:])
            staged[start - low:start - low + n] = src
            src, start = memoryview(staged), low
        with dev.lock:
            dev.queued += 1
            for off in range(0, src.nbytes, CHUNK):
                piece = src[off:off + CHUNK]
                dev.gpu.queue.write_buffer(raw.buffer, start + off, piece)

    def _copyout(self, dest: memoryview, raw: WebGPUMemory) -> None:
        self._dev.read(raw.buffer, raw.offset, dest)

    def _copy(self, dest: WebGPUMemory, src: WebGPUMemory, nbytes: int) -> None:
        if dest.offset % WORD or src.offset % WORD or nbytes % WORD:
            self._staged_copy(dest, src, nbytes)  # copy_buffer_to_buffer takes whole words
            return
        dev = self._dev
        with dev.lock:
            dev.queued += 1
            encoder = dev.gpu.create_command_encoder()
            encoder.copy_buffer_to_buffer(src.buffer, src.offset, dest.buffer, dest.offset,
                                          nbytes)
            dev.gpu.queue.submit([encoder.finish()])


class WebGPUCompiler(Compiler):
    """WGSL validated by wgpu (naga); the WGSL text is the binary.

    Args:
        device: the device whose GPUDevice builds the shader modules.
        identity: the device identity (adapter, backend, wgpu version).
        cache: the binary store; default: ``HURRAY_GPU_CACHE_DIR/webgpu``.
    """

    backend = "webgpu"

    def __init__(self, device: WebGPUDevice, identity: str,
                 cache: KernelCacheBackend | None = None) -> None:
        self._device = device
        super().__init__(identity, cache)

    def version(self) -> str:
        """wgpu-py's version (naga and wgpu-native come with it; part of the cache key)."""
        return f"wgpu {_wgpu().__version__}"

    def compile(self, source: str, options: Sequence[str] = ()) -> bytes:
        """Validate ``source`` (naga parses and checks the whole module); the program builds
        its pipeline once, from the binary.

        Raises:
            CompileError: wgpu rejected the module.
        """
        try:
            self._device.gpu.create_shader_module(code=source)
        except Exception as exc:  # noqa: BLE001 - wgpu raises GPUValidationError and others
            raise CompileError("wgpu rejected the WGSL module", source, tuple(options),
                               str(exc)) from exc
        return source.encode()


class WebGPUProgram(WindowedProgram):
    """A compute pipeline with storage bindings 0..n-1, the uniform block (n) and the fault
    word (n + 1); a launch is one compute pass of one dispatch per planned window."""

    def __init__(self, device: Device, kernel: KernelDef, binary: bytes) -> None:
        super().__init__(device, kernel, binary)
        dev: WebGPUDevice = device  # type: ignore[assignment]
        wgpu, gpu = dev.wgpu, dev.gpu
        n = len(kernel.buffers)
        if n + 1 > dev.limits["max-storage-buffers-per-shader-stage"]:
            raise UnsupportedOpError(
                f"kernel {kernel.name} binds {n + 1} storage buffers; {dev.name} allows "
                f"{dev.limits['max-storage-buffers-per-shader-stage']}", fix="use fewer buffers.")
        shared = 4 * sum(count for _, count in kernel.shared)
        if shared > dev.limits["max-compute-workgroup-storage-size"]:
            raise UnsupportedOpError(
                f"kernel {kernel.name} needs {shared} bytes of work-group memory; {dev.name} "
                f"allows {dev.limits['max-compute-workgroup-storage-size']}",
                fix="use smaller shared arrays (or run it on another backend).")
        storage = {"type": wgpu.BufferBindingType.storage}
        entries = [{"binding": i, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": storage}
                   for i in range(n)]
        entries.append({"binding": n, "visibility": wgpu.ShaderStage.COMPUTE,
                        "buffer": {"type": wgpu.BufferBindingType.uniform}})
        entries.append({"binding": n + 1, "visibility": wgpu.ShaderStage.COMPUTE,
                        "buffer": storage})
        with dev.lock:
            self._layout = gpu.create_bind_group_layout(entries=entries)
            try:
                module = dev.shader_module(binary.decode())
                self._pipeline = gpu.create_compute_pipeline(
                    layout=gpu.create_pipeline_layout(bind_group_layouts=[self._layout]),
                    compute={"module": module, "entry_point": "main"})
            except Exception as exc:  # noqa: BLE001 - wgpu's validation errors are untyped
                raise CompileError(f"wgpu could not build the pipeline of {kernel.name}",
                                   binary.decode(errors="replace"), (), str(exc),
                                   fix="clear HURRAY_GPU_CACHE_DIR and retry; report the log "
                                   "if it persists.") from exc
        self._uniform_size = _round_up(4 * uniform_words(kernel), 16)

    def _launch(self, buffers: list[Allocation], scalars: Sequence[np.generic],
                global_size: tuple[int, int, int], local_size: tuple[int, int, int],
                wait: bool) -> float | None:
        dev: WebGPUDevice = self.device  # type: ignore[assignment]
        roots, spans, steps, words = self._windows(buffers, scalars, global_size, local_size)
        stride = _round_up(self._uniform_size, UNIFORM_ALIGN)
        block = bytearray(stride * len(steps))
        for k, step in enumerate(steps):
            data = np.array(step.base + step.deltas, np.uint32).tobytes() + words
            block[k * stride:k * stride + len(data)] = data
        wgpu, gpu = dev.wgpu, dev.gpu
        with dev.lock:
            dev.queued += 1
            uniform = gpu.create_buffer(size=len(block),
                                        usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
            gpu.queue.write_buffer(uniform, 0, block)
            gpu.queue.write_buffer(dev.fault, 0, bytes(WORD))
            encoder = gpu.create_command_encoder()
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(self._pipeline)
            for k, step in enumerate(steps):
                entries = [{"binding": i, "resource": {"buffer": mem.buffer, "offset": off,
                                                       "size": size}}
                           for i, ((mem, _, _), (off, size)) in enumerate(
                               zip(roots, step.windows, strict=True))]
                entries.append({"binding": len(roots), "resource": {
                    "buffer": uniform, "offset": k * stride, "size": self._uniform_size}})
                entries.append({"binding": len(roots) + 1, "resource": {
                    "buffer": dev.fault, "offset": 0, "size": WORD}})
                group = gpu.create_bind_group(layout=self._layout, entries=entries)
                compute.set_bind_group(0, group)
                compute.dispatch_workgroups(*step.groups)
            compute.end()
            start = time.perf_counter()
            fault = np.empty(1, np.uint32)
            # The pass and the fault word's copy in one submission; the read waits for both.
            dev.read(dev.fault, 0, fault.view(np.uint8).data, encoder)
            elapsed = time.perf_counter() - start
            uniform.destroy()
        if int(fault[0]):
            self._raise_fault(spans, steps)
        return elapsed if wait else None


class WebGPUDevice(Device):
    """One WebGPU adapter with its GPUDevice and queue.

    Attributes:
        features: the adapter's features (wgpu names, e.g. ``shader-f16``), sorted.
        backend: the native API under it (``Vulkan``, ``Metal``, ``D3D12``).
    """

    tag = 0x05
    kind = "webgpu"
    dialect = "wgsl"
    program_cls = WebGPUProgram

    def __init__(self, index: int = 0) -> None:
        self.wgpu = wgpu = _wgpu()
        found = adapters()
        if not 0 <= index < len(found):
            raise BackendUnavailableError(f"webgpu has {len(found)} adapter(s); no index {index}",
                                          fix="run `hurray-gpu devices` and pick a listed one.")
        self.adapter = adapter = found[index]
        info = adapter.info
        self.backend = str(info.get("backend_type", ""))
        self.features = tuple(sorted(str(f) for f in adapter.features))
        limits = dict(adapter.limits)
        self.gpu = adapter.request_device_sync(
            required_limits={k: limits[k] for k in _LIMITS if k in limits})
        self.limits = dict(self.gpu.limits)
        self.lock = threading.RLock()
        # Submissions (and buffer writes) queued, and how many of them a read has waited for:
        # synchronize() reads back only when work was queued since.
        self.queued = self.done = 0
        # adapter_type "CPU": a software implementation (lavapipe's llvmpipe, WARP).
        self.emulated = str(info.get("adapter_type", "")).lower() == "cpu"
        self.storage_usage = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
                              | wgpu.BufferUsage.COPY_DST)
        self.plan_limits = Limits(
            int(self.limits["max-storage-buffer-binding-size"]) // WORD * WORD,
            int(self.limits["min-storage-buffer-offset-alignment"]),
            (int(self.limits["max-compute-workgroups-per-dimension"]),) * 3)
        self.local_limits = (tuple(int(self.limits[f"max-compute-workgroup-size-{a}"])
                                   for a in "xyz"),
                             int(self.limits["max-compute-invocations-per-workgroup"]))
        self.fault = self.gpu.create_buffer(size=WORD, usage=self.storage_usage)
        # Bound in place of zero-byte buffers: WebGPU has no empty storage binding.
        self.empty = WebGPUMemory(self.gpu.create_buffer(size=WORD, usage=self.storage_usage),
                                  WORD)
        name = str(info.get("device") or info.get("description") or "WebGPU adapter")
        super().__init__(index, name, WebGPUAllocator(self),
                         WebGPUCompiler(self, self.identity_of(info)), (MemoryClass.STANDARD,))

    @property
    def fp64(self) -> bool:
        """False: WGSL has no f64 type (wgpu's ``shader-f64`` feature is not a WGSL extension
        naga accepts); kernels that compute in f64 (the correctly rounded CR_* functions) run
        on its exact emulation (``f64_kernels``, dialect/softf64.py)."""
        return False

    @classmethod
    def count(cls) -> int:
        """How many compute adapters wgpu finds.

        Raises:
            BackendUnavailableError: wgpu is not installed or does not load.
        """
        return len(adapters())

    def identity_of(self, info: dict[str, Any]) -> str:
        """Adapter, backend, driver and wgpu version: what a cached module depends on."""
        parts = [str(info.get(k, "")) for k in ("vendor", "device", "description", "backend_type")]
        return f"webgpu:{':'.join(parts)}|wgpu-{self.wgpu.__version__}|wgsl-abi-{WGSL_ABI}"

    def identity(self) -> str:
        return self.identity_of(self.adapter.info)

    def read(self, buffer: Any, offset: int, dest: memoryview, encoder: Any = None) -> None:
        """Copy ``dest.nbytes`` bytes at ``offset`` of ``buffer`` into ``dest`` through the
        mapped staging buffer (waits for the work queued before it). ``encoder``: recorded
        work the first copy is appended to, so both go in one submission."""
        wgpu, gpu = self.wgpu, self.gpu
        n = dest.nbytes
        with self.lock:
            # Everything queued so far is done once the first map below has resolved.
            mark = self.queued
            pos = 0
            while pos < n:
                start = offset + pos
                low = start // WORD * WORD
                size = min(CHUNK, _round_up(offset + n, WORD) - low)
                # A new staging buffer per copy: one reused across reads was seen mapped
                # with the previous read's bytes (wgpu 0.32 on lavapipe; the canary tests
                # caught it), as if the map did not wait for the new copy.
                staging = gpu.create_buffer(
                    size=size, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
                if encoder is None:
                    encoder = gpu.create_command_encoder()
                encoder.copy_buffer_to_buffer(buffer, low, staging, 0, size)
                gpu.queue.submit([encoder.finish()])
                encoder = None
                staging.map_sync(wgpu.MapMode.READ, 0, size)
                self.done = max(self.done, mark)
                try:
                    data = staging.read_mapped(0, size, copy=False)
                    take = min(n - pos, size - (start - low))
                    dest[pos:pos + take] = data[start - low:start - low + take]
                finally:
                    staging.unmap()
                    staging.destroy()
                pos += take

    def shader_module(self, code: str) -> Any:
        """The module of WGSL ``code`` with naga's ``RUNTIME_CHECKS`` only, through
        wgpu-native's wgpuDeviceCreateShaderModuleTrusted (wgpu-py 0.32 calls it nowhere; its
        private cffi helpers build the descriptor as its create_shader_module does). A
        wgpu-native without that entry point gets every check (same results, slower loops).
        """
        try:
            from wgpu.backends.wgpu_native import _api

            create = _api.libf.wgpuDeviceCreateShaderModuleTrusted
        except (ImportError, AttributeError):
            return self.gpu.create_shader_module(code=code)
        source = _api.new_struct_p("WGPUShaderSourceWGSL *", code=_api.to_c_string_view(code))
        source[0].chain.next = _api.ffi.NULL
        source[0].chain.sType = _api.lib.WGPUSType_ShaderSourceWGSL
        desc = _api.new_struct_p("WGPUShaderModuleDescriptor *",
                                 nextInChain=_api.ffi.cast("WGPUChainedStruct *", source),
                                 label=_api.to_c_string_view(""))
        handle = create(self.gpu._internal, desc, RUNTIME_CHECKS)
        if handle == _api.ffi.NULL:  # the program reports it as a CompileError
            raise RuntimeError("wgpu-native made no shader module of the WGSL")
        return _api.GPUShaderModule("", handle, self.gpu)

    def binding_of(self, allocation: Allocation) -> tuple[WebGPUMemory, int, int]:
        """(root memory, byte offset, nbytes) to bind for an allocation or view."""
        if allocation.nbytes == 0:
            return self.empty, 0, 0
        return allocation.root.raw, allocation.offset, allocation.nbytes

    @property
    def max_alloc(self) -> int:
        return int(self.limits["max-buffer-size"]) // WORD * WORD

    @functools.cached_property
    def loop_budget(self) -> int | None:  # type: ignore[override]
        """The loop passes a one-item probe loop makes (llvmpipe under Vulkan: 65535), None
        when it runs to its end; measured once per device."""
        res = Buffer(self, 8)
        self.run(LOOP_PROBE, res, n=PROBE_PASSES, wait=True)
        passes = int(res.numpy(np.uint32)[0])
        return passes if passes < PROBE_PASSES else None

    def synchronize(self) -> None:
        """Wait for every submission so far: a word copied in a submission after them is read
        back (a map waits for the submissions before it, which the queue runs in order).
        wgpu-py 0.32's onSubmittedWorkDone does not run: its callback's C type differs from
        the bundled wgpu-native's. Nothing to wait for when no work was queued since a read
        (a launch reads its fault word back before it returns)."""
        with self.lock:
            if self.done < self.queued:
                self.read(self.fault, 0, memoryview(bytearray(WORD)))


DEVICE = WebGPUDevice
