"""Argument resolution for compiled vyre kernels: Buffers, Tensors and DLPack arrays to device
allocations, zero-copy, with the size checks that keep every launch in bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import Allocation, MemoryClass
from vyre import ir
from vyre.lower import BufferSlot
from vyre.lower.errors import UnsupportedOpError
from vyre.reference.memory import is_backend_allocated

__all__ = ["SlotPlan", "plan_slots", "resolve"]

_U32_MAX = 0xFFFFFFFF
_BITS = {ir.Scalar.U8: 8, ir.Scalar.I8: 8, ir.Scalar.U16: 16, ir.Scalar.I16: 16}


@dataclass(frozen=True)
class SlotPlan:
    """What a launch needs to know about one storage buffer, computed once at compile time.

    Attributes:
        name: the vyre buffer name.
        itemsize: bytes per element on the device (1, 2 or 4).
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
        itemsize = _BITS.get(decl.element, 32) // 8  # type: ignore[arg-type]
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
    if array.nbytes and array.ctypes.data % plan.itemsize:
        raise _bad(plan.name, f"is not {plan.itemsize}-byte aligned", "pass an aligned copy.")
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
