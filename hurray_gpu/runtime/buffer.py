"""Buffer: a block of device memory (device, nbytes, memory_class) with copyin/copyout/copy_from.

Views share their base's memory and keep it alive; freeing returns memory to the pool. A buffer
in host memory (the cpu device) is also a NumPy array: :attr:`Buffer.array` is a zero-copy
uint8 view of it, and :meth:`Buffer.wrap` makes a buffer of existing host memory (a NumPy
array, a memory-mapped file) without copying it.
"""

from __future__ import annotations

import contextlib
import ctypes
import warnings
import weakref
from typing import Any

import numpy as np

from hurray_gpu.errors import BoundsViolation, UnsupportedOpError
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import Allocation, MemoryClass
from hurray_gpu.runtime.registry import resolve_device
from hurray_gpu.runtime.transfer import copy_buffer

__all__ = ["Buffer"]


class Buffer:
    """Device memory.

    Args:
        device: where to allocate (a Device, or any spec :func:`hurray_gpu.device` accepts;
            None is the default device).
        nbytes: size in bytes (0 is an empty buffer).
        memory_class: ``"standard"``, ``"host_pinned"``, ``"unified"`` or a MemoryClass.

    Raises:
        BackendUnavailableError: the device cannot be opened.
        UnsupportedOpError: bad size, or a memory class the device does not offer.
        OutOfMemoryError: no room after one retry with the pool emptied.
    """

    __slots__ = ("device", "allocation", "_base", "_array", "__weakref__")

    def __init__(self, device: Device | Any, nbytes: int,
                 memory_class: MemoryClass | int | str = MemoryClass.STANDARD, *,
                 _allocation: Allocation | None = None, _base: Buffer | None = None) -> None:
        if not isinstance(device, Device):
            device = resolve_device(device)
        self.device: Device = device
        self._base = _base
        self._array: Any = None  # weak reference to the last host array handed out
        self.allocation = (_allocation if _allocation is not None
                           else device.allocator.alloc(nbytes, memory_class))

    @classmethod
    def adopt(cls, device: Device, allocation: Allocation) -> Buffer:
        """A buffer owning ``allocation``, a root that ``device``'s allocator just made (no
        check: for callers that make many)."""
        self = object.__new__(cls)
        self.device, self.allocation, self._base, self._array = device, allocation, None, None
        return self

    @classmethod
    def wrap(cls, array: Any, device: Device | Any = "cpu") -> Buffer:
        """A buffer over existing host memory, without copying it.

        The memory stays owned by ``array`` (a NumPy array, a memory-mapped file...): freeing
        the buffer drops the reference and never pools it; read-only memory stays read-only
        (kernels refuse to write it).

        Args:
            array: bytes-like host memory (any contiguous NumPy array, bytes, memoryview).
            device: a device whose memory is host memory (the cpu device).

        Raises:
            UnsupportedOpError: the device's memory is not host memory, or the data is not
                contiguous.
        """
        dev = device if isinstance(device, Device) else resolve_device(device)
        data = np.asarray(array) if isinstance(array, np.ndarray) else np.frombuffer(
            array, dtype=np.uint8)
        if not data.flags.c_contiguous:
            raise UnsupportedOpError("cannot wrap non-contiguous memory in place",
                                     fix="pass np.ascontiguousarray(array).")
        flat = data.reshape(-1).view(np.uint8)
        allocation = dev.allocator.wrap(flat)
        return cls(dev, allocation.nbytes, _allocation=allocation)

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
        """Byte offset inside the base buffer (0 unless a view)."""
        if self._base is None:
            return 0
        return self.allocation.offset - self._base.allocation.offset

    @property
    def is_host(self) -> bool:
        """True when the memory is host memory NumPy can address (the cpu device)."""
        return self.device.allocator.host_memory

    @property
    def readonly(self) -> bool:
        """True for read-only memory (a wrapped read-only array or file map)."""
        return self.allocation.readonly

    @property
    def array(self) -> np.ndarray:
        """The buffer's bytes as a 1-D uint8 NumPy array over its memory (no copy).

        The array keeps the buffer alive (its memory cannot go back to the pool while any
        array derived from it exists); it is read-only when the memory is.

        Raises:
            UnsupportedOpError: the memory is not host memory (copy it with :meth:`numpy`),
                or the buffer was freed.
        """
        cached = self._array() if self._array is not None else None
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        allocation = self.allocation
        if allocation.freed or allocation.root.freed:
            raise UnsupportedOpError("buffer was freed", fix="do not use a buffer after free().")
        raw = self.device.allocator.host_array(allocation)
        if raw is None:
            raise UnsupportedOpError(
                f"{self!r} is not host memory, so it has no zero-copy NumPy view",
                fix="copy it to the host with buf.numpy() (or Tensor.to('cpu')).")
        if allocation.external or raw.size == 0 or not raw.flags.writeable:
            out = raw  # the memory's owner is the array itself
        else:
            # NumPy keeps an array's base alive under every view derived from it; a ctypes
            # holder carrying this buffer as that base pins the buffer, and so its memory.
            holder = (ctypes.c_uint8 * raw.size).from_buffer(raw)  # type: ignore[arg-type]
            holder.owner = self  # type: ignore[attr-defined]
            out = np.frombuffer(holder, dtype=np.uint8)  # type: ignore[call-overload]
        self._array = weakref.ref(out)
        return out

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy's protocol: host memory is viewed without a copy (uint8, 1-D).

        Raises:
            UnsupportedOpError: device memory (use :meth:`numpy`, which copies), or a copy was
                refused (``copy=False``) for a dtype change.
        """
        out = self.array
        if dtype is not None and np.dtype(dtype) != out.dtype:
            if copy is False:
                raise UnsupportedOpError("a dtype change needs a copy",
                                         fix="call np.asarray(buf).view(dtype) instead.")
            return out.astype(dtype)
        return out.copy() if copy else out

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
        if allocation is not None and getattr(self, "_base", None) is None:
            self.device.allocator.free(allocation)

    def __enter__(self) -> Buffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()

    def __del__(self) -> None:
        # Interpreter shutdown may already have torn down the allocator's modules.
        try:
            self.free()
        except BoundsViolation as exc:  # a finaliser cannot raise: do not lose the report
            with contextlib.suppress(Exception):
                warnings.warn(str(exc), RuntimeWarning, stacklevel=1)
        except Exception:  # nothing can be reported from a finaliser
            pass

    def __repr__(self) -> str:
        return (f"<Buffer {self.nbytes} bytes {self.memory_class.label} on {self.device.spec}"
                f"{' view@' + str(self.offset) if self.is_view else ''}>")
