"""Tensor placement: where a Tensor's buffers live, and moving them (``Tensor.to``, device loads).

Host tensors hold NumPy uint8 arrays; tensors on any other device hold Buffers. The cpu device's
Buffers (pinned memory) are still host memory: such tensors hold arrays that keep them alive.
"""

from __future__ import annotations

import ctypes
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hurray_gpu.buffer import Buffer
from hurray_gpu.device import Device, MemoryClass
from hurray_gpu.errors import HurrayFormatError, OutOfMemoryError, UnsupportedOpError
from hurray_gpu.format.descriptor.buffers import (
    DEVICE_ALIGNMENT,
    MIN_DATA_ALIGNMENT,
    BufferHandle,
    DeviceTag,
    SyncMode,
    is_valid_pair,
)
from hurray_gpu.transfer import Progress, copy_into, show_progress

if TYPE_CHECKING:
    from hurray_gpu.tensor import Tensor

__all__ = ["Placement", "host_place", "host_view", "is_host", "owner_of", "place_of", "resolve",
           "to_device"]

# Largest alignment honoured for host arrays (huge pages); larger declarations are capped.
MAX_HOST_ALIGN = 1 << 21


def host_view(buf: Buffer) -> np.ndarray:
    """A writable 1-D uint8 array over a cpu-device Buffer's memory that keeps it alive.

    The array's base is a ctypes holder carrying the Buffer, and NumPy keeps that base alive
    under every view derived from the array; so the memory cannot go back to the device pool
    while any array still points at it.
    """
    if buf.nbytes == 0:
        return np.empty(0, np.uint8)
    holder = (ctypes.c_uint8 * buf.nbytes).from_buffer(buf.allocation.raw)
    holder.owner = buf  # type: ignore[attr-defined]
    return np.frombuffer(holder, dtype=np.uint8)  # type: ignore[call-overload]


def owner_of(array: np.ndarray) -> Buffer | None:
    """The Buffer whose memory a host array (or a view of one) uses, if any."""
    base: Any = array
    while isinstance(base, np.ndarray):
        base = base.base
    owner = getattr(base, "owner", None)
    return owner if isinstance(owner, Buffer) else None


def host_place() -> tuple[Device, MemoryClass]:
    """The place of a plain host tensor: (cpu device, standard)."""
    from hurray_gpu.devices_api import device

    return device("cpu"), MemoryClass.STANDARD


def is_host(dev: Device) -> bool:
    """True for the cpu device, whose tensors hold host arrays rather than Buffers."""
    return dev.kind == "cpu"


def place_of(t: Tensor) -> tuple[Device, MemoryClass]:
    """(device, memory class) where a tensor's buffers actually live."""
    return t._place if t._place is not None else host_place()


def resolve(device: Any, memory_class: Any) -> tuple[Device, MemoryClass]:
    """Open a device spec and check it offers ``memory_class`` as a valid Hurray pair.

    Raises:
        BackendUnavailableError: the device cannot be opened.
        UnsupportedOpError: an unknown class, or one the device does not offer.
    """
    from hurray_gpu.devices_api import device as open_device

    dev = open_device(device)
    mclass = MemoryClass.parse(memory_class)
    offered = ", ".join(m.label for m in dev.memory_classes)
    if mclass not in dev.memory_classes or not is_valid_pair(dev.tag, mclass):
        raise UnsupportedOpError(f"{dev} offers no {mclass.label} memory for tensors",
                                 fix=f"use memory_class one of: {offered}.")
    return dev, mclass


@dataclasses.dataclass
class Placement:
    """A target (device, memory class) for tensor buffers, plus the transfer's progress bar."""

    device: Device
    memory_class: MemoryClass
    bar: Progress

    @property
    def place(self) -> tuple[Device, MemoryClass] | None:
        """The Tensor ``_place`` value: None for plain host memory."""
        host = is_host(self.device) and self.memory_class == MemoryClass.STANDARD
        return None if host else (self.device, self.memory_class)

    def __enter__(self) -> Placement:
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.close()

    def handle(self, h: BufferHandle) -> BufferHandle:
        """``h`` re-declared for this placement (tag, class, producer-synced, alignment)."""
        if h.byte_size == 0:
            align = h.alignment  # empty buffers may declare any alignment; keep it
        elif self.device.tag == DeviceTag.CPU:
            align = MIN_DATA_ALIGNMENT
        else:
            align = max(h.alignment, DEVICE_ALIGNMENT)  # the spec's rule for GPU writers
        return BufferHandle(h.byte_size, align, self.device.tag, SyncMode.PRODUCER_SYNCED,
                            self.memory_class)

    def retag(self, desc: Any) -> Any:
        """``desc`` with every buffer handle re-declared for this placement."""
        return dataclasses.replace(desc, buffers=tuple(self.handle(h) for h in desc.buffers))

    def alloc(self, h: BufferHandle) -> Any:
        """Uninitialised storage for one buffer: a host array or a Buffer."""
        from hurray_gpu.io._memory import aligned_empty

        if self.place is None:
            return aligned_empty(h.byte_size, min(max(h.alignment, 64), MAX_HOST_ALIGN))
        buf = Buffer(self.device, h.byte_size, self.memory_class)
        return host_view(buf) if is_host(self.device) else buf

    def fill(self, desc: Any, sources: Sequence[Any]) -> list[Any]:
        """Allocate storage for each of ``desc``'s buffers and copy ``sources`` into it.

        Args:
            desc: the (already retagged) descriptor.
            sources: one host uint8 array or Buffer per handle, exactly byte_size long.

        Raises:
            HurrayFormatError: a source's size differs from its handle's byte_size.
            OutOfMemoryError: the device has no room (nothing stays allocated).
        """
        check_sizes(desc.buffers, [_nbytes(s) for s in sources])
        out: list[Any] = []
        try:
            for h, src in zip(desc.buffers, sources, strict=True):
                out.append(self.alloc(h))
                copy_into(out[-1], src, self.bar)
        except BaseException:
            release(out)
            raise
        return out


