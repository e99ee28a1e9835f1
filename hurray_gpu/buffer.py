"""Buffer: a block of device memory (device, nbytes, memory_class) with copyin/copyout/copy_from.

Views share their base's memory and keep it alive; freeing returns memory to the pool.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import numpy as np

from hurray_gpu.device import Allocation, Device, MemoryClass
from hurray_gpu.errors import BoundsViolation, UnsupportedOpError

__all__ = ["Buffer"]


class Buffer:
    """Device memory.

    Args:
        device: where to allocate (a Device, or any spec :func:`hurray_gpu.device` accepts).
        nbytes: size in bytes (0 is an empty buffer).
        memory_class: ``"standard"``, ``"host_pinned"``, ``"unified"`` or a MemoryClass.

    Raises:
        BackendUnavailableError: the device cannot be opened.
        UnsupportedOpError: bad size, or a memory class the device does not offer.
        OutOfMemoryError: no room after one retry with the pool emptied.
    """

    def __init__(self, device: Device | Any, nbytes: int,
                 memory_class: MemoryClass | int | str = MemoryClass.STANDARD, *,
                 _allocation: Allocation | None = None, _base: Buffer | None = None) -> None:
        if not isinstance(device, Device):
            from hurray_gpu.devices_api import device as open_spec

            device = open_spec(device)
        self.device: Device = device
        self._base = _base
        self.allocation = (_allocation if _allocation is not None
                           else device.allocator.alloc(nbytes, memory_class))

    @classmethod
    def from_bytes(cls, device: Device | Any, data: Any,
                   memory_class: MemoryClass | int | str = MemoryClass.STANDARD) -> Buffer:
        """Allocate a buffer the size of ``data`` (bytes-like) and copy it in."""
        view = memoryview(data)
        buffer = cls(device, view.nbytes, memory_class)
        return buffer.copyin(view)

    @property
    def nbytes(self) -> int:
        """Size in bytes."""
        return self.allocation.nbytes

    @property
    def memory_class(self) -> MemoryClass:
        """The Hurray memory class of this buffer."""
        return self.allocation.memory_class

    @property
    def offset(self) -> int:
        """Byte offset inside the base buffer (0 unless a view; debug canaries excluded)."""
        return self.allocation.user_offset

    @property
    def is_view(self) -> bool:
        """True when this buffer is a view of another."""
        return self._base is not None

    def copyin(self, data: Any, offset: int = 0) -> Buffer:
        """Copy bytes-like ``data`` into this buffer at byte ``offset``; returns self.

        Raises:
            UnsupportedOpError: the data does not fit, or the buffer was freed.
        """
        view = memoryview(data)
        target = self if offset == 0 and view.nbytes == self.nbytes else self.view(offset,
                                                                                   view.nbytes)
        self.device.allocator.copyin(target.allocation, view)
        return self

    def copyout(self, out: Any | None = None, offset: int = 0,
                nbytes: int | None = None) -> Any:
        """Copy ``nbytes`` (default: the rest) from ``offset`` into ``out`` (or a new bytearray).

        Returns:
            ``out``, or a new bytearray when ``out`` is None.

        Raises:
            UnsupportedOpError: the range is outside the buffer, ``out`` has the wrong size,
                or the buffer was freed.
        """
        if nbytes is None:
            nbytes = memoryview(out).nbytes if out is not None else self.nbytes - offset
        target = self if offset == 0 and nbytes == self.nbytes else self.view(offset, nbytes)
        dest = bytearray(nbytes) if out is None else out
        self.device.allocator.copyout(dest, target.allocation)
        return dest

    def copy_from(self, src: Buffer, *, progress: bool | None = None) -> Buffer:
        """Copy all of ``src`` (the same size, on any device) into this buffer; returns self.

        On one device the copy stays on the device (the allocator's ``_copy``); between a
        host-memory device and another it is one direct copyin/copyout; otherwise it is staged
        through the host in bounded chunks.

        Args:
            src: the source buffer.
            progress: show a progress bar (None: only for large copies on a terminal).

        Raises:
            UnsupportedOpError: the sizes differ, or either buffer was freed.
        """
        from hurray_gpu.transfer import copy_buffer

        copy_buffer(self, src, progress=progress)
        return self

    def numpy(self, dtype: Any = np.uint8) -> np.ndarray:
        """Copy the buffer to a new 1-D host array of ``dtype``.

        Raises:
            UnsupportedOpError: the size is not a multiple of the itemsize.
        """
        dt = np.dtype(dtype)
        if self.nbytes % dt.itemsize:
            raise UnsupportedOpError(f"{self.nbytes} bytes is not a whole number of {dt}",
                                     fix="pass a dtype whose itemsize divides the buffer size.")
        out = np.empty(self.nbytes // dt.itemsize, dtype=dt)
        self.copyout(out.view(np.uint8))
        return out

    def view(self, offset: int, nbytes: int) -> Buffer:
        """A buffer of ``nbytes`` at ``offset`` sharing this one's memory.

        Raises:
            UnsupportedOpError: the range is outside the buffer.
        """
        allocation = self.device.allocator.view(self.allocation, offset, nbytes)
        return Buffer(self.device, nbytes, allocation.memory_class, _allocation=allocation,
                      _base=self._base or self)

    def free(self) -> None:
        """Return the memory to the device pool now (views are no-ops); idempotent.

        Raises:
            BoundsViolation: with ``HURRAY_GPU_DEBUG_BOUNDS=1``, a canary changed since the
                last kernel's check (the memory is freed all the same).
        """
        allocation = getattr(self, "allocation", None)
        if allocation is not None and self._base is None:
            self.device.allocator.free(allocation)

    def __enter__(self) -> Buffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()

    def __del__(self) -> None:
        # Interpreter shutdown may already have torn down the allocator's modules.
        with contextlib.suppress(Exception):
            try:
                self.free()
            except BoundsViolation as exc:  # a finaliser cannot raise: do not lose the report
                warnings.warn(str(exc), RuntimeWarning, stacklevel=1)

    def __repr__(self) -> str:
        return (f"<Buffer {self.nbytes} bytes {self.memory_class.label} on {self.device.spec}"
                f"{' view@' + str(self.offset) if self.is_view else ''}>")
