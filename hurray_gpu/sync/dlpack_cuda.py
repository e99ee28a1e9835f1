"""DLPack export of CUDA/ROCm device buffers (through CuPy), with DLPack stream semantics.

The consumer's stream is ordered after the producer's current stream with an event; the
producer never synchronizes the whole device. Stream values follow the DLPack / array-API
convention (not the Hurray binding doc): None = legacy default, -1 = no synchronization,
CUDA 1 = legacy default, 2 = per-thread default, > 2 = a stream pointer (0 is invalid);
ROCm 0 = default stream, > 2 = a pointer (1 and 2 are invalid).
"""

from __future__ import annotations

from typing import Any

from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.sync.dlpack_host import element_strides
from hurray_gpu.sync.dlpack_types import DLPackError, dlpack_device, dtype_code

__all__ = ["consumer_stream_handle", "device_view"]

CUDA_LEGACY_STREAM, CUDA_PER_THREAD_STREAM = 1, 2


def consumer_stream_handle(device_tag: int, stream: Any) -> int | None:
    """The native stream handle to order, or None for ``stream=-1`` (no synchronization).

    Raises:
        DLPackError: a value the DLPack convention forbids for this device type.
    """
    if stream == -1:
        return None
    if device_tag == DeviceTag.CUDA:
        if stream is None:
            return CUDA_LEGACY_STREAM
        if stream == 0:
            raise DLPackError("stream=0 is ambiguous for CUDA and not allowed by DLPack",
                              fix="pass 1 (legacy default), 2 (per-thread) or a stream pointer.")
        return int(stream)
    if stream is None:
        return 0
    if stream in (1, 2):
        raise DLPackError(f"stream={stream} is not allowed for ROCm by DLPack",
                          fix="pass 0 (default stream) or a hipStream_t pointer.")
    if stream < -1:
        raise DLPackError(f"stream={stream} is not a valid stream value",
                          fix="pass None, -1, 0 or a stream pointer.")
    return int(stream)


def device_view(t: Any, stream: Any, version: tuple[int, int] | None,
                copy: bool | None) -> dict[str, Any]:
    """DLTensor fields for a CUDA/ROCm tensor; orders the consumer stream after our writes.

    Raises:
        DLPackError: layouts/dtypes DLPack cannot carry, copy=True, or a bad stream.
    """
    if copy:
        raise DLPackError("copy=True on the device is not supported",
                          fix="export without copy, or with dl_device=(1, 0) for a host copy.")
    strides = element_strides(t)
    dtype = t.dtype
    if dtype.name == "bool":
        raise DLPackError("bool is bit-packed in Hurray but one byte per element in DLPack",
                          fix="call .unpack('uint8') first.")
    code, bits = dtype_code(dtype.name, version or (0, 0))
    tag = t.descriptor.buffers[0].device_tag
    handle = consumer_stream_handle(tag, stream)
    dev = t.device
    if handle is not None:
        _order_after_producer(dev, handle)
    buf = t.buffers[0]
    data = buf.allocation.raw.ptr if buf.nbytes else 0
    return {"data": data, "device": dlpack_device(t),
            "shape": tuple(int(d) for d in t.descriptor.shape), "strides": strides,
            "code": code, "bits": bits, "byte_offset": int(t.descriptor.byte_offset),
            "readonly": False, "copied": False, "keep": t}


def _order_after_producer(dev: Any, handle: int) -> None:
    """Make stream ``handle`` wait, on the device, for the producer's current stream."""
    cupy = dev.cupy
    with cupy.cuda.Device(dev.index):
        producer = cupy.cuda.get_current_stream()
        if int(producer.ptr) == handle:
            return  # one stream: already in order
        event = cupy.cuda.Event(disable_timing=True)
        event.record(producer)
        cupy.cuda.ExternalStream(handle).wait_event(event)
