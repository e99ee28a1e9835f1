"""Vulkan device memory: memory-type choice per Hurray memory class, mapping, staging copies.

Host-visible memory is mapped once and copied with NumPy; device-only memory goes through a
bounded host-visible staging buffer and ``vkCmdCopyBuffer``, as do device-to-device copies.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from hurray_gpu.backends.vulkan_context import VulkanContext, call
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.runtime.memory import MemoryClass

# Staging buffer size: big enough to amortise a submit, small enough to keep around per device.
STAGING_BYTES = 32 * 1024 * 1024
_STAGING: weakref.WeakKeyDictionary[VulkanContext, VulkanMemory] = weakref.WeakKeyDictionary()

DEVICE_LOCAL = 0x1
HOST_VISIBLE = 0x2
HOST_COHERENT = 0x4
HOST_CACHED = 0x8

# (required flags, preferred flags, avoided flags) per memory class.
CLASS_FLAGS: dict[MemoryClass, tuple[int, int, int]] = {
    MemoryClass.STANDARD: (DEVICE_LOCAL, 0, HOST_VISIBLE),
    MemoryClass.HOST_PINNED: (HOST_VISIBLE, HOST_COHERENT | HOST_CACHED, DEVICE_LOCAL),
    MemoryClass.UNIFIED: (DEVICE_LOCAL | HOST_VISIBLE, HOST_COHERENT, 0),
    # Exportable device memory for peers (opaque fd); never mapped: not CPU-accessible.
    MemoryClass.PEER: (DEVICE_LOCAL, 0, HOST_VISIBLE),
}


def pick_memory_type(
    flags_by_type: list[int], type_bits: int, required: int, prefer: int = 0, avoid: int = 0
) -> int | None:
    """The best memory type index allowed by ``type_bits`` that has every ``required`` flag.

    Ranks by preferred flags present minus avoided flags present; ties go to the lower index
    (drivers list faster types first). Returns None when no type qualifies.
    """
    best, best_score = None, None
    for index, flags in enumerate(flags_by_type):
        if not type_bits >> index & 1 or flags & required != required:
            continue
        score = bin(flags & prefer).count("1") - bin(flags & avoid).count("1")
        if best_score is None or score > best_score:
            best, best_score = index, score
    return best


def offered_classes(ctx: VulkanContext) -> tuple[MemoryClass, ...]:
    """The memory classes for which this device has a suitable memory type."""
    flags = ctx.memory_type_flags()
    every = (1 << len(flags)) - 1
    return tuple(
        mclass for mclass, (required, _, _) in CLASS_FLAGS.items()
        if pick_memory_type(flags, every, required) is not None
        and (mclass != MemoryClass.PEER or ctx.exportable)
    )


@dataclass(eq=False)
class VulkanMemory:
    """One VkBuffer bound to its own VkDeviceMemory; ``offset`` > 0 marks a view into it."""

    buffer: Any
    memory: Any
    size: int  # bytes of the VkBuffer (the request rounded up to whole 32-bit words)
    flags: int  # property flags of the memory type
    mapped: np.ndarray | None  # uint8 view of the whole mapping when host-visible
    offset: int = 0

    @property
    def coherent(self) -> bool:
        """True when host writes need no flush and device writes no invalidate."""
        return bool(self.flags & HOST_COHERENT)


def create_memory(ctx: VulkanContext, nbytes: int, mclass: MemoryClass) -> VulkanMemory:
    """Create a buffer of ``nbytes`` (rounded up to 4) of class ``mclass``, mapped if visible.

    Raises:
        UnsupportedOpError: no memory type fits the class.
        MemoryError: the driver is out of memory (the allocator empties its pool and retries).
        DeviceError: any other driver failure.
    """
    vk = ctx.vk
    size = -(-nbytes // 4) * 4  # GLSL sees every buffer as uint words
    peer = mclass == MemoryClass.PEER
    buffer, req = ctx.create_buffer(size, external=peer)
    try:
        required, prefer, avoid = CLASS_FLAGS[mclass]
        flags_by_type = ctx.memory_type_flags()
        index = pick_memory_type(flags_by_type, req.memoryTypeBits, required, prefer, avoid)
        if index is None:
            raise UnsupportedOpError(
                f"Vulkan device {ctx.name} has no memory type for {mclass.label} buffers",
                fix="use standard memory on this device.",
            )
        memory = ctx.allocate_memory(req.size, index, export_for=buffer if peer else None)
    except BaseException:
        vk.vkDestroyBuffer(ctx.device, buffer, None)
        raise
    try:
        call(vk.vkBindBufferMemory, ctx.device, buffer, memory, 0)
        flags = flags_by_type[index]
        mapped = None
        if flags & HOST_VISIBLE and not peer:
            raw = call(vk.vkMapMemory, ctx.device, memory, 0, req.size, 0)
            mapped = np.frombuffer(raw, dtype=np.uint8)
    except BaseException:
        vk.vkDestroyBuffer(ctx.device, buffer, None)
        vk.vkFreeMemory(ctx.device, memory, None)
        raise
    return VulkanMemory(buffer, memory, size, flags, mapped)


def destroy_memory(ctx: VulkanContext, mem: VulkanMemory) -> None:
    """Unmap and free the memory and destroy its buffer."""
    vk = ctx.vk
    if mem.mapped is not None:
        mem.mapped = None
        vk.vkUnmapMemory(ctx.device, mem.memory)
    vk.vkDestroyBuffer(ctx.device, mem.buffer, None)
    vk.vkFreeMemory(ctx.device, mem.memory, None)


def window(mem: VulkanMemory, offset: int) -> VulkanMemory:
    """A view starting ``offset`` bytes into ``mem`` (sharing its buffer and mapping)."""
    return VulkanMemory(mem.buffer, mem.memory, mem.size, mem.flags, mem.mapped,
                        mem.offset + offset)


def _atom_range(ctx: VulkanContext, mem: VulkanMemory, nbytes: int) -> list[Any]:
    # Non-coherent flush/invalidate ranges must be multiples of nonCoherentAtomSize (or reach
    # the end of the allocation as VK_WHOLE_SIZE).
    atom = max(1, int(ctx.limits.nonCoherentAtomSize))
    start = mem.offset // atom * atom
    end = -(-(mem.offset + nbytes) // atom) * atom
    size = end - start if end < len(mem.mapped) else ctx.vk.VK_WHOLE_SIZE  # type: ignore[arg-type]
    return [ctx._info("MAPPED_MEMORY_RANGE", memory=mem.memory, offset=start, size=size)]


def write_memory(ctx: VulkanContext, mem: VulkanMemory, src: memoryview) -> None:
    """Copy all of ``src`` into the buffer starting at ``mem.offset``."""
    data = np.frombuffer(src, dtype=np.uint8)
    if mem.mapped is None:
        _staged(ctx, mem, data, upload=True)
    else:
        ctx.settle()  # the host writes after the current stream's work, like a copy on it
        _put(ctx, mem, data)


def read_memory(ctx: VulkanContext, dest: memoryview, mem: VulkanMemory) -> None:
    """Fill all of ``dest`` from the buffer starting at ``mem.offset``."""
    out = np.frombuffer(dest, dtype=np.uint8)
    if mem.mapped is None:
        _staged(ctx, mem, out, upload=False)
    else:
        ctx.settle()
        _get(ctx, out, mem)


def _put(ctx: VulkanContext, mem: VulkanMemory, data: np.ndarray) -> None:
    mem.mapped[mem.offset:mem.offset + data.size] = data  # type: ignore[index]
    if not mem.coherent:
        ranges = _atom_range(ctx, mem, data.size)
        call(ctx.vk.vkFlushMappedMemoryRanges, ctx.device, 1, ranges)


def _get(ctx: VulkanContext, out: np.ndarray, mem: VulkanMemory) -> None:
    if not mem.coherent:
        ranges = _atom_range(ctx, mem, out.size)
        call(ctx.vk.vkInvalidateMappedMemoryRanges, ctx.device, 1, ranges)
    out[:] = mem.mapped[mem.offset:mem.offset + out.size]  # type: ignore[index]


def _staging(ctx: VulkanContext) -> VulkanMemory:
    staging = _STAGING.get(ctx)
    if staging is None:
        staging = _STAGING[ctx] = create_memory(ctx, STAGING_BYTES, MemoryClass.HOST_PINNED)
    return staging


def release_staging(ctx: VulkanContext) -> None:
    """Free the device's staging buffer (it is made again on the next staged copy)."""
    with ctx.lock:
        staging = _STAGING.pop(ctx, None)
        if staging is not None:
            destroy_memory(ctx, staging)


