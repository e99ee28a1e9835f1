"""DLPack import: ``from_dlpack(x)`` wraps a NumPy/PyTorch/JAX/CuPy array as a Tensor, zero-copy.

The Tensor's buffer is a view of the producer's memory; the producer's deleter runs once, when
the last view is gone. Non-contiguous arrays get a strided descriptor. CUDA/ROCm memory (DLPack
capsules and ``__cuda_array_interface__`` v3) becomes a Buffer of the cuda/rocm device (never a
host buffer labelled cuda); the producer's memory stays alive and never enters hurray_gpu's pool.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
from typing import Any

import numpy as np

from hurray_gpu.format.descriptor.buffers import (
    MIN_DATA_ALIGNMENT,
    BufferHandle,
    DeviceTag,
    MemoryClass,
)
from hurray_gpu.format.descriptor.layouts import Strided
from hurray_gpu.format.descriptor.model import TensorDescriptor
from hurray_gpu.format.dtypes import from_numpy_dtype
from hurray_gpu.parts import from_numpy as parts_from_numpy
from hurray_gpu.parts import host_buffers, is_tensor, make_tensor
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.hostmem import aligned_copy
from hurray_gpu.runtime.memory import Allocation
from hurray_gpu.runtime.registry import resolve_device
from hurray_gpu.sync.dlpack import (
    FLAG_READ_ONLY,
    FLAG_SUBBYTE_PADDED,
    KDL_CPU,
    NAME_LEGACY,
    NAME_VERSIONED,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackError,
    hurray_dtype,
    hurray_place,
)

__all__ = ["from_cuda_array_interface", "from_dlpack", "pointer_alignment", "wrap_device_memory"]


MAX_NDIM = 64  # the Hurray descriptor's rank limit is far below; reject absurd ranks first
_api = ctypes.pythonapi
_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", _api))
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", _api))
_USED = {NAME_LEGACY: b"used_dltensor", NAME_VERSIONED: b"used_dltensor_versioned"}


class _Owner:
    """Holds a consumed managed tensor; calls its deleter exactly once when collected."""

    def __init__(self, managed: Any) -> None:
        self.managed = managed

    def __del__(self) -> None:
        managed, self.managed = self.managed, None
        if managed is not None and managed.deleter:
            with contextlib.suppress(Exception):  # interpreter shutdown
                managed.deleter(ctypes.addressof(managed))


def _capsule_of(x: Any, stream: Any) -> Any:
    if type(x).__name__ == "PyCapsule":
        return x
    if not hasattr(x, "__dlpack__"):
        raise DLPackError(f"{type(x).__name__} does not support DLPack",
                          fix="pass an array with __dlpack__ (NumPy, PyTorch, JAX, CuPy).")
    kwargs = {} if stream is None else {"stream": stream}
    try:
        return x.__dlpack__(max_version=(1, 1), **kwargs)
    except TypeError:  # a producer from before DLPack 1.0: no max_version
        return x.__dlpack__(**kwargs)


def _consume(capsule: Any) -> tuple[Any, Any, int]:
    """(DLTensor, owner, flags) of a capsule, renamed so nobody consumes it twice."""
    name = _get_name(capsule)
    if name not in _USED:
        raise DLPackError(f"capsule named {name!r} is not an unconsumed DLPack tensor",
                          fix="a DLPack capsule can be consumed once: call __dlpack__ again.")
    address = _get_pointer(capsule, name)
    if not address:
        raise DLPackError("DLPack capsule holds a null pointer", fix="re-export the array.")
    if name == NAME_VERSIONED:
        managed: Any = DLManagedTensorVersioned.from_address(address)
        if managed.version.major != 1:
            raise DLPackError(f"DLPack version {managed.version.major} is not supported",
                              fix="export with max_version=(1, 1).")
        flags = int(managed.flags)
    else:
        managed, flags = DLManagedTensor.from_address(address), 0
    _set_name(capsule, _USED[name])
    return managed.dl_tensor, _Owner(managed), flags


def _geometry(dl: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ndim = int(dl.ndim)
    if not 0 <= ndim <= MAX_NDIM:
        raise DLPackError(f"ndim {ndim} is out of range", fix="export a valid array.")
    shape = tuple(int(dl.shape[i]) for i in range(ndim))
    if any(d < 0 for d in shape):
        raise DLPackError(f"negative dimension in shape {shape}", fix="export a valid array.")
    if dl.strides:
        return shape, tuple(int(dl.strides[i]) for i in range(ndim))
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= max(d, 1)
    return shape, tuple(reversed(out))


def from_dlpack(x: Any, *, stream: Any = None, copy: bool | None = None) -> Any:
    """Import an array (or an unconsumed DLPack capsule) as a host Tensor.

    Args:
        x: a NumPy/PyTorch/JAX array, anything with ``__dlpack__``, or a capsule.
        stream: passed to the producer's ``__dlpack__`` (CPU producers take only None).
        copy: True always copies; False never (raising when a copy is needed); None copies
            only for what Hurray cannot alias (bool, memory below 64-byte alignment).

    Returns:
        A Tensor whose buffer aliases the producer's memory unless a copy was needed.

    Raises:
        DLPackError: non-CPU memory, unknown dtypes, a consumed capsule, or copy=False when
            a copy is needed.
    """
    if is_tensor(x):
        return x
    if not hasattr(x, "__dlpack__") and hasattr(x, "__cuda_array_interface__"):
        return from_cuda_array_interface(x)
    device: tuple[int, ...] = (KDL_CPU, 0)
    if hasattr(x, "__dlpack_device__"):
        device = tuple(int(v) for v in x.__dlpack_device__())
        hurray_place(device[0])
    if device[0] != KDL_CPU:
        return _device_import(x, device, stream, copy)
    dl, owner, flags = _consume(_capsule_of(x, stream))
    if int(dl.device.device_type) != KDL_CPU:
        raise DLPackError("the capsule holds device memory but the array said CPU",
                          fix="copy the array to the CPU first.")
    name = hurray_dtype(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes)
    shape, strides = _geometry(dl)
    bits = int(dl.dtype.bits)
    if bits % 8 or name == "bool":
        return _copied(dl, owner, name, shape, strides, flags, copy)
    itemsize = bits // 8
    lo, hi = extent(shape, strides)
    span = (hi - lo + 1) * itemsize
    start = (int(dl.data or 0) + int(dl.byte_offset) + lo * itemsize) if span else 0
    raw = _bytes_at(start, span, owner, bool(flags & FLAG_READ_ONLY))
    if copy or (span and start % MIN_DATA_ALIGNMENT):
        if copy is False:
            raise DLPackError(f"memory at 0x{start:x} is not 64-byte aligned as Hurray requires",
                              fix="pass copy=None to import an aligned copy.")

        raw = aligned_copy(raw.copy(), MIN_DATA_ALIGNMENT)
    desc = _descriptor(name, shape, strides, -lo * itemsize, span)
    return make_tensor(desc, host_buffers(desc, [raw]))


def extent(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    """(lowest, highest) element offset reached; (0, -1) for an empty array."""
    if math.prod(shape) == 0:
        return 0, -1
    lo = sum(min(0, (d - 1) * s) for d, s in zip(shape, strides, strict=True))
    hi = sum(max(0, (d - 1) * s) for d, s in zip(shape, strides, strict=True))
    return lo, hi


def _device_import(x: Any, device: tuple[int, ...], stream: Any, copy: bool | None) -> Any:
    """CUDA/ROCm memory: a Buffer of that device over the producer's pointer (zero-copy)."""
    tag, mclass = hurray_place(device[0])
    dev = open_gpu(tag, device[1])
    if copy:
        raise DLPackError("copy=True is not supported for device memory",
                          fix="import zero-copy, then copy with Tensor.to().")
    value = consumer_stream_value(dev) if stream is None else stream
    dl, owner, _flags = _consume(_capsule_of(x, value))
    name = hurray_dtype(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes)
    if int(dl.dtype.bits) % 8 or name == "bool":
        raise DLPackError(f"{name} device memory needs repacking",
                          fix="export it as a same-width uint8 array and re-tag the dtype.")
    shape, strides = _geometry(dl)
    itemsize = int(dl.dtype.bits) // 8
    lo, hi = extent(shape, strides)
    span = (hi - lo + 1) * itemsize
    start = (int(dl.data or 0) + int(dl.byte_offset) + lo * itemsize) if span else 0
    return wrap_device_memory(dev, mclass, name, shape, strides, start, span, lo, itemsize,
                              owner)


