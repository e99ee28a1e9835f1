"""vyre.compile: a program compiled once for one device, launched many times on device buffers.

Everything a launch can know in advance (slot plans, loaded programs, the trap flag) is fixed
at compile time, so ``Kernel(buffers, grid)`` only resolves its arguments and enqueues. The
arguments (Buffers, Tensors and DLPack arrays) become device allocations zero-copy, with the
size checks that keep every launch in bounds.
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.cache import LRUCache
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import Allocation, MemoryClass
from vyre import ir
from vyre.execute import _check_dialect, _open, check_flags, lower_cached, program_key
from vyre.lower import BufferSlot, Lowered
from vyre.lower.ops import DEFAULT_MAX_LOOP_PASSES, UnsupportedOpError, loop_passes, unsupported
from vyre.reference import _as_program
from vyre.reference.memory import is_backend_allocated

__all__ = ["Kernel", "compile", "kernel_cache_clear"]

_U32_MAX = 0xFFFFFFFF
# Compiled kernels kept per device (each holds its loaded programs).
KERNEL_CACHE_CAPACITY = 128
_CACHES: weakref.WeakKeyDictionary[Device, LRUCache[tuple[bytes, str, str], Kernel]] = \
    weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


# -- arguments: Buffers, Tensors and DLPack arrays to device allocations ----------------------


@dataclass(frozen=True)
class SlotPlan:
    """What a launch needs to know about one storage buffer, computed once at compile time.

    Attributes:
        name: the vyre buffer name.
        itemsize: bytes per element on the device (1, 2, 4, 8 or 16; the kernel reads
            64-bit and vector elements as u32 words).
        min_bytes: the fewest bytes the caller's buffer may have.
        fixed_len: the element count the kernel sees (BufLen and guards) for backend-allocated
            outputs, which the reference sizes from the declaration; None: from the buffer.
        writable: the kernel may store to it.
    """

    name: str
    itemsize: int
    min_bytes: int
    fixed_len: int | None
    writable: bool


def plan_slots(slots: tuple[BufferSlot, ...], writable: frozenset[str]) -> tuple[SlotPlan, ...]:
    """One :class:`SlotPlan` per lowered storage buffer, in kernel parameter order."""
    plans = []
    for slot in slots:
        decl = slot.decl
        itemsize = ir.size_bytes(decl.element) or 4
        fixed = decl.count if is_backend_allocated(decl) else None
        plans.append(SlotPlan(decl.name, itemsize, decl.count * itemsize, fixed,
                              decl.name in writable))
    return tuple(plans)


def _bad(name: str, why: str, fix: str) -> UnsupportedOpError:
    return UnsupportedOpError(f"vyre kernel: buffer {name!r} {why}", fix=fix)


def _host_allocation(array: np.ndarray, plan: SlotPlan) -> Allocation:
    """A host array as an allocation of the cpu device (its memory, not a copy)."""
    if array.dtype.hasobject:
        raise _bad(plan.name, "is an object array", "pass numeric data.")
    if not array.flags.c_contiguous:
        raise _bad(plan.name, "is not C-contiguous", "pass np.ascontiguousarray(x).")
    if plan.writable and not array.flags.writeable:
        raise _bad(plan.name, "is read-only but the program writes it",
                   "pass a writable array.")
    align = min(plan.itemsize, 4)
    if array.nbytes and array.ctypes.data % align:
        raise _bad(plan.name, f"is not {align}-byte aligned", "pass an aligned copy.")
    return Allocation(array.reshape(-1).view(np.uint8), array.nbytes, MemoryClass.STANDARD,
                      external=True)


def _from_tensor(value: Any, device: Device, plan: SlotPlan) -> Allocation:
    bufs = value.buffers
    if len(bufs) != 1:
        raise _bad(plan.name, f"is a tensor with {len(bufs)} buffers",
                   "pass a dense tensor (one buffer), or its buffer.")
    if bufs[0].device is not device:
        raise _bad(plan.name, f"is a tensor on {bufs[0].device.spec}, the kernel runs on "
                   f"{device.spec}", f"move it first: tensor.to({device.spec!r}).")
    return _from_buffer(bufs[0], device, plan)


def _from_buffer(value: Buffer, device: Device, plan: SlotPlan) -> Allocation:
    if value.device is not device:
        raise _bad(plan.name, f"is on {value.device.spec}, the kernel on {device.spec}",
                   f"allocate it on {device.spec} (Buffer({device.spec!r}, nbytes)).")
    return value.allocation


def _from_dlpack(value: Any, device: Device, plan: SlotPlan) -> Allocation:
    if isinstance(value, np.ndarray) or getattr(value, "__dlpack_device__", None) is not None \
            and int(value.__dlpack_device__()[0]) == 1:
        if device.kind != "cpu":
            raise _bad(plan.name, f"is host memory but the kernel runs on {device.spec}",
                       f"copy it to {device.spec} first (hurray_gpu.Buffer.from_bytes).")
        array = value if isinstance(value, np.ndarray) else np.from_dlpack(value)
        return _host_allocation(array, plan)
    raise _bad(plan.name, "is device memory from another library",
               "wrap it first: hurray_gpu.from_dlpack(x) gives a Tensor on its device "
               "(zero-copy), which vyre takes.")


def _allocation(value: Any, device: Device, plan: SlotPlan) -> Allocation:
    if isinstance(value, Buffer):
        return _from_buffer(value, device, plan)
    if hasattr(value, "descriptor") and hasattr(value, "buffers"):  # a hurray_gpu Tensor
        return _from_tensor(value, device, plan)
    if isinstance(value, np.ndarray) or hasattr(value, "__dlpack__"):
        return _from_dlpack(value, device, plan)
    raise _bad(plan.name, f"is a {type(value).__name__}",
               "pass a hurray_gpu Buffer or Tensor, or a DLPack array, on the kernel's device.")


def resolve(value: Any, device: Device, plan: SlotPlan) -> tuple[Allocation, int]:
    """The allocation behind ``value`` and the element count the kernel sees for it.

    Args:
        value: a hurray_gpu Buffer or Tensor, or a DLPack array (NumPy on the cpu device).
        device: the kernel's device.
        plan: the slot's plan.

    Returns:
        ``(allocation, length)``; every guarded access stays below ``length``, and
        ``length * itemsize <= allocation.nbytes``.

    Raises:
        UnsupportedOpError: another device, freed, too small, or not a buffer.
    """
    allocation = value.allocation if type(value) is Buffer and value.device is device \
        else _allocation(value, device, plan)
    if allocation.freed or allocation.root.freed:
        raise _bad(plan.name, "was freed", "do not launch with a freed buffer.")
    nbytes = allocation.nbytes
    if nbytes < plan.min_bytes:
        raise _bad(plan.name, f"has {nbytes} bytes, the program declares {plan.min_bytes}",
                   "allocate at least the declared count times the element size.")
    length = plan.fixed_len if plan.fixed_len is not None else nbytes // plan.itemsize
    if length > _U32_MAX:
        raise _bad(plan.name, f"has {length} elements (more than 2**32-1)",
                   "split the data across several launches.")
    return allocation, length


# -- compiled kernels -------------------------------------------------------------------------


class Kernel:
    """A vyre program compiled for one device. Call it to launch.

    Built by :func:`vyre.compile`; not constructed directly.

    Attributes:
        device: the device it runs on.
        lowered: the lowered program (kernels, slots, features).
        names: the storage buffer names, in the positional argument order (declaration order).
        workgroup_size: the program's workgroup size.
    """

    def __init__(self, lowered: Lowered, device: Device) -> None:
        self.device = device
        self.lowered = lowered
        writable = frozenset(s.decl.name for s, p in zip(
            lowered.slots, lowered.kernels[0].buffers, strict=False) if "w" in p.access)
        self._plans: tuple[SlotPlan, ...] = plan_slots(lowered.slots, writable)
        self.names = tuple(p.name for p in self._plans)
        self._index = {name: i for i, name in enumerate(self.names)}
        self.workgroup_size: tuple[int, int, int] = tuple(  # type: ignore[assignment]
            lowered.program.workgroup_size)
        # Loading goes through Device.program: its memory LRU, then the disk cache.
        self._programs = tuple(device.program(k) for k in lowered.kernels)
        self._trap = Buffer.from_bytes(device, bytes(8)) if lowered.uses_trap else None
        self._sizes: dict[Any, tuple[int, int, int]] = {}
        self._u32 = np.uint32
        self._passes = "loop_passes" in lowered.features

    def nbytes(self, name: str, count: int = 0) -> int:
        """Bytes to allocate for buffer ``name`` holding ``count`` elements (at least the
        declared count).

        Raises:
            UnsupportedOpError: no storage buffer of that name.
        """
        plan = self._plan(name)
        return max(plan.min_bytes, count * plan.itemsize)

    def _plan(self, name: str) -> SlotPlan:
        index = self._index.get(name)
        if index is None:
            raise unsupported(f"the program has no storage buffer {name!r}",
                              f"use one of {list(self.names)}.")
        return self._plans[index]

    def _global_size(self, grid: Any) -> tuple[int, int, int]:
        try:
            size: tuple[int, int, int] | None = self._sizes.get(grid)
        except TypeError:  # an unhashable grid (a list): validated below, not memoized
            size = None
        if size is not None:
            return size
        try:
            counts = tuple(operator.index(g) for g in grid)
        except TypeError:
            counts = ()
        if len(counts) != 3 or any(g < 0 or g > _U32_MAX for g in counts):
            raise unsupported(f"grid {grid!r} is not three integer workgroup counts in "
                              "[0, 2**32)", "pass grid=(x, y, z).")
        # An explicit grid counts max(1, g) workgroups per axis, as the reference does
        # (vyre 0.7.2's dispatch rule), so grid 0 runs one workgroup rather than nothing.
        counts = tuple(max(1, g) for g in counts)
        wx, wy, wz = self.workgroup_size
        full = (counts[0] * wx, counts[1] * wy, counts[2] * wz)
        if max(full) > _U32_MAX:
            raise unsupported(f"grid {counts} x workgroup {self.workgroup_size} has more than "
                              "2**32-1 invocations on an axis (ids would wrap)",
                              "use a smaller grid.")
        if isinstance(grid, tuple) and len(self._sizes) < 64:
            self._sizes[grid] = full
        return full

    def _arguments(self, buffers: Any) -> tuple[list[Any], list[Any]]:
        plans, device = self._plans, self.device
        if isinstance(buffers, Mapping):
            if len(buffers) != len(plans) or any(p.name not in buffers for p in plans):
                raise unsupported(f"buffers {sorted(buffers)} do not match the program's "
                                  f"storage buffers {list(self.names)}",
                                  "pass exactly one buffer per storage buffer, by name.")
            values: Sequence[Any] = [buffers[p.name] for p in plans]
        elif isinstance(buffers, (list, tuple)) and len(buffers) == len(plans):
            values = buffers
        else:
            raise unsupported(f"expected {len(plans)} buffers {list(self.names)}",
                              "pass a dict by name or a list in declaration order.")
        allocations, scalars = [], []
        u32 = self._u32
        for value, plan in zip(values, plans, strict=True):
            allocation, length = resolve(value, device, plan)
            allocations.append(allocation)
            scalars.append(u32(length))
        return allocations, scalars

    def __call__(self, buffers: Mapping[str, Any] | Sequence[Any],
                 grid: tuple[int, int, int], stream: Any = None,
                 max_loop_passes: int = DEFAULT_MAX_LOOP_PASSES) -> None:
        """Launch ``grid`` workgroups (x, y, z) over ``buffers``, asynchronously where the
        device queues work (opencl, cuda); synchronize the stream to read the results.

        Args:
            buffers: one per storage buffer, by name or in declaration order: hurray_gpu
                Buffers or Tensors on the kernel's device, or DLPack arrays there (NumPy
                arrays for the cpu device), used in place (zero-copy). Backend-allocated
                outputs need at least their declared count; the kernel sees every other
                buffer's whole length (BufLen), as the reference does.
            grid: workgroup counts (x, y, z).
            stream: a hurray_gpu Stream of this device; None: the current stream.
            max_loop_passes: loop passes one invocation may run on a device without a loop
                budget (as :func:`vyre.run_bytes`).

        Raises:
            UnsupportedOpError: a buffer on another device, freed, too small or of the wrong
                kind; a bad grid; a stream of another device.
            LoopBudgetError: a loop ran past the device's loop budget or ``max_loop_passes``.
            TrapError: the program trapped (i32 division by zero or MIN / -1, or Trap).
        """
        size = self._global_size(grid)
        allocations, scalars = self._arguments(buffers)
        if self._passes:
            scalars.append(self._u32(loop_passes(max_loop_passes)))
        trap = self._trap
        if trap is not None:
            allocations.append(trap.allocation)
        if stream is None:
            self._launch(allocations, scalars, size)
            if trap is not None:
                check_flags(trap, self.device, max_loop_passes)
            return
        if getattr(stream, "device", None) is not self.device:
            raise unsupported(f"stream {stream!r} is not a stream of {self.device.spec}",
                              f"pass hurray_gpu.sync.Stream({self.device.spec!r}).")
        with stream:  # the flag is read on the launch's own queue, after the launch
            self._launch(allocations, scalars, size)
            if trap is not None:
                check_flags(trap, self.device, max_loop_passes)

    def _launch(self, allocations: list[Any], scalars: list[Any],
                size: tuple[int, int, int]) -> None:
        if size[0] == 0 or size[1] == 0 or size[2] == 0:
            return
        # The checks Program.__call__ makes (device, liveness, extents <= sizes) were made by
        # _arguments(); its generic binding would cost more than the launch itself.
        for program in self._programs:  # GridSync segments, in order on one queue
            program.launch_prechecked(allocations, scalars, size)

    def __repr__(self) -> str:
        return (f"<vyre.Kernel {self.lowered.kernels[0].name} on {self.device.spec} "
                f"buffers={list(self.names)} workgroup={self.workgroup_size}>")


def _cache_for(device: Device) -> LRUCache[tuple[bytes, str, str], Kernel]:
    with _CACHES_LOCK:
        cache = _CACHES.get(device)
        if cache is None:
            cache = _CACHES[device] = LRUCache(KERNEL_CACHE_CAPACITY)
        return cache


def compile(program: ir.Program | bytes, device: Any = "cpu", *,  # noqa: A001 - vyre.compile
            callees: Mapping[str, ir.Program] | None = None) -> Kernel:
    """Compile ``program`` for ``device``: lowered, rendered in its dialect, compiled and
    loaded once; cached in memory by (fingerprint, dialect, device identity) and on disk by
    the device's compiler cache.

    Args:
        program: a :class:`vyre.Program`, or VIR0 wire bytes.
        device: a hurray_gpu device or spec (``"cpu"``, ``"opencl:0"``, ``"vulkan:0"``,
            ``"cuda:0"``, ``"rocm:0"``).
        callees: op id -> callee program, inlined as the reference does.

    Returns:
        The :class:`Kernel`.

    Raises:
        vyre.ValidationError: the program is invalid.
        UnsupportedOpError: ``device`` compiles no kernels (the reference), or the program
            uses a construct this device cannot run exactly.
        CompileError: the device compiler rejected the rendered source.
    """
    prog = _as_program(program)
    dev = _open(device)
    key = (program_key(prog, callees), dev.dialect, dev.identity())
    cache = _cache_for(dev)
    hit = cache.get(key)
    if hit is not None:
        return hit
    lowered = lower_cached(prog, callees, dev.loop_budget)
    _check_dialect(lowered, dev)
    kernel = Kernel(lowered, dev)
    cache.put(key, kernel)
    return kernel


def kernel_cache_clear() -> None:
    """Drop every in-memory compiled kernel (the disk cache stays)."""
    with _CACHES_LOCK:
        caches = list(_CACHES.values())
    for cache in caches:
        cache.clear()
