"""Device memory: Allocation (a handle or a view of one) and Allocator (the policy every backend
shares: size checks, pooling, one retry on out-of-memory, views, staged copies).

Backends fill the underscore hooks only; nothing outside an Allocator calls them.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from hurray_gpu import config
from hurray_gpu.errors import OutOfMemoryError, UnsupportedOpError
from hurray_gpu.format.descriptor.buffers import MemoryClass
from hurray_gpu.runtime.locks import OwnedLock
from hurray_gpu.runtime.stream import Event, current_stream

if TYPE_CHECKING:
    from hurray_gpu.runtime.device import Device

__all__ = ["CHUNK", "DEFAULT_POOL_IDLE_BYTES", "DEFAULT_POOL_IDLE_SECONDS", "DEFAULT_POOL_LIMIT",
           "Allocation", "Allocator", "MemoryClass"]

# Freed buffers kept for reuse, per allocator. Beyond this the oldest are really freed.
DEFAULT_POOL_LIMIT = 512 * 1024 * 1024
# Pooled bytes over the idle budget left unused for the idle seconds are really freed by a
# background thread (docs/reliability.md says how to size both; env HURRAY_GPU_POOL_IDLE_*).
DEFAULT_POOL_IDLE_BYTES = 64 << 20
DEFAULT_POOL_IDLE_SECONDS = 2
# Host staging and per-step copy size: large enough to amortise a driver call, small enough
# that a staged copy of a multi-GiB buffer never doubles host memory.
CHUNK = 64 << 20
_ident = threading.get_ident
_NO_FENCES: list[Event] = []  # shared, never appended to: buffers freed on host-synchronous devices


# Slots make the per-call attribute reads cheaper; imported device memory is closed by a
# weakref finalizer, hence the weakref slot (Python 3.11+; plain attributes before).
@dataclass(eq=False, **({"slots": True, "weakref_slot": True} if sys.version_info >= (3, 11)
                        else {}))
class Allocation:
    """A device allocation or a view of one: the backend's raw handle plus its size and class.

    Attributes:
        raw: the backend's handle (a NumPy array on the host, a cl.Buffer, a CUDA pointer...).
        base: the root allocation this one is a view of (None for a root).
        offset: byte offset inside the root.
        external: memory the allocator did not allocate (a host array or file map it wraps):
            freeing drops the reference instead of pooling the memory.
        readonly: memory that must not be written (a read-only file map): kernels refuse
            to take it as an output.
        shared: exported to other processes (hurray_gpu.net.ipc): freeing really frees it,
            since a pooled reuse would overwrite what they read.
        address: where a backend keeps what it computed once to address the bytes (the cpu
            backend: their host address); False until then.
    """

    raw: Any
    nbytes: int
    memory_class: MemoryClass
    base: Allocation | None = None
    offset: int = 0
    external: bool = False
    readonly: bool = False
    freed: bool = field(default=False)
    shared: bool = False
    address: Any = False

    @property
    def root(self) -> Allocation:
        """The allocation this one is a view of (itself when not a view)."""
        return self.base if self.base is not None else self


def as_bytes_view(data: Any, writable: bool) -> memoryview:
    """``data`` as a flat byte memoryview.

    Raises:
        UnsupportedOpError: not a buffer, not C-contiguous, or read-only when ``writable``.
    """
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

    Backends override ``_alloc``, ``_free``, ``_copyin``, ``_copyout`` and ``_offset``; ``_copy``
    where the device copies between its own buffers without the host (the default stages
    through host memory one CHUNK at a time); ``_host_array`` where the memory is host memory
    NumPy can address directly.

    Args:
        device: the owning device.
        pool_limit: the most bytes of freed buffers kept for reuse.

    Attributes:
        pool_idle_budget, pool_idle_seconds: pooled bytes over the budget left unused for the
            seconds are really freed, oldest first, by a background thread with no user call.
    """

    # Exception types a backend's ``_alloc`` raises when the device is out of memory.
    oom_errors: ClassVar[tuple[type[BaseException], ...]] = (MemoryError,)
    # False for allocators that store no data (debug canaries could never read back intact).
    stores_data: ClassVar[bool] = True
    # True when ``raw`` handles are 1-D uint8 NumPy arrays over host memory (the cpu device):
    # such memory is used in place, with no copy, by everything that reads it on the host.
    host_memory: ClassVar[bool] = False
    # True where streams run asynchronously to the host (CUDA, ROCm, OpenCL): a buffer freed
    # while streams may still use it is pooled with an event per busy stream, and its next
    # user's stream waits for them. Host-synchronous devices stay event-free.
    pool_fences: ClassVar[bool] = False

    def __init__(self, device: Device, pool_limit: int = DEFAULT_POOL_LIMIT) -> None:
        self.device = device
        self.pool_limit = pool_limit
        self.pool_idle_budget, self.pool_idle_seconds = config.pool_idle(
            DEFAULT_POOL_IDLE_BYTES, DEFAULT_POOL_IDLE_SECONDS)
        # (nbytes, class) -> [(raw, events of the streams that may still use it, time pooled)],
        # oldest first: reuse takes the newest, so the oldest are the idle ones.
        self._pool: dict[tuple[int, MemoryClass], list[tuple[Any, list[Event], float]]] = {}
        # Allocations and frees may come from a Buffer's finaliser, which a garbage collection
        # can run on a thread inside one of this lock's sections: they defer there (OwnedLock).
        self._lock = OwnedLock()
        self.pooled_bytes = 0
        self.allocated_bytes = 0
        self.peak_bytes = 0
        self.alloc_count = 0

    # -- public policy ------------------------------------------------------------------
    def alloc(self, nbytes: int, memory_class: MemoryClass | int | str = 0) -> Allocation:
        """Allocate ``nbytes`` of ``memory_class`` memory, reusing a pooled buffer if any.

        Raises:
            UnsupportedOpError: bad size, or a class the device does not offer.
            OutOfMemoryError: the device has no room even after emptying the pool.
        """
        return self.take(nbytes, self.check_request(nbytes, memory_class))

    def take(self, nbytes: int, mclass: MemoryClass) -> Allocation:
        """:meth:`alloc` of a request :meth:`check_request` has passed (for callers that
        checked one size once and allocate it over and over)."""
        if nbytes == 0:
            return Allocation(None, 0, mclass)
        raw = self._take_pooled(nbytes, mclass)  # counted as allocated when found
        if raw is None:
            raw = self._alloc_with_retry(nbytes, mclass)
            lock = self._lock
            entered = lock.enter()  # False: a finaliser inside this thread's own section
            try:
                self._count(nbytes)
            finally:
                if entered:
                    lock.release()
        return Allocation(raw, nbytes, mclass)

    def _count(self, nbytes: int) -> None:
        """Under the lock: account for an allocation of ``nbytes``."""
        self.allocated_bytes += nbytes
        if self.allocated_bytes > self.peak_bytes:
            self.peak_bytes = self.allocated_bytes
        self.alloc_count += 1

    def free(self, allocation: Allocation) -> None:
        """Return a root allocation to the pool (views, external memory and double frees are
        only marked or ignored)."""
        if allocation.freed or allocation.base is not None:
            return
        allocation.freed = True
        if allocation.nbytes and not allocation.external:  # counted as freed when pooled
            if allocation.shared:  # other processes may still read it: never reused
                self._free_shared(allocation)
            else:
                self._put_pooled(allocation.raw, allocation.nbytes, allocation.memory_class)

    def _free_shared(self, allocation: Allocation) -> None:
        lock = self._lock
        if not lock.enter():  # a finaliser inside this thread's own section: after it
            lock.defer(self._free_shared, allocation)
            return
        try:
            self.allocated_bytes -= allocation.nbytes
        finally:
            lock.release()
        self._free(allocation.raw, allocation.nbytes, allocation.memory_class)

    def copyin(self, dest: Allocation, src: Any) -> None:
        """Copy all of ``src`` (bytes-like, exactly ``dest.nbytes`` long) into ``dest``."""
        view = as_bytes_view(src, writable=False)
        self._check_live(dest, view.nbytes, write=True)
        if view.nbytes:
            self._copyin(dest.raw, view)

    def copyout(self, dest: Any, src: Allocation) -> None:
        """Copy all of ``src`` into ``dest`` (writable bytes-like, exactly ``src.nbytes``)."""
        view = as_bytes_view(dest, writable=True)
        self._check_live(src, view.nbytes)
        if view.nbytes:
            self._copyout(view, src.raw)

    def copy(self, dest: Allocation, src: Allocation) -> None:
        """Copy all of ``src`` into ``dest`` (same size, this allocator).

        Raises:
            UnsupportedOpError: a size mismatch, or either buffer was freed.
        """
        self._check_live(src, src.nbytes)
        self._check_live(dest, src.nbytes, write=True)
        if not src.nbytes:
            return
        if dest.root is src.root and (
                src.offset - dest.nbytes < dest.offset < src.offset + src.nbytes):
            # Copy engines reject overlapping ranges of one buffer: a memmove via the host.
            self._staged_copy(dest.raw, src.raw, src.nbytes, whole=True)
        else:
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
                                         fix=f"pass the view's {label} as an int >= 0.")
        if offset + nbytes > allocation.nbytes:
            raise UnsupportedOpError(
                f"view [{offset}, {offset + nbytes}) exceeds the {allocation.nbytes}-byte buffer",
                fix="keep offset + nbytes within the buffer.",
            )
        root = allocation.root
        start = allocation.offset + offset
        raw = None if nbytes == 0 else self._offset(root.raw, start, nbytes)
        return Allocation(raw, nbytes, allocation.memory_class, base=root, offset=start,
                          external=root.external, readonly=root.readonly)

    def pieces(self, allocation: Allocation) -> Iterator[tuple[int, Allocation]]:
        """``(offset, view)`` chunks of at most CHUNK bytes covering ``allocation`` (one piece
        when the backend has no views)."""
        n = allocation.nbytes
        if n <= CHUNK:
            yield 0, allocation
            return
        try:
            first = self.view(allocation, 0, CHUNK)
        except UnsupportedOpError:
            yield 0, allocation
            return
        yield 0, first
        for off in range(CHUNK, n, CHUNK):
            yield off, self.view(allocation, off, min(CHUNK, n - off))

    def host_array(self, allocation: Allocation) -> np.ndarray | None:
        """The memory of ``allocation`` as a 1-D uint8 NumPy array, zero-copy, when the host can
        address it directly (the cpu device); None otherwise."""
        if not self.host_memory:
            return None
        if allocation.nbytes == 0:
            return np.empty(0, np.uint8)
        return allocation.raw  # type: ignore[no-any-return]

    def host_view(self, allocation: Allocation) -> np.ndarray | None:
        """A zero-copy 1-D uint8 host view of ``allocation`` where the host addresses the
        memory in place: the cpu device's memory, a Vulkan host-visible coherent mapping, CUDA
        and ROCm pinned host memory. None otherwise (device memory, OpenCL, WebGPU).

        The view is valid while the allocation is live; the host may touch it only while no
        queued device work uses the memory (synchronise the stream or event first).

        Raises:
            UnsupportedOpError: the allocation was freed.
        """
        self._check_live(allocation, allocation.nbytes)
        if not allocation.nbytes:
            return np.empty(0, np.uint8)
        if self.host_memory:
            return allocation.raw  # type: ignore[no-any-return]
        return self._host_view(allocation.raw, allocation.nbytes)

    def wrap(self, array: np.ndarray) -> Allocation:
        """An external (standard class) allocation over a 1-D uint8 host array, no copy.

        Raises:
            UnsupportedOpError: the device's memory is not host memory, or ``array`` is not
                a 1-D uint8 array.
        """
        if not self.host_memory:
            raise UnsupportedOpError(f"{self.device} cannot use host memory in place",
                                     fix="allocate a Buffer on the device and copy into it.")
        if (not isinstance(array, np.ndarray) or array.dtype != np.uint8 or array.ndim != 1
                or not array.flags.c_contiguous):
            raise UnsupportedOpError("only a contiguous 1-D uint8 host array can be wrapped",
                                     fix="pass np.ascontiguousarray(data).reshape(-1).view(np.uint8).")
        return Allocation(array if array.size else None, int(array.size), MemoryClass.STANDARD,
                          external=True, readonly=not array.flags.writeable)

    def free_cache(self) -> None:
        """Really free every pooled buffer."""
        with self._lock:
            entries = [(raw, *k) for k, raws in self._pool.items() for raw, *_ in raws]
            self._pool.clear()
            self.pooled_bytes = 0
        for entry in entries:
            self._free(*entry)

    def stats(self) -> dict[str, int]:
        """Accounting: live, pooled and peak bytes, and the number of allocations."""
        return {"allocated_bytes": self.allocated_bytes, "pooled_bytes": self.pooled_bytes,
                "peak_bytes": self.peak_bytes, "alloc_count": self.alloc_count}

    # -- helpers ------------------------------------------------------------------------
    def check_request(self, nbytes: int, memory_class: MemoryClass | int | str) -> MemoryClass:
        """Validate an allocation request without allocating (size, class, device limit).

        Raises:
            UnsupportedOpError: bad size, or a class the device does not offer.
            OutOfMemoryError: larger than the device allocates at once.
        """
        if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
            raise UnsupportedOpError(f"allocation size must be a non-negative int, got {nbytes!r}",
                                     fix="pass the size in bytes as an int >= 0.")
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

    def _check_live(self, allocation: Allocation, nbytes: int, write: bool = False) -> None:
        if allocation.freed or allocation.root.freed:
            raise UnsupportedOpError("buffer was freed", fix="do not use a buffer after free().")
        if write and allocation.readonly:
            raise UnsupportedOpError("buffer is read-only (it wraps read-only host memory)",
                                     fix="copy it into a new Buffer and write that.")
        if nbytes != allocation.nbytes:
            raise UnsupportedOpError(
                f"copy of {nbytes} bytes into/out of a {allocation.nbytes}-byte buffer",
                fix="copy exactly the buffer size, or make a view of the part you need.",
            )

    def _alloc_with_retry(self, nbytes: int, mclass: MemoryClass) -> Any:
        try:
            return self._alloc(nbytes, mclass)
        except self.oom_errors as exc:
            if self._lock.held_here():  # a finaliser inside a section: emptying the pool waits
                free, total = self.device.memory_info()
                raise OutOfMemoryError(nbytes, free, total) from exc
        self.free_cache()
        gc.collect()
        try:
            return self._alloc(nbytes, mclass)
        except self.oom_errors as exc:
            free, total = self.device.memory_info()
            raise OutOfMemoryError(nbytes, free, total) from exc

    # Every pooled allocation and free: the lock's enter and release are inlined (OwnedLock's
    # methods would cost more than the lock itself, a few percent of a small prepared call).
    def _take_pooled(self, nbytes: int, mclass: MemoryClass) -> Any:
        lock, me = self._lock, _ident()
        if lock.owner == me:  # a finaliser inside this thread's section: the pool is mid-change
            return None
        lock.raw.acquire()
        lock.owner = me
        try:
            raws = self._pool.get((nbytes, mclass))
            if not raws:  # (an emptied list stays: the size is likely to come back)
                return None
            self.pooled_bytes -= nbytes
            self._count(nbytes)
            raw, fences, _ = raws.pop()
        finally:
            lock.owner = 0
            lock.raw.release()
            if lock.pending:
                lock.run_deferred()
        if fences:  # the new user's work (kernels, copies) goes on its current stream
            stream = current_stream(self.device)
            for event in fences:
                event.wait(stream)
                event.release()
        return raw

    def _put_pooled(self, raw: Any, nbytes: int, mclass: MemoryClass) -> None:
        fences = self._fences() if self.pool_fences else _NO_FENCES
        evicted: list[tuple[Any, int, MemoryClass]] = []
        lock, me = self._lock, _ident()
        if lock.owner == me:  # a finaliser inside this thread's own section: after it
            lock.defer(self._put_pooled, raw, nbytes, mclass)
            return
        lock.raw.acquire()
        lock.owner = me
        try:
            self.allocated_bytes -= nbytes
            if nbytes > self.pool_limit:
                evicted.append((raw, nbytes, mclass))
            else:
                raws = self._pool.get((nbytes, mclass))
                if raws is None:
                    raws = self._pool[(nbytes, mclass)] = []
                raws.append((raw, fences, time.monotonic()))
                self.pooled_bytes += nbytes
            if self.pooled_bytes > self.pool_limit:
                evicted += self._pop_oldest(self.pool_limit)[0]
            idle = self.pooled_bytes > self.pool_idle_budget
        finally:
            lock.owner = 0
            lock.raw.release()
            if lock.pending:
                lock.run_deferred()
        # A real free needs no wait: cudaFree/hipFree wait for the device, and OpenCL defers
        # releasing a cl_mem until the commands queued on it finish.
        for item in evicted:
            self._free(*item)
        if idle:
            _TRIMMER.watch(self)

    def _trim_idle(self) -> float | None:
        """Really free the idle buffers over the idle budget; the seconds until the next check
        is due, or None once within budget."""
        with self._lock:
            evicted, wait = self._pop_oldest(self.pool_idle_budget,
                                             time.monotonic() - self.pool_idle_seconds)
        for item in evicted:
            self._free(*item)
        return wait

    def _pop_oldest(self, budget: int, idle_before: float | None = None) -> tuple[
            list[tuple[Any, int, MemoryClass]], float | None]:
        """Under the lock: take pooled buffers out, least recently pooled first, until at most
        ``budget`` bytes stay; with ``idle_before`` only those pooled before it that no stream
        may still use, stopping at the first that is not (and returning seconds to wait)."""
        evicted, wait = [], None
        while self.pooled_bytes > budget:
            pooled_at, key = min((raws[0][2], key) for key, raws in self._pool.items() if raws)
            raws = self._pool[key]
            if idle_before is not None and (pooled_at > idle_before or self._busy(*raws[0][:2])):
                wait = max(pooled_at - idle_before, 0.01)  # due later; or polled till its fence
                break
            evicted.append((raws.pop(0)[0], *key))
            self.pooled_bytes -= key[0]
            if not raws:
                del self._pool[key]
        return evicted, wait

    def _busy(self, raw: Any, fences: list[Event]) -> bool:
        """True while a stream may still use the pooled ``raw`` (its fences are pending)."""
        return not all(event.query() for event in fences)

    def _fences(self) -> list[Event]:
        """An event after the queued work of each stream that may still use a buffer being
        pooled: the current and default streams and every live one in ``device.streams``."""
        dev: Any = self.device
        streams = {id(s): s for s in (current_stream(dev), dev.default_stream,
                                      *list(getattr(dev, "streams", ())))}
        return [Event(dev, timing=False).record(s) for s in streams.values() if not s.query()]

    def _staged_copy(self, dest: Any, src: Any, nbytes: int, *, whole: bool = False) -> None:
        """Raw ``src`` to raw ``dest`` through host memory, one CHUNK at a time through
        ``_offset`` views; ``whole`` (needed when the ranges overlap) or a backend without
        views stages all ``nbytes`` at once."""
        step = nbytes if whole else min(nbytes, CHUNK)
        parts = [(dest, src, nbytes)]
        if step < nbytes:
            try:
                parts = [(self._offset(dest, off, size), self._offset(src, off, size), size)
                         for off in range(0, nbytes, step) for size in [min(step, nbytes - off)]]
            except UnsupportedOpError:
                step = nbytes
        staging = memoryview(bytearray(step))
        for d_raw, s_raw, size in parts:
            self._copyout(staging[:size], s_raw)
            self._copyin(d_raw, staging[:size])

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
                                 fix="copy the whole buffer instead of a part of it.")

    def _copy(self, dest: Any, src: Any, nbytes: int) -> None:
        self._staged_copy(dest, src, nbytes)

    def _host_view(self, raw: Any, nbytes: int) -> np.ndarray | None:
        return None