def _bytes_at(start: int, span: int, owner: _Owner, readonly: bool) -> np.ndarray:
    if span == 0:
        return np.empty(0, np.uint8)
    holder = (ctypes.c_uint8 * span).from_address(start)
    holder.owner = owner  # type: ignore[attr-defined]  # numpy keeps this alive under views
    out = np.frombuffer(holder, dtype=np.uint8)  # type: ignore[call-overload]
    if readonly:
        out.flags.writeable = False
    return out


def _descriptor(name: str, shape: tuple[int, ...], strides: tuple[int, ...],
                byte_offset: int, span: int) -> Any:

    dense = TensorDescriptor.dense(name, shape)
    if dense.layout.TAG == 0x01 and _is_c_contiguous(shape, strides):
        return dense
    handle = BufferHandle(span, MIN_DATA_ALIGNMENT if span else 1)
    desc = TensorDescriptor(dense.dtype, shape, Strided(strides), (handle,), byte_offset)
    desc.encode()
    return desc


def _is_c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    step = 1
    for d, s in zip(reversed(shape), reversed(strides), strict=True):
        if d != 1 and s != step:
            return False
        step *= d
    return True


def _copied(dl: Any, owner: _Owner, name: str, shape: tuple[int, ...],
            strides: tuple[int, ...], flags: int, copy: bool | None) -> Any:
    """bool (1 byte -> 1 bit) and packed sub-byte imports: both need Hurray's packing."""
    if name != "bool":
        raise DLPackError(f"importing packed {name} over DLPack is not supported",
                          fix="export it as a same-width uint8 array and re-tag the dtype.")
    if flags & FLAG_SUBBYTE_PADDED:
        raise DLPackError("padded sub-byte data is not supported", fix="export unpadded.")
    if copy is False:
        raise DLPackError("bool needs a copy: Hurray packs 8 per byte, DLPack uses 1 byte",
                          fix="pass copy=None or True.")
    count = math.prod(shape)
    lo, hi = extent(shape, strides)
    start = int(dl.data or 0) + int(dl.byte_offset) + lo
    raw = _bytes_at(start, hi - lo + 1, owner, True)
    values = np.lib.stride_tricks.as_strided(raw[-lo:] if count else raw, shape, strides)
    return parts_from_numpy(values.astype(bool))