def _nbytes(buf: Any) -> int:
    return int(buf.nbytes if isinstance(buf, Buffer) else buf.size)


def check_sizes(handles: Sequence[BufferHandle], sizes: Sequence[int]) -> None:
    """Require one buffer per handle, each exactly its handle's byte_size (before allocating).

    Raises:
        HurrayFormatError: a count or size mismatch.
    """
    if len(sizes) != len(handles):
        raise HurrayFormatError(f"{len(sizes)} buffers for {len(handles)} handles",
                                field="buffer_count", fix="pass one buffer per handle.")
    for i, (h, n) in enumerate(zip(handles, sizes, strict=True)):
        if n != h.byte_size:
            raise HurrayFormatError(
                f"buffers[{i}] holds {n} bytes but the descriptor declares {h.byte_size}",
                field=f"buffers[{i}].byte_size", fix="pass exactly byte_size bytes per buffer.")


def release(buffers: Sequence[Any]) -> None:
    """Free device storage made by :meth:`Placement.alloc` (host arrays are left to GC)."""
    for buf in buffers:
        owner = buf if isinstance(buf, Buffer) else owner_of(buf)
        if owner is not None:
            owner.free()


def check_room(dev: Device, total: int) -> None:
    """Refuse a transfer larger than the device's free memory before allocating any of it.

    Raises:
        OutOfMemoryError: the device reports less free memory than ``total``.
    """
    if is_host(dev) or total == 0:
        return  # host free memory excludes reclaimable cache: not a reliable bound
    free, capacity = dev.memory_info()
    if capacity and total > free:
        raise OutOfMemoryError(total, free, capacity,
                               fix=f"free memory on {dev.spec} or move fewer tensors at once.")


def subtree_bytes(t: Tensor) -> int:
    """Bytes of a tensor's buffers plus its members' (recursively)."""
    return sum(h.byte_size for h in t.descriptor.buffers) + sum(subtree_bytes(m)
                                                                 for m in t.members)


def _is_on(t: Tensor, dev: Device, mclass: MemoryClass) -> bool:
    if place_of(t) != (dev, mclass):
        return False
    if any(h.device_tag != dev.tag or h.memory_class != mclass or h.sync_mode
           for h in t.descriptor.buffers):
        return False
    return all(_is_on(m, dev, mclass) for m in t.members)


def to_device(t: Tensor, device: Any, memory_class: Any = MemoryClass.STANDARD,
              progress: bool | None = None) -> Tensor:
    """Implement :meth:`Tensor.to`: copy every buffer (members too) to ``device``."""
    dev, mclass = resolve(device, memory_class)
    if _is_on(t, dev, mclass):
        return t
    total = subtree_bytes(t)
    check_room(dev, total)
    with Progress(total, f"to {dev.spec}", show_progress(total, progress)) as bar:
        return _move(t, Placement(dev, mclass, bar))


def _move(t: Tensor, target: Placement) -> Tensor:
    members = [_move(m, target) for m in t.members]
    return place_tensor(t.descriptor, t.buffers, target, members)


def place_tensor(desc: Any, sources: Sequence[Any], target: Placement,
                 members: Sequence[Tensor] = ()) -> Tensor:
    """A Tensor at ``target`` holding copies of ``sources`` under a retagged ``desc``.

    The retagged descriptor is encoded (and so validated) and every source size is checked
    against its handle before anything is allocated.
    """
    from hurray_gpu.io import _codec
    from hurray_gpu.tensor import Tensor

    new = target.retag(desc)
    raw = _codec.encode(new)
    buffers = target.fill(new, sources)
    return Tensor._trusted(new, buffers, members=members, raw=raw, place=target.place)


def tensor_on(desc: Any, buffers: Sequence[Any]) -> tuple[Any, list[Any]]:
    """Validate caller-supplied Buffers for ``Tensor.from_parts``: one place, matching handles.

    Returns:
        ``(place, buffers)``: the Tensor ``_place`` and the buffers to hold.

    Raises:
        HurrayFormatError: Buffers on several places, mixed with host data, or a descriptor
            whose handles do not declare the Buffers' device tag and memory class.
    """
    places = {(b.device, b.memory_class) for b in buffers if isinstance(b, Buffer)}
    if len(places) != 1 or not all(isinstance(b, Buffer) for b in buffers):
        raise HurrayFormatError(
            "a tensor's buffers must all be host data or all Buffers of one device and class",
            field="buffers", fix="pass host buffers and call .to(device) instead.")
    (dev, mclass), = places
    check_sizes(desc.buffers, [b.nbytes for b in buffers])
    for i, h in enumerate(desc.buffers):
        if h.device_tag != dev.tag or h.memory_class != mclass:
            raise HurrayFormatError(
                f"buffers[{i}] is a Buffer on {dev.spec} ({mclass.label}) but its handle "
                f"declares device_tag 0x{h.device_tag:02X}, memory_class {h.memory_class}",
                field=f"buffers[{i}].device_tag",
                fix="declare the Buffers' device_tag and memory_class in the descriptor.")
    if not is_host(dev):
        return (dev, mclass), list(buffers)
    place = None if mclass == MemoryClass.STANDARD else (dev, mclass)
    return place, [host_view(b) for b in buffers]


