"""The Device base class: one opened device, its allocator, compiler and loaded programs.

Backends subclass it and set the class attributes; the policy (program caching, the debug
canary wrappers, default streams) lives here only.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import blake3

from hurray_gpu import config, dialect
from hurray_gpu.dialect import render
from hurray_gpu.dialect.kernel import KernelDef, get_kernel
from hurray_gpu.errors import BackendUnavailableError, UnsupportedOpError
from hurray_gpu.runtime.cache import LRUCache, default_cache
from hurray_gpu.runtime.canary import CanaryAllocator, guarded
from hurray_gpu.runtime.memory import Allocation, Allocator, MemoryClass
from hurray_gpu.runtime.program import Compiler, Program
from hurray_gpu.runtime.stream import Event, HostEvent, HostStream, Stream

__all__ = ["Device"]

# Loaded programs kept per device.
PROGRAM_CACHE_CAPACITY = 256


@functools.cache
def _renderer_digest() -> str:
    """blake3 of the renderer's own source files: any change to them is a new rendering.

    Reading and hashing them was a millisecond of a warm first call, so the digest is kept in
    the disk cache under each file's name, size and modification time (what Python checks
    before it trusts a .pyc): an edited file is read and hashed again.
    """
    root = os.path.dirname(dialect.__file__)
    names = sorted(n for n in os.listdir(root) if n.endswith(".py"))
    stats = [(n, st.st_size, st.st_mtime_ns) for n in names
             for st in (os.stat(os.path.join(root, n)),)]
    cache = default_cache("render")
    key = blake3.blake3(repr(("renderer-digest", root, stats)).encode()).hexdigest()
    kept = cache.load(key)
    if kept is not None and len(kept) == 64:
        return kept.decode("ascii", "replace")
    digest = blake3.blake3(b"".join(Path(root, n).read_bytes() for n in names)).hexdigest()
    cache.save(key, digest.encode(), f"blake3 of the renderer sources in {root}")
    return digest


def _render_inputs(kdef: KernelDef, dialect_name: str) -> str:
    """Everything :func:`render` reads from ``kdef``, as text (never valid kernel source)."""
    return repr(("render-inputs", _renderer_digest(), dialect_name, kdef.name, kdef.params,
                 kdef.body, kdef.local_size, kdef.tags, kdef.shared, kdef.private))


class Device:
    """One opened device. Subclasses set the class attributes and build the role objects.

    Attributes:
        tag: the Hurray device_tag (cpu 0x00, cuda 0x01, rocm 0x02, vulkan 0x04, opencl 0x08).
        kind: the Hurray python kind name (``"cpu"``, ``"opencl"``...).
        dialect: the renderer dialect its compiler consumes (``"c"``, ``"opencl"``...).
        index: the device index within its backend.
        name: a human-readable device name.
        memory_classes: the memory classes its allocator offers.
        emulated: True for a GPU API implemented on the CPU (pocl, lavapipe); the default
            device skips those because the native cpu backend is faster.
    """

    tag: ClassVar[int] = 0x00
    kind: ClassVar[str] = "base"
    dialect: ClassVar[str] = ""
    program_cls: ClassVar[type[Program]] = Program
    emulated: bool = False

    def __init__(self, index: int, name: str, allocator: Allocator,
                 compiler: Compiler | None,
                 memory_classes: Sequence[MemoryClass] = (MemoryClass.STANDARD,)) -> None:
        self.index = index
        self.name = name
        self.compiler = compiler
        self.memory_classes = tuple(memory_classes)
        # HURRAY_GPU_DEBUG_BOUNDS is read once, when the device opens: the check costs nothing
        # per launch when off, and a pool never mixes padded and unpadded buffers.
        self._program_cls: type[Program] = self.program_cls
        if config.debug_bounds() and allocator.stores_data:
            allocator = CanaryAllocator(allocator)
            self._program_cls = guarded(self.program_cls)
        self.allocator = allocator
        self._programs: LRUCache[str, Program] = LRUCache(PROGRAM_CACHE_CAPACITY)
        # Per-definition fast path: rendering and hashing the source costs far more than the
        # launch itself. KernelDef is frozen, so it keys by value (its grid
        # and extent functions by identity, which keeps two same-body kernels apart).
        self._by_def: LRUCache[KernelDef, Program] = LRUCache(PROGRAM_CACHE_CAPACITY)
        # In front of it, by identity: hashing a KernelDef walks all its fields.
        self._by_id: LRUCache[int, tuple[KernelDef, Program]] = LRUCache(PROGRAM_CACHE_CAPACITY)
        self._program_lock = threading.Lock()

    @classmethod
    def count(cls) -> int:
        """How many devices of this backend exist here.

        Raises:
            BackendUnavailableError: the driver package or library is missing.
        """
        return 0

    @property
    def spec(self) -> str:
        """The spec string that opens this device again, e.g. ``"opencl:0"``."""
        return f"{self.kind}:{self.index}"

    @property
    def max_alloc(self) -> int:
        """The largest single allocation in bytes (0 = no fixed limit)."""
        return 0

    @property
    def loop_budget(self) -> int | None:
        """The most loop passes (iterations and exit tests) one work item may make, all its
        loops together, before the driver silently ends them (lavapipe: 65535); None: no limit
        (docs/reliability.md, "Loop budgets")."""
        return None

    @property
    def offset_alignment(self) -> int:
        """Bytes a view's offset must be a multiple of for kernels to take it (1 = any)."""
        return 1

    @property
    def fp64(self) -> bool:
        """Whether the device has hardware f64 arithmetic: always on the host, CUDA and ROCm;
        OpenCL needs cl_khr_fp64, Vulkan shaderFloat64; WGSL has none."""
        return True

    @property
    def f64_kernels(self) -> bool:
        """Whether kernels may compute in f64 (the correctly rounded CR_* functions do): with
        hardware f64, or where the dialect emulates it exactly (WGSL: dialect/softf64.py),
        with the same bits either way."""
        renderer = dialect.DIALECTS.get(self.dialect)
        return self.fp64 or (renderer is not None and renderer.soft_f64)

    def memory_info(self) -> tuple[int, int]:
        """Return ``(free, total)`` device memory in bytes (0, 0 when unknown)."""
        return (0, 0)

    def identity(self) -> str:
        """Name, vendor and driver version: what the cache key needs about the target."""
        return f"{self.kind}:{self.name}"

    def synchronize(self) -> None:
        """Wait until all queued work on this device has finished."""

    # -- memory shared with other processes (hurray_gpu.net.ipc; docs/interchange.md, IPC) --
    @property
    def ipc_class(self) -> MemoryClass | None:
        """The memory class :meth:`ipc_export` exports (None: this device shares none)."""
        return None

    @property
    def ipc_id(self) -> bytes:
        """This physical device as another process identifies it (b"": shares no memory)."""
        return b""

    def ipc_export(self, allocation: Allocation, event: bool) -> tuple[bytes, int | None]:
        """A record (and an fd to pass along, or None) that opens ``allocation`` (of class
        :attr:`ipc_class`) in another process; ``event``: with an interprocess event recorded
        after the current stream's queued work, else the caller synchronized the device.

        Raises:
            UnsupportedOpError: this device cannot share memory (or events) across processes.
        """
        raise UnsupportedOpError(f"{self} cannot share device memory with other processes",
                                 fix="share a host copy: hg.share(t, path, host=True).")

    def ipc_import(self, record: bytes, fd: int | None) -> tuple[Allocation, Event | None]:
        """Open what :meth:`ipc_export` made in another process: a read-only external
        allocation (closed with its last reference) and the producer's event, if any. ``fd``
        stays the caller's.

        Raises:
            ProtocolError: a record or fd this device cannot open.
            UnsupportedOpError: this device cannot share memory across processes.
        """
        raise UnsupportedOpError(f"{self} cannot open another process's device memory",
                                 fix="share a host copy: hg.share(t, path, host=True).")

    # -- stream and event hooks (the host implementation unless a backend overrides) -----
    def stream_class(self) -> type[Stream]:
        """The Stream subclass ``Stream(device)`` builds for this device."""
        return HostStream

    def event_class(self) -> type[Event]:
        """The Event subclass ``Event(device)`` builds for this device."""
        return HostEvent

    @property
    def default_stream(self) -> Stream:
        """The stream work goes to when no ``with stream:`` block is active."""
        stream = self.__dict__.get("_default_stream")
        if stream is None:
            stream = self.__dict__["_default_stream"] = self.stream_class()(self, _default=True)
        return stream

    def finalize(self) -> None:
        """Release pooled memory and loaded programs."""
        self.allocator.free_cache()
        self._programs.clear()
        self._by_def.clear()
        self._by_id.clear()

    def kernel_support(self) -> tuple[str, str]:
        """Which kernels this device can run here: ``("all", "")``, ``("cached", why)`` (only
        those in the kernel cache: it cannot compile) or ``("none", why)``; ``why`` ends with
        a ``Fix:``."""
        return "all", ""

    def compile_options(self, kernel: KernelDef) -> tuple[str, ...]:
        """Compiler options for ``kernel`` on this device (part of the cache key)."""
        return ()

    def render(self, kernel: KernelDef) -> str:
        """Return ``kernel`` rendered in this device's dialect."""
        return render(kernel, self.dialect)

    def program(self, kernel: KernelDef | str) -> Program:
        """Return the loaded program for ``kernel``: memory LRU, then disk cache, then compile.

        Args:
            kernel: a :class:`KernelDef` or the name of a registered kernel.

        Raises:
            BackendUnavailableError: this device cannot compile kernels here.
            CompileError: the compiler rejected the rendered source.
        """
        kdef = get_kernel(kernel) if isinstance(kernel, str) else kernel
        same = self._by_id.get(id(kdef))
        if same is not None and same[0] is kdef:
            return same[1]
        fast = self._by_def.get(kdef)
        if fast is not None:
            self._by_id.put(id(kdef), (kdef, fast))  # kdef kept: its id is not reused
            return fast
        if self.compiler is None:
            raise BackendUnavailableError(f"{self} cannot run kernels",
                                          fix="use a device with a compiler.")
        options = self.compile_options(kdef)
        # Rendering costs more than loading a cached binary: when this device renders as the
        # dialect does, programs are keyed by what the rendering depends on (the kernel's
        # definition and the renderer's code), so a warm start never renders.
        source = None if type(self).render is Device.render else self.render(kdef)
        key = self.compiler.cache_key(
            _render_inputs(kdef, self.dialect) if source is None else source, options)
        with self._program_lock:
            cached = self._programs.get(key)
            if cached is None:
                binary = self.compiler.load(key) if source is None else None
                if binary is None:
                    text = self.render(kdef) if source is None else source
                    binary = self.compiler.compile_cached(text, options)
                    if source is None:
                        self.compiler.cache.save(key, binary, text)
                cached = self._program_cls(self, kdef, binary)
                self._programs.put(key, cached)
            elif cached.kernel != kdef:
                # The same code under another definition (its grid or extents differ): the
                # binary is shared, the launch checks must be this definition's.
                cached = self._program_cls(self, kdef, cached.binary)
            self._by_def.put(kdef, cached)
        return cached

    def run(self, kernel: KernelDef | str, *args: Any, global_size: Sequence[int] | None = None,
            wait: bool = False, **kwargs: Any) -> float | None:
        """Load ``kernel`` (cached) and launch it; see :meth:`Program.__call__`."""
        return self.program(kernel)(*args, global_size=global_size, wait=wait, **kwargs)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec} {self.name!r}>"

    def __str__(self) -> str:
        return f"device {self.spec} ({self.name})"
