"""Backend base classes: Device, Allocator (pooling, size checks, OOM retry), Compiler, Program.

Backends subclass these and fill the underscore hooks; the policy lives here only.
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from hurray_gpu import config
from hurray_gpu.cache import LRUCache
from hurray_gpu.canary import Canary, Guard
from hurray_gpu.errors import BackendUnavailableError, OutOfMemoryError, UnsupportedOpError
from hurray_gpu.format.descriptor.buffers import MemoryClass
from hurray_gpu.program import Compiler, Program

if TYPE_CHECKING:
    from hurray_gpu.kernels.dialect.kernel import KernelDef
    from hurray_gpu.sync.event import Event
    from hurray_gpu.sync.stream import Stream

__all__ = ["Allocation", "Allocator", "Compiler", "Device", "MemoryClass", "Program"]

# Freed buffers kept for reuse, per allocator. Beyond this the oldest are really freed.
DEFAULT_POOL_LIMIT = 512 * 1024 * 1024
# Loaded programs kept per device.
PROGRAM_CACHE_CAPACITY = 256


@dataclass(eq=False)
class Allocation:
    """A device allocation or a view of one: the backend's raw handle plus its size and class."""

    raw: Any
    nbytes: int
    memory_class: MemoryClass
    base: Allocation | None = None
    offset: int = 0
    freed: bool = field(default=False)
    # Set on a canary-padded root and on the user's view of it (HURRAY_GPU_DEBUG_BOUNDS=1).
    guard: Guard | None = None

    @property
    def root(self) -> Allocation:
        """The allocation this one is a view of (itself when not a view)."""
        return self.base if self.base is not None else self

    @property
    def user_offset(self) -> int:
        """Byte offset inside the user's buffer (``offset`` less any canary padding)."""
        guard = self.root.guard
        return self.offset - (guard.before if guard is not None else 0)


def _as_bytes_view(data: Any, writable: bool) -> memoryview:
    try:
        view = memoryview(data)
    except TypeError as exc:
        raise UnsupportedOpError(
            f"cannot copy from/to {type(data).__name__}: not a buffer",
            fix="pass bytes, bytearray, memoryview or a contiguous numpy array.",
        ) from exc
    if not view.c_contiguous:
        raise UnsupportedOpError("buffer is not C-contiguous", fix="pass np.ascontiguousarray(x).")
    if writable and view.readonly:
        raise UnsupportedOpError("destination is read-only", fix="pass a writable buffer.")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