MAX_DECLARED_ALIGN = 4096


def pointer_alignment(address: int) -> int:
    """The largest power of two (at most 4096) dividing ``address``."""
    if address == 0:
        return MAX_DECLARED_ALIGN
    return min(address & -address, MAX_DECLARED_ALIGN)


def open_gpu(tag: int, index: int) -> Any:
    """The hurray_gpu device for a CUDA/ROCm DLPack device.

    Raises:
        DLPackError: other device kinds (OpenCL/Vulkan memory is not a pointer).
        BackendUnavailableError: CuPy or the GPU is missing.
    """
    if tag not in (DeviceTag.CUDA, DeviceTag.ROCM):
        raise DLPackError(f"importing device_tag 0x{tag:02X} memory over DLPack is not "
                          "supported", fix="copy the array to the CPU first.")
    return resolve_device(f"{'cuda' if tag == DeviceTag.CUDA else 'rocm'}:{int(index)}")


def consumer_stream_value(dev: Any) -> int:
    """CuPy's current stream as a DLPack ``stream=`` value (legacy default: 1 / ROCm 0)."""
    ptr = int(dev.cupy.cuda.get_current_stream().ptr)
    if ptr == 0:
        return 1 if dev.tag == DeviceTag.CUDA else 0
    return ptr


