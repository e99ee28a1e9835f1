"""DLPack ABI (ctypes structs, dtype codes) and the Hurray <-> DLPack device table
(docs/format.md, DLPack device mapping).

Hurray device tags are not DLPack device types; every translation goes through these tables.
"""

from __future__ import annotations

import ctypes
from typing import Any

from hurray_gpu.errors import HurrayGPUError
from hurray_gpu.format.descriptor.buffers import DeviceTag, MemoryClass

__all__ = ["DLDataType", "DLDevice", "DLManagedTensor", "DLManagedTensorVersioned",
           "DLPackError", "DLTensor", "DLPackVersion", "dlpack_device", "dtype_code",
           "hurray_place", "hurray_dtype"]

# The DLPack version this module produces and understands.
DLPACK_VERSION = (1, 1)
FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1
FLAG_SUBBYTE_PADDED = 1 << 2

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_OPENCL, KDL_VULKAN = 1, 2, 3, 4, 7
KDL_METAL, KDL_ROCM, KDL_ROCM_HOST, KDL_CUDA_MANAGED = 8, 10, 11, 13
KDL_ONEAPI, KDL_WEBGPU, KDL_HEXAGON = 14, 15, 16


class DLPackError(HurrayGPUError, BufferError):
    """A tensor, dtype, device or stream that DLPack cannot carry (a builtin BufferError)."""

    default_fix = "call .materialize() or .to('cpu') first, or use the native Hurray transport."


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensor(ctypes.Structure):
    pass


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", DELETER), ("flags", ctypes.c_uint64),
                                     ("dl_tensor", DLTensor)]

_S, _P, _U, _R = (MemoryClass.STANDARD, MemoryClass.HOST_PINNED, MemoryClass.UNIFIED,
                  MemoryClass.PEER)
# (device_tag, memory_class) -> DLPack device type; absent pairs are invalid or unsupported.
_TO_DL: dict[tuple[int, int], int] = {
    (DeviceTag.CPU, _S): KDL_CPU, (DeviceTag.CPU, _P): KDL_CPU, (DeviceTag.CPU, _U): KDL_CPU,
    (DeviceTag.CUDA, _S): KDL_CUDA, (DeviceTag.CUDA, _P): KDL_CUDA_HOST,
    (DeviceTag.CUDA, _U): KDL_CUDA_MANAGED,
    (DeviceTag.ROCM, _S): KDL_ROCM, (DeviceTag.ROCM, _P): KDL_ROCM_HOST,
    **{(DeviceTag.METAL, c): KDL_METAL for c in (_S, _P, _U)},
    **{(DeviceTag.VULKAN, c): KDL_VULKAN for c in (_S, _P, _U)},
    (DeviceTag.WEBGPU, _S): KDL_WEBGPU,
    **{(DeviceTag.HEXAGON, c): KDL_HEXAGON for c in (_S, _P, _U)},
    **{(DeviceTag.LEVEL_ZERO, c): KDL_ONEAPI for c in (_S, _P, _U)},
    **{(DeviceTag.OPENCL, c): KDL_OPENCL for c in (_S, _P, _U)},
}
_FROM_DL: dict[int, tuple[int, int]] = {
    KDL_CPU: (DeviceTag.CPU, _S), KDL_CUDA: (DeviceTag.CUDA, _S),
    KDL_CUDA_HOST: (DeviceTag.CUDA, _P), KDL_CUDA_MANAGED: (DeviceTag.CUDA, _U),
    KDL_ROCM: (DeviceTag.ROCM, _S), KDL_ROCM_HOST: (DeviceTag.ROCM, _P),
    KDL_OPENCL: (DeviceTag.OPENCL, _S), KDL_VULKAN: (DeviceTag.VULKAN, _S),
}


def dl_code(device_tag: int, memory_class: int) -> int:
    """The DLPack device type of a (device_tag, memory_class) pair.

    Raises:
        DLPackError: private tags, and pairs the mapping marks invalid or refused.
    """
    code = _TO_DL.get((int(device_tag), int(memory_class)))
    if code is None:
        raise DLPackError(
            f"device_tag 0x{int(device_tag):02X} with memory_class {int(memory_class)} has no "
            "DLPack device type", fix="move the tensor to standard memory or use the native "
                                      "Hurray transport (__hurray__).")
    return code


def dlpack_device(t: Any) -> tuple[int, int]:
    """``(DLDeviceType, device_id)`` of a tensor's buffers (the cpu for a bufferless one)."""
    handles = t.descriptor.buffers
    if not handles:
        return (KDL_CPU, 0)
    h = handles[0]
    index = 0 if t.is_host else int(t.device.index)
    return (dl_code(h.device_tag, h.memory_class), index)


def hurray_place(device_type: int) -> tuple[int, int]:
    """The (device_tag, memory_class) a DLPack device type imports as.

    Raises:
        DLPackError: device types hurray_gpu cannot hold.
    """
    place = _FROM_DL.get(int(device_type))
    if place is None:
        raise DLPackError(f"DLPack device type {device_type} is not supported",
                          fix="copy the array to the CPU before importing it.")
    return place


# Hurray dtype name -> (DLPack code, bits); the float8/6/4 codes need DLPack >= 1.1.
_DTYPE_CODES: dict[str, tuple[int, int]] = {
    "int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64),
    "uint8": (1, 8), "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64), "bfloat16": (4, 16),
    "complex64": (5, 64), "complex128": (5, 128), "bool": (6, 8),
    "int4": (0, 4), "uint4": (1, 4), "int2": (0, 2), "uint2": (1, 2),
    "float8_e4m3": (10, 8), "float8_e5m2": (12, 8), "float8_e8m0": (14, 8),
    "float6_e2m3": (15, 6), "float6_e3m2": (16, 6), "float4_e2m1": (17, 4),
}
_NEEDS_1_1 = {"float8_e4m3", "float8_e5m2", "float8_e8m0", "float6_e2m3", "float6_e3m2",
              "float4_e2m1", "int4", "uint4", "int2", "uint2"}
_FROM_CODES = {v: k for k, v in _DTYPE_CODES.items()}


def dtype_code(name: str, version: tuple[int, int]) -> tuple[int, int]:
    """The (code, bits) of a Hurray dtype for a consumer of DLPack ``version``.

    Raises:
        DLPackError: no DLPack code, or one newer than the consumer understands.
    """
    code = _DTYPE_CODES.get(name)
    if code is None:
        raise DLPackError(f"{name} has no DLPack dtype code",
                          fix="export the raw bytes (t.buffers) or convert to float64 first.")
    if name in _NEEDS_1_1 and version < (1, 1):
        raise DLPackError(
            f"{name} needs DLPack >= 1.1 but the consumer asked for {version[0]}.{version[1]}",
            fix="pass max_version=(1, 1), export a same-width uint view, or call "
                ".unpack('float32') first.")
    return code


def hurray_dtype(code: int, bits: int, lanes: int) -> str:
    """The Hurray dtype name of a DLPack (code, bits, lanes).

    Raises:
        DLPackError: vector lanes or codes without a Hurray type.
    """
    name = _FROM_CODES.get((int(code), int(bits)))
    if lanes != 1 or name is None:
        raise DLPackError(f"DLPack dtype (code {code}, bits {bits}, lanes {lanes}) has no "
                          "Hurray type", fix="convert the array to a standard dtype first.")
    return name