class Allocator:
    """Allocates device memory: checks sizes, pools freed buffers, retries once on OOM.

    Backends override ``_alloc``, ``_free``, ``_copyin``, ``_copyout`` and ``_offset``, and
    ``_copy`` where the device can copy between its own buffers without the host.

    With ``HURRAY_GPU_DEBUG_BOUNDS=1`` when it is created, every allocation is padded with
    canaries (``canary``, see :mod:`hurray_gpu.canary`); otherwise ``canary`` is None.

    Args:
        device: the owning device.
        pool_limit: the most bytes of freed buffers kept for reuse.
    """

    # Exception types a backend's ``_alloc`` raises when the device is out of memory.
    oom_errors: ClassVar[tuple[type[BaseException], ...]] = (MemoryError,)
    # False for allocators that store no data (canaries could never read back intact).
    canary_capable: ClassVar[bool] = True

    def __init__(self, device: Device, pool_limit: int = DEFAULT_POOL_LIMIT) -> None:
        self.device = device
        self.pool_limit = pool_limit
        self._pool: OrderedDict[tuple[int, MemoryClass], list[Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.pooled_bytes = 0
        self.allocated_bytes = 0
        self.peak_bytes = 0
        self.alloc_count = 0
        # Read once: the check costs nothing per launch when off, and the pool never mixes
        # padded and unpadded buffers (a guarded allocator pools only padded roots).
        self.canary = Canary(self) if self.canary_capable and config.debug_bounds() else None

    # -- public policy ------------------------------------------------------------------
    def alloc(self, nbytes: int, memory_class: MemoryClass | int | str = 0) -> Allocation:
        """Allocate ``nbytes`` of ``memory_class`` memory, reusing a pooled buffer if any.

        Raises:
            UnsupportedOpError: bad size, or a class the device does not offer.
            OutOfMemoryError: the device has no room even after emptying the pool.
        """
        mclass = self._check_request(nbytes, memory_class)
        if nbytes == 0:
            return Allocation(None, 0, mclass)
        canary = self.canary if self.canary is not None and self.canary.guards(mclass) else None
        total = nbytes if canary is None else canary.padded_size(nbytes, mclass)
        raw = self._take_pooled(total, mclass)
        fresh = raw is None
        if fresh:
            raw = self._alloc_with_retry(total, mclass)
        with self._lock:
            self.allocated_bytes += total
            self.peak_bytes = max(self.peak_bytes, self.allocated_bytes)
            self.alloc_count += 1
        if canary is None:
            return Allocation(raw, nbytes, mclass)
        try:
            return canary.wrap(raw, nbytes, mclass, fresh)
        except BaseException:
            self._release(raw, total, mclass)
            raise

    def free(self, allocation: Allocation) -> None:
        """Return an allocation to the pool (views and double frees are ignored).

        Raises:
            BoundsViolation: with canaries on, one changed since the last kernel's check.
        """
        if allocation.freed:
            return
        if allocation.guard is not None:  # a padded buffer; its root goes with it, not alone
            if allocation.base is not None and self.canary is not None:
                self.canary.release(allocation)
            return
        if allocation.base is not None:
            return
        allocation.freed = True
        if allocation.nbytes:
            self._release(allocation.raw, allocation.nbytes, allocation.memory_class)

    def _release(self, raw: Any, nbytes: int, memory_class: MemoryClass) -> None:
        with self._lock:
            self.allocated_bytes -= nbytes
        self._put_pooled(raw, nbytes, memory_class)

    def copyin(self, dest: Allocation, src: Any) -> None:
        """Copy all of ``src`` (bytes-like, exactly ``dest.nbytes`` long) into ``dest``."""
        view = _as_bytes_view(src, writable=False)
        self._check_live(dest, view.nbytes)
        if view.nbytes:
            self._copyin(dest.raw, view)

    def copyout(self, dest: Any, src: Allocation) -> None:
        """Copy all of ``src`` into ``dest`` (writable bytes-like, exactly ``src.nbytes``)."""
        view = _as_bytes_view(dest, writable=True)
        self._check_live(src, view.nbytes)
        if view.nbytes:
            self._copyout(view, src.raw)
        if self.canary is not None:  # the host reads results: run finished deferred checks
            self.canary.drain()

    def copy(self, dest: Allocation, src: Allocation) -> None:
        """Copy all of ``src`` into ``dest`` (same size, this allocator) with ``_copy``.

        Raises:
            UnsupportedOpError: a size mismatch, or either buffer was freed.
        """
        from hurray_gpu.transfer import staged_copy

        self._check_live(src, src.nbytes)
        self._check_live(dest, src.nbytes)
        if src.nbytes and dest.root is src.root and (
                src.offset - dest.nbytes < dest.offset < src.offset + src.nbytes):
            # Copy engines reject overlapping ranges of one buffer: memmove via the host.
            staged_copy(self, dest.raw, src.raw, src.nbytes, whole=True)
        elif src.nbytes:
            self._copy(dest.raw, src.raw, src.nbytes)

    def view(self, allocation: Allocation, offset: int, nbytes: int) -> Allocation:
        """Return a view of ``nbytes`` at ``offset`` inside ``allocation``.

        Raises:
            UnsupportedOpError: the range is outside the allocation.
        """
        self._check_live(allocation, allocation.nbytes)
        for value, label in ((offset, "offset"), (nbytes, "nbytes")):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise UnsupportedOpError(f"view {label} must be a non-negative int, got {value!r}",
                                         fix=f"pass {label} as an int >= 0.")
        if offset + nbytes > allocation.nbytes:
            raise UnsupportedOpError(
                f"view [{offset}, {offset + nbytes}) exceeds the {allocation.nbytes}-byte buffer",
                fix="keep offset + nbytes within the buffer.",
            )
        root = allocation.root
        start = allocation.offset + offset
        raw = None if nbytes == 0 else self._offset(root.raw, start, nbytes)
        return Allocation(raw, nbytes, allocation.memory_class, base=root, offset=start)

    def free_cache(self) -> None:
        """Really free every pooled buffer."""
        with self._lock:
            entries = [(k, raw) for k, raws in self._pool.items() for raw in raws]
            self._pool.clear()
            self.pooled_bytes = 0
        for (nbytes, mclass), raw in entries:
            self._free(raw, nbytes, mclass)

    def stats(self) -> dict[str, int]:
        """Accounting: live, pooled and peak bytes, and the number of allocations."""
        return {"allocated_bytes": self.allocated_bytes, "pooled_bytes": self.pooled_bytes,
                "peak_bytes": self.peak_bytes, "alloc_count": self.alloc_count}

    # -- helpers ------------------------------------------------------------------------
    def _check_request(self, nbytes: int, memory_class: MemoryClass | int | str) -> MemoryClass:
        if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
            raise UnsupportedOpError(f"allocation size must be a non-negative int, got {nbytes!r}",
                                     fix="pass nbytes as an int >= 0.")
        mclass = MemoryClass.parse(memory_class)
        if mclass not in self.device.memory_classes:
            offered = ", ".join(m.label for m in self.device.memory_classes)
            raise UnsupportedOpError(
                f"{self.device} has no {mclass.label} memory",
                fix=f"use one of: {offered}.",
            )
        limit = self.device.max_alloc
        if limit and nbytes > limit:
            free, total = self.device.memory_info()
            raise OutOfMemoryError(
                nbytes, free, total,
                fix=f"{self.device} allocates at most {limit} bytes at once; split the buffer.",
            )
        return mclass

    def _check_live(self, allocation: Allocation, nbytes: int) -> None:
        if allocation.freed or allocation.root.freed:
            raise UnsupportedOpError("buffer was freed", fix="do not use a buffer after free().")
        if nbytes != allocation.nbytes:
            raise UnsupportedOpError(
                f"copy of {nbytes} bytes into/out of a {allocation.nbytes}-byte buffer",
                fix="copy exactly the buffer size, or make a view of the part you need.",
            )

    def _alloc_with_retry(self, nbytes: int, mclass: MemoryClass) -> Any:
        try:
            return self._alloc(nbytes, mclass)
        except self.oom_errors:
            pass
        self.free_cache()
        gc.collect()
        try:
            return self._alloc(nbytes, mclass)
        except self.oom_errors as exc:
            free, total = self.device.memory_info()
            raise OutOfMemoryError(nbytes, free, total) from exc

    def _take_pooled(self, nbytes: int, mclass: MemoryClass) -> Any:
        with self._lock:
            raws = self._pool.get((nbytes, mclass))
            if not raws:
                return None
            self.pooled_bytes -= nbytes
            raw = raws.pop()
            if not raws:
                del self._pool[(nbytes, mclass)]
            return raw

    def _put_pooled(self, raw: Any, nbytes: int, mclass: MemoryClass) -> None:
        evicted: list[tuple[Any, int, MemoryClass]] = []
        with self._lock:
            if nbytes > self.pool_limit:
                evicted.append((raw, nbytes, mclass))
            else:
                self._pool.setdefault((nbytes, mclass), []).append(raw)
                self._pool.move_to_end((nbytes, mclass))
                self.pooled_bytes += nbytes
            while self.pooled_bytes > self.pool_limit and self._pool:
                (size, cls_), raws = next(iter(self._pool.items()))
                evicted.append((raws.pop(), size, cls_))
                self.pooled_bytes -= size
                if not raws:
                    del self._pool[(size, cls_)]
        for item in evicted:
            self._free(*item)

    # -- backend hooks ------------------------------------------------------------------
    def _alloc(self, nbytes: int, memory_class: MemoryClass) -> Any:
        raise NotImplementedError

    def _free(self, raw: Any, nbytes: int, memory_class: MemoryClass) -> None:
        raise NotImplementedError

    def _copyin(self, raw: Any, src: memoryview) -> None:
        raise NotImplementedError

    def _copyout(self, dest: memoryview, raw: Any) -> None:
        raise NotImplementedError

    def _offset(self, raw: Any, offset: int, nbytes: int) -> Any:
        raise UnsupportedOpError(f"{self.device} does not support buffer views",
                                 fix="copy the range out with copyout() instead of viewing it.")

    def _copy(self, dest: Any, src: Any, nbytes: int) -> None:
        from hurray_gpu.transfer import staged_copy

        staged_copy(self, dest, src, nbytes)


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
        self.allocator = allocator
        self.compiler = compiler
        self.memory_classes = tuple(memory_classes)
        self._programs: LRUCache[str, Program] = LRUCache(PROGRAM_CACHE_CAPACITY)
        # Per-definition fast path: rendering and hashing the source costs far more than the
        # launch itself. KernelDef is frozen, so it keys by value (its grid
        # and extent functions by identity, which keeps two same-body kernels apart).
        self._by_def: LRUCache[KernelDef, Program] = LRUCache(PROGRAM_CACHE_CAPACITY)
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
    def offset_alignment(self) -> int:
        """Bytes a view's offset must be a multiple of for kernels to take it (1 = any)."""
        return 1

    def memory_info(self) -> tuple[int, int]:
        """Return ``(free, total)`` device memory in bytes (0, 0 when unknown)."""
        return (0, 0)

    def identity(self) -> str:
        """Name, vendor and driver version: what the cache key needs about the target."""
        return f"{self.kind}:{self.name}"

    def synchronize(self) -> None:
        """Wait until all queued work on this device has finished."""

    # -- stream and event hooks (the host implementation unless a backend overrides) -----
    def stream_class(self) -> type[Stream]:
        """The Stream subclass ``Stream(device)`` builds for this device."""
        from hurray_gpu.sync.host import HostStream

        return HostStream

    def event_class(self) -> type[Event]:
        """The Event subclass ``Event(device)`` builds for this device."""
        from hurray_gpu.sync.host import HostEvent

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

    def compile_options(self, kernel: KernelDef) -> tuple[str, ...]:
        """Compiler options for ``kernel`` on this device (part of the cache key)."""
        return ()

    def render(self, kernel: KernelDef) -> str:
        """Return ``kernel`` rendered in this device's dialect."""
        from hurray_gpu.kernels.dialect import render

        return render(kernel, self.dialect)

    def program(self, kernel: KernelDef | str) -> Program:
        """Return the loaded program for ``kernel``: memory LRU, then disk cache, then compile.

        Args:
            kernel: a :class:`KernelDef` or the name of a registered kernel.

        Raises:
            BackendUnavailableError: this device cannot compile kernels here.
            CompileError: the compiler rejected the rendered source.
        """
        from hurray_gpu.kernels import get_kernel

        kdef = get_kernel(kernel) if isinstance(kernel, str) else kernel
        fast = self._by_def.get(kdef)
        if fast is not None:
            return fast
        if self.compiler is None:
            raise BackendUnavailableError(f"{self} cannot run kernels",
                                          fix="use a device with a compiler.")
        source = self.render(kdef)
        options = self.compile_options(kdef)
        key = self.compiler.cache_key(source, options)
        with self._program_lock:
            cached = self._programs.get(key)
            if cached is None:
                binary = self.compiler.compile_cached(source, options)
                cached = self.program_cls(self, kdef, binary)
                self._programs.put(key, cached)
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
