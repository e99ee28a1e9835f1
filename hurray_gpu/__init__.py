"""hurray_gpu: the GPU-aware runtime for the Hurray tensor interchange format.

Importing this package never imports an optional driver (CuPy, pyopencl, vulkan): each backend
module is imported only when its device is first opened.
"""

from __future__ import annotations

from hurray_gpu.errors import (
    BackendUnavailableError,
    BoundsViolation,
    CompileError,
    DeviceError,
    HurrayFormatError,
    HurrayGPUError,
    OutOfMemoryError,
    UnsupportedOpError,
)
from hurray_gpu.format.descriptor import (
    BufferHandle,
    SyncMode,
    TensorDescriptor,
    decode_descriptor,
    decode_descriptor_prefix,
)
from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.format.dtypes import DType, by_name, by_tag
from hurray_gpu.io import (
    FileWriter,
    HrryFile,
    StreamReader,
    StreamWriter,
    UInt64,
    load,
    open_file,
    save,
)
from hurray_gpu.kv_cache import OutOfPagesError, PagedKVCache
from hurray_gpu.ops import dequantize, element, materialize, relayout, sparsify, unpack
from hurray_gpu.ops.quantize import quantize
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.registry import default_device, describe_devices, devices
from hurray_gpu.runtime.registry import resolve_device as device
from hurray_gpu.sync import Event, Stream
from hurray_gpu.sync.dlpack_import import from_dlpack
from hurray_gpu.tensor import Tensor

__version__ = "0.1.0"


def from_numpy(array: object, *, order: str = "C") -> Tensor:
    """Wrap a NumPy or ml_dtypes array as a host Tensor (sub-byte types are packed).

    Args:
        array: any NumPy / ml_dtypes array.
        order: ``"C"`` for a row-major descriptor, ``"F"`` for column-major.

    Returns:
        A Tensor on the cpu device.

    Raises:
        UnsupportedOpError: the dtype has no Hurray element type.
    """
    return Tensor.from_numpy(array, order=order)


__all__ = [
    "BackendUnavailableError",
    "BoundsViolation",
    "Buffer",
    "BufferHandle",
    "CompileError",
    "DType",
    "Device",
    "DeviceError",
    "DeviceTag",
    "Event",
    "FileWriter",
    "HrryFile",
    "HurrayFormatError",
    "HurrayGPUError",
    "MemoryClass",
    "OutOfMemoryError",
    "OutOfPagesError",
    "PagedKVCache",
    "Stream",
    "StreamReader",
    "StreamWriter",
    "SyncMode",
    "Tensor",
    "TensorDescriptor",
    "UInt64",
    "UnsupportedOpError",
    "__version__",
    "by_name",
    "by_tag",
    "decode_descriptor",
    "decode_descriptor_prefix",
    "default_device",
    "dequantize",
    "describe_devices",
    "device",
    "devices",
    "element",
    "from_dlpack",
    "from_numpy",
    "load",
    "materialize",
    "open_file",
    "quantize",
    "relayout",
    "save",
    "sparsify",
    "unpack",
]
