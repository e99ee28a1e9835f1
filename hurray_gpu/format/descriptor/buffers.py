"""Buffer handle (16 bytes), device tags, memory classes and sync modes (Hurray spec, Buffer
Protocol).

Also the (device_tag, memory_class) validity table and the colocation rule, which upstream's
decoder skips and hurray_gpu enforces.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.descriptor.reader import Reader, Writer, fail

HANDLE_SIZE = 16
_HANDLE = struct.Struct("<QIBBBB")
MIN_DATA_ALIGNMENT = 64
DEVICE_ALIGNMENT = 4096


class DeviceTag(IntEnum):
    """Hurray device tags (not DLPack codes); 0xF0-0xFE are private."""

    CPU = 0x00
    CUDA = 0x01
    ROCM = 0x02
    METAL = 0x03
    VULKAN = 0x04
    WEBGPU = 0x05
    HEXAGON = 0x06
    LEVEL_ZERO = 0x07
    OPENCL = 0x08


class MemoryClass(IntEnum):
    """Buffer memory classes; 0xF0-0xFE are private (only with a private device tag)."""

    STANDARD = 0x00
    HOST_PINNED = 0x01
    UNIFIED = 0x02
    PEER = 0x03

    @classmethod
    def parse(cls, value: MemoryClass | int | str) -> MemoryClass:
        """Return the member for a value, a member, or a name such as ``"host_pinned"``.

        Raises:
            UnsupportedOpError: for an unknown or private class.
        """
        if value.__class__ is cls:  # the common case, first
            return value  # type: ignore[return-value]
        if isinstance(value, str):
            key = value.strip().upper()
            if key in cls.__members__:
                return cls[key]
        elif isinstance(value, int) and not isinstance(value, bool) and value in range(4):
            return cls(value)
        raise UnsupportedOpError(
            f"unknown memory class {value!r}",
            fix="use one of standard, host_pinned, unified, peer (or 0-3).",
        )

    @property
    def label(self) -> str:
        """The lowercase name used in specs and messages."""
        return self.name.lower()


class SyncMode(IntEnum):
    """How the producer synchronised the buffer before handoff."""

    PRODUCER_SYNCED = 0x00
    EVENT = 0x01
    CONSUMER_STREAM = 0x02


def is_private(tag: int) -> bool:
    """Return True for the private range 0xF0-0xFE."""
    return 0xF0 <= tag <= 0xFE


_S, _P, _U, _R = (MemoryClass.STANDARD, MemoryClass.HOST_PINNED,
                  MemoryClass.UNIFIED, MemoryClass.PEER)
# Valid (device, class) pairs; everything not listed MUST be rejected.
VALID_MEMORY_CLASSES: dict[int, frozenset[int]] = {
    DeviceTag.CPU: frozenset({_S, _P, _U}),
    DeviceTag.CUDA: frozenset({_S, _P, _U, _R}),
    DeviceTag.ROCM: frozenset({_S, _P, _U, _R}),
    DeviceTag.METAL: frozenset({_S, _P, _U}),
    DeviceTag.VULKAN: frozenset({_S, _P, _U, _R}),
    DeviceTag.WEBGPU: frozenset({_S}),
    DeviceTag.HEXAGON: frozenset({_S, _P, _U}),
    DeviceTag.LEVEL_ZERO: frozenset({_S, _P, _U, _R}),
    DeviceTag.OPENCL: frozenset({_S, _P, _U}),
}


def is_valid_pair(device_tag: int, memory_class: int) -> bool:
    """Return True when ``(device_tag, memory_class)`` is allowed.

    Hurray spec, Buffer Protocol: Per-Device Validity.

    Private device tags may use STANDARD or a private class; public device tags never use a
    private class.
    """
    if is_private(device_tag):
        return memory_class == MemoryClass.STANDARD or is_private(memory_class)
    allowed = VALID_MEMORY_CLASSES.get(device_tag)
    return allowed is not None and memory_class in allowed


@dataclass(frozen=True, slots=True)
class BufferHandle:
    """One 16-byte buffer-table entry.

    Attributes:
        byte_size: buffer size in bytes (0 = empty buffer).
        alignment: guaranteed alignment (power of two; >= 64 when byte_size > 0).
        device_tag: a DeviceTag value or a private tag 0xF0-0xFE.
        sync_mode: a SyncMode value (CPU buffers must use PRODUCER_SYNCED).
        memory_class: a MemoryClass value or a private class 0xF0-0xFE.
    """

    byte_size: int
    alignment: int = MIN_DATA_ALIGNMENT
    device_tag: int = DeviceTag.CPU
    sync_mode: int = SyncMode.PRODUCER_SYNCED
    memory_class: int = MemoryClass.STANDARD

    def validate(self, index: int = 0, offset: int | None = None) -> None:
        """Check every Buffer Protocol rule for this handle.

        Args:
            index: the handle's position in the buffer table (for messages).
            offset: absolute offset of the handle in the input, or None.

        Raises:
            HurrayFormatError: naming the offending field.
        """
        def at(rel: int) -> int | None:
            return None if offset is None else offset + rel

        name = f"buffers[{index}]"
        if not 0 <= self.byte_size <= 0xFFFFFFFFFFFFFFFF:
            fail(f"{name}.byte_size {self.byte_size} does not fit in u64", f"{name}.byte_size",
                 at(0), "use a byte size between 0 and 2^64-1.")
        a = self.alignment
        if not 0 < a <= 0xFFFFFFFF or a & (a - 1):
            fail(f"{name}.alignment {a} is not a power of two", f"{name}.alignment", at(8),
                 "declare the buffer's real alignment, a power of two (>= 64).")
        if self.byte_size > 0 and a < MIN_DATA_ALIGNMENT:
            fail(f"{name}.alignment {a} is below 64 for a non-empty buffer",
                 f"{name}.alignment", at(8), "allocate data buffers with >= 64-byte alignment.")
        _check_tags(self, name, at)


def _check_tags(handle: BufferHandle, name: str, at: Callable[[int], int | None]) -> None:
    dev = handle.device_tag
    if not (0 <= dev <= DeviceTag.OPENCL or is_private(dev)):
        fail(f"{name}.device_tag 0x{dev:02X} is reserved or invalid", f"{name}.device_tag",
             at(12), "use a device tag 0x00-0x08 or a private tag 0xF0-0xFE.")
    sync = handle.sync_mode
    if not 0 <= sync <= SyncMode.CONSUMER_STREAM:
        fail(f"{name}.sync_mode 0x{sync:02X} is reserved or invalid", f"{name}.sync_mode",
             at(13), "use sync_mode 0 (producer synced), 1 (event) or 2 (consumer stream).")
    if dev == DeviceTag.CPU and sync != SyncMode.PRODUCER_SYNCED:
        fail(f"{name}.sync_mode is {sync} on a CPU buffer; CPU buffers must use 0",
             f"{name}.sync_mode", at(13), "synchronise on the host and declare sync_mode 0.")
    mem = handle.memory_class
    if not (0 <= mem <= MemoryClass.PEER or is_private(mem)):
        fail(f"{name}.memory_class 0x{mem:02X} is reserved or invalid", f"{name}.memory_class",
             at(14), "use memory_class 0-3, or a private class with a private device tag.")
    if not is_valid_pair(dev, mem):
        fail(f"{name}: memory_class 0x{mem:02X} is not valid on device_tag 0x{dev:02X}",
             f"{name}.memory_class", at(14),
             "pick a (device_tag, memory_class) pair marked valid in the Hurray spec, "
             "Buffer Protocol: Per-Device Validity.")


def decode_handle(r: Reader, index: int) -> BufferHandle:
    """Read and validate one buffer handle.

    Raises:
        HurrayFormatError: on truncation or any invalid field.
    """
    pos = r.need(HANDLE_SIZE, f"buffers[{index}]")
    size, align, dev, sync, mem, reserved = _HANDLE.unpack_from(r.data, pos)
    r.pos = pos + HANDLE_SIZE
    if reserved:
        fail(f"buffers[{index}]._reserved is 0x{reserved:02X}, must be 0x00",
             f"buffers[{index}]._reserved", pos + 15,
             "write the handle's reserved byte as zero (Hurray spec, Buffer Protocol: Buffer "
             "Handle).")
    handle = BufferHandle(size, align, dev, sync, mem)
    handle.validate(index, pos)
    return handle


def encode_handle(w: Writer, handle: BufferHandle) -> None:
    """Append one 16-byte handle."""
    w.raw(_HANDLE.pack(handle.byte_size, handle.alignment, handle.device_tag,
                       handle.sync_mode, handle.memory_class, 0))


def check_colocation(handles: tuple[BufferHandle, ...], base: int | None) -> None:
    """Require every buffer to share buffer 0's device_tag and memory_class.

    Args:
        handles: the buffer table.
        base: absolute offset of the first handle, or None.

    Raises:
        HurrayFormatError: naming the first buffer that differs.
    """
    if not handles:
        return
    first = handles[0]
    for i, h in enumerate(handles[1:], 1):
        if h.device_tag != first.device_tag or h.memory_class != first.memory_class:
            off = None if base is None else base + HANDLE_SIZE * i + 12
            fail(
                f"buffers[{i}] is on (device 0x{h.device_tag:02X}, class 0x{h.memory_class:02X})"
                f" but buffers[0] is on (0x{first.device_tag:02X}, 0x{first.memory_class:02X})",
                f"buffers[{i}].device_tag", off,
                "place every buffer of a tensor (data and quantization parameters) on the same "
                "device and memory class.",
            )