def _staged(ctx: VulkanContext, mem: VulkanMemory, host: np.ndarray, upload: bool) -> None:
    # One staging buffer per device, reused under the device lock: fresh host-visible memory
    # costs a page fault per page, which would dominate the copy.
    # vkCmdCopyBuffer has no maxStorageBufferRange limit.
    with ctx.lock:
        staging = _staging(ctx)
        for start in range(0, host.size, STAGING_BYTES):
            part = host[start:start + STAGING_BYTES]
            if upload:
                _put(ctx, staging, part)
            _copy_buffer(ctx, staging, mem, mem.offset + start, part.size, upload)
            if not upload:
                _get(ctx, part, staging)


def _copy_buffer(ctx: VulkanContext, staging: VulkanMemory, mem: VulkanMemory, offset: int,
                 size: int, upload: bool) -> None:
    vk = ctx.vk
    region = [vk.VkBufferCopy(srcOffset=0 if upload else offset,
                              dstOffset=offset if upload else 0, size=size)]
    src, dst = (staging.buffer, mem.buffer) if upload else (mem.buffer, staging.buffer)
    ctx.submit(lambda cmd: vk.vkCmdCopyBuffer(cmd, src, dst, 1, region))


def copy_memory(ctx: VulkanContext, dest: VulkanMemory, src: VulkanMemory, nbytes: int) -> None:
    """Copy ``nbytes`` from ``src`` to ``dest`` on the device with one ``vkCmdCopyBuffer``.

    The ranges must not overlap when both lie in one VkBuffer (the Allocator stages those
    through the host); the copy has finished when this returns.
    """
    vk = ctx.vk
    region = [vk.VkBufferCopy(srcOffset=src.offset, dstOffset=dest.offset, size=nbytes)]
    with ctx.lock:  # submit() waits on the fence before it releases the lock
        ctx.submit(lambda cmd: vk.vkCmdCopyBuffer(cmd, src.buffer, dest.buffer, 1, region))