class _IdleTrimmer:
    """The one thread per process that frees idle pooled memory over budget (Allocator.
    _trim_idle). It runs only while some pool is over its idle budget, holds allocators by weak
    reference (it keeps no device alive) and is a daemon (it never delays interpreter exit)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every pool and thread (a forked child has no thread, maybe a held lock)."""
        self._cond = threading.Condition()
        self._watched: weakref.WeakSet[Allocator] = weakref.WeakSet()
        self._thread: threading.Thread | None = None
        self._pokes = 0  # allocators newly watched: a round in flight has not seen them

    def watch(self, allocator: Allocator) -> None:
        """Trim ``allocator`` (over its idle budget) until it is within it again."""
        if sys.is_finalizing():
            # Buffers freed while the interpreter tears down: a thread started now never
            # runs, and Thread.start would wait for it forever (the process exits anyway).
            return
        with self._cond:
            if allocator in self._watched:
                return
            self._watched.add(allocator)
            self._pokes += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hurray-gpu-pool-trim",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    pokes = self._pokes
                wait = self._round()
                with self._cond:
                    if pokes != self._pokes:  # a new pool over budget: trim it now
                        continue
                    if wait is None:
                        self._thread = None
                        return
                    self._cond.wait(min(wait, threading.TIMEOUT_MAX))
        except BaseException:
            with self._cond:  # a free raised (printed): the next pool over budget starts afresh
                self._thread = None
                self._watched.clear()
            raise

    def _round(self) -> float | None:
        # Strong references live only in this frame, never while the thread sleeps.
        with self._cond:
            watched = list(self._watched)
        waits = [allocator._trim_idle() for allocator in watched]
        due = []
        with self._cond:
            for allocator, wait in zip(watched, waits, strict=True):
                if allocator.pooled_bytes > allocator.pool_idle_budget:
                    due.append(0.0 if wait is None else wait)  # put back over budget meanwhile
                else:
                    self._watched.discard(allocator)
        return min(due, default=None)


_TRIMMER = _IdleTrimmer()
os.register_at_fork(after_in_child=_TRIMMER.reset)
