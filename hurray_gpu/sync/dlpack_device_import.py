"""Import of CUDA/ROCm device memory (DLPack capsules and ``__cuda_array_interface__`` v3).

The foreign pointer becomes a Buffer of the cuda/rocm device (never a host buffer labelled
cuda); the producer's memory stays alive, and is never returned to hurray_gpu's pool.
Ordering: we pass CuPy's current stream as the consumer stream (DLPack), or make it wait on
the interface's ``stream`` with an event (CAI v3); kernels then run on that stream.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hurray_gpu.format.descriptor.buffers import (
    MIN_DATA_ALIGNMENT,
    BufferHandle,
    DeviceTag,
    MemoryClass,
)
from hurray_gpu.parts import make_tensor
from hurray_gpu.sync.dlpack_types import DLPackError

__all__ = ["from_cuda_array_interface", "pointer_alignment", "wrap_device_memory"]

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
    from hurray_gpu.runtime.registry import resolve_device

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
    from hurray_gpu.format.descriptor.layouts import Strided
    from hurray_gpu.format.descriptor.model import TensorDescriptor
    from hurray_gpu.runtime.buffer import Buffer
    from hurray_gpu.runtime.memory import Allocation
    from hurray_gpu.sync.dlpack_import import _is_c_contiguous

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
    from hurray_gpu.format.dtypes import from_numpy_dtype

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
    from hurray_gpu.runtime.registry import resolve_device

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