def wrap_device_memory(dev: Any, mclass: int, name: str, shape: tuple[int, ...],
                       strides: tuple[int, ...], start: int, span: int, lo: int,
                       itemsize: int, keep: Any) -> Any:
    """A Tensor over ``span`` device bytes at ``start`` that keeps ``keep`` alive.

    Raises:
        DLPackError: the pointer is below Hurray's 64-byte alignment.
    """
    from hurray_gpu.backends.cuda import CUDAMemory
    align = pointer_alignment(start)
    if span and align < MIN_DATA_ALIGNMENT:
        raise DLPackError(f"device pointer 0x{start:x} is only {align}-byte aligned",
                          fix="export a tensor whose data starts 64-byte aligned.")
    # Foreign memory: freeing drops the reference (and so ``keep``); the pool never takes it.
    memory_class = MemoryClass(mclass)
    allocation = Allocation(CUDAMemory(start, keep) if span else None, span, memory_class,
                            external=True)
    buf = Buffer(dev, span, memory_class, _allocation=allocation)
    handle = BufferHandle(span, align if span else 1, dev.tag, 0, mclass)
    if _is_c_contiguous(shape, strides) and lo == 0:
        desc = TensorDescriptor.dense(name, shape, buffers=(handle,))
    else:
        dense = TensorDescriptor.dense(name, shape)
        desc = TensorDescriptor(dense.dtype, shape, Strided(strides), (handle,), -lo * itemsize)
        desc.encode()
    return make_tensor(desc, [buf])


def from_cuda_array_interface(x: Any) -> Any:
    """Import an object with ``__cuda_array_interface__`` (v3) zero-copy as a cuda Tensor.

    Raises:
        DLPackError: a malformed interface, masked arrays, or dtypes without a Hurray type.
    """
    cai = x.__cuda_array_interface__
    try:
        ptr, _readonly = cai["data"]
        shape = tuple(int(d) for d in cai["shape"])
        dtype = np.dtype(cai["typestr"])
        byte_strides = cai.get("strides")
    except (KeyError, TypeError, ValueError) as exc:
        raise DLPackError(f"malformed __cuda_array_interface__ ({exc})",
                          fix="pass an object implementing CAI v3.") from None
    if cai.get("mask") is not None or any(d < 0 for d in shape):
        raise DLPackError("masked arrays or negative dimensions cannot be imported",
                          fix="pass a plain device array.")
    name = from_numpy_dtype(dtype).name
    itemsize = dtype.itemsize
    if byte_strides is None:
        strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))
    else:
        if any(int(s) % itemsize for s in byte_strides):
            raise DLPackError("strides are not whole elements", fix="pass aligned strides.")
        strides = tuple(int(s) // itemsize for s in byte_strides)
    dev = open_gpu(DeviceTag.CUDA, _device_of(ptr))
    stream = cai.get("stream")
    if stream is not None:
        _wait_on(dev, int(stream))
    count = math.prod(shape)
    lo = sum(min(0, (d - 1) * s) for d, s in zip(shape, strides, strict=True)) if count else 0
    hi = sum(max(0, (d - 1) * s) for d, s in zip(shape, strides, strict=True)) if count else -1
    span = (hi - lo + 1) * itemsize
    start = int(ptr or 0) + lo * itemsize if span else 0
    return wrap_device_memory(dev, 0, name, shape, strides, start, span, lo, itemsize, x)


def _device_of(ptr: int) -> int:

    cuda: Any = resolve_device("cuda:0")
    cupy = cuda.cupy
    attrs = cupy.cuda.runtime.pointerGetAttributes(int(ptr))
    return int(attrs.device)


def _wait_on(dev: Any, stream: int) -> None:
    """Make CuPy's current stream wait for the producer's ``stream`` (CAI v3 rule)."""
    cupy = dev.cupy
    with cupy.cuda.Device(dev.index):
        current = cupy.cuda.get_current_stream()
        if int(current.ptr) == stream:
            return
        event = cupy.cuda.Event(disable_timing=True)
        event.record(cupy.cuda.ExternalStream(stream))
        current.wait_event(event)
