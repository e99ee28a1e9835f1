"""hurray_gpu: the GPU-aware runtime for the Hurray tensor interchange format.

Importing this package never imports an optional driver (CuPy, pyopencl, vulkan): each backend
module is imported only when its device is first opened.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from hurray_gpu.errors import (
    AmbiguousTruthError,
    ArgumentTypeError,
    BackendUnavailableError,
    BoundsViolation,
    CompileError,
    ConversionError,
    CopyRequiredError,
    DeviceError,
    HurrayFormatError,
    HurrayGPUError,
    MissingFileError,
    OutOfMemoryError,
    ProtocolError,
    RemoteError,
    TensorIndexError,
    TensorNotFoundError,
    TransportError,
    UnreadableFileError,
    UnsupportedConversionError,
    UnsupportedOpError,
)

# Everything but the errors is imported on first use (PEP 562): ``import hurray_gpu`` stays
# cheap for tools that only need a name or two, and no driver or ml_dtypes loads until used.
_LAZY_FROM = {
    "hurray_gpu.format.descriptor": "BufferHandle SyncMode TensorDescriptor decode_descriptor "
                                    "decode_descriptor_prefix",
    "hurray_gpu.format.descriptor.buffers": "DeviceTag",
    # the dense layouts relayout() writes (the sparse and paged ones come from sparsify and
    # the KV cache)
    "hurray_gpu.format.descriptor.layouts": "ColMajor Hilbert Morton RowMajor Strided Tiled",
    "hurray_gpu.format.dtypes": "DType by_name by_tag",
    "hurray_gpu.io.convert": "convert",
    "hurray_gpu.io.convert.export": "export",
    "hurray_gpu.io": "FileWriter HrryFile StreamReader StreamWriter UInt64 load open_file save",
    "hurray_gpu.kv_cache": "OutOfPagesError PagedKVCache",
    "hurray_gpu.net": "connect serve",
    "hurray_gpu.net.ipc": "SharedTensor attach share",
    "hurray_gpu.ops.dequantize": "dequantize unpack",
    "hurray_gpu.ops.host": "element relayout sparsify",
    "hurray_gpu.ops.materialize": "materialize",
    "hurray_gpu.ops.quantize": "quantize",
    "hurray_gpu.runtime.buffer": "Buffer",
    "hurray_gpu.runtime.device": "Device",
    "hurray_gpu.runtime.memory": "MemoryClass",
    "hurray_gpu.runtime.program": "compile_stats",
    "hurray_gpu.runtime.registry": "default_device describe_devices devices",
    "hurray_gpu.sync": "Event Stream",
    "hurray_gpu.sync.dlpack_import": "from_dlpack",
    "hurray_gpu.tensor": "Tensor",
}
# Diagnostics go to the "hurray_gpu" logger hierarchy; the library adds no handler of its own
# (an application, or the CLI's -v / --log-level, decides where they are shown).
logging.getLogger(__name__).addHandler(logging.NullHandler())

_LAZY = {name: (module, name) for module, names in _LAZY_FROM.items() for name in names.split()}
_LAZY["device"] = ("hurray_gpu.runtime.registry", "resolve_device")

if TYPE_CHECKING:
    __version__: str  # read from the package metadata on first access (_version)
    import os
    from collections.abc import Sequence
    from typing import TypeAlias

    import numpy as np

    from hurray_gpu.format.descriptor import (
        BufferHandle,
        SyncMode,
        TensorDescriptor,
        decode_descriptor,
        decode_descriptor_prefix,
    )
    from hurray_gpu.format.descriptor.buffers import DeviceTag
    from hurray_gpu.format.descriptor.layouts import (
        ColMajor,
        Hilbert,
        Morton,
        RowMajor,
        Strided,
        Tiled,
    )
    from hurray_gpu.format.dtypes import DType, by_name, by_tag
    from hurray_gpu.io import FileWriter, StreamReader, StreamWriter, UInt64, save
    from hurray_gpu.io import HrryFile as _HrryFile
    from hurray_gpu.io.convert import convert
    from hurray_gpu.io.convert.export import export
    from hurray_gpu.kv_cache import OutOfPagesError, PagedKVCache
    from hurray_gpu.net import connect, serve
    from hurray_gpu.net.ipc import SharedTensor, share
    from hurray_gpu.ops.host import element
    from hurray_gpu.runtime.buffer import Buffer
    from hurray_gpu.runtime.device import Device
    from hurray_gpu.runtime.memory import MemoryClass
    from hurray_gpu.runtime.program import compile_stats
    from hurray_gpu.runtime.registry import default_device, describe_devices, devices
    from hurray_gpu.runtime.registry import resolve_device as device
    from hurray_gpu.sync import Event, Stream
    from hurray_gpu.tensor import Tensor

    # What type checkers see of the functions that return tensors: the services below the
    # Tensor layer cannot name the class, so their own annotations say Any. Each declaration
    # mirrors its implementation's parameters (tests/null/test_typed_api.py compares them).
    HrryFile = _HrryFile[Tensor]
    DeviceSpec: TypeAlias = "Device | str | int | None"

    def dequantize(t: Tensor, dtype: str = "float32", device: DeviceSpec = None, *,
                   seq_lens: Sequence[int] | np.ndarray | None = None,
                   max_output_bytes: int | None = None) -> Tensor: ...

    def unpack(t: Tensor, dtype: str | None = None, device: DeviceSpec = None) -> Tensor: ...

    def materialize(t: Tensor, dtype: str | None = None, *,
                    seq_lens: Sequence[int] | None = None,
                    max_output_bytes: int | None = None) -> Tensor: ...

    def quantize(array: object, scheme: str = "per_block", *, axis: int = 0,
                 block_size: int = 32, dtype: str | None = None, symmetric: bool = True,
                 scale_dtype: str = "float32", zero_point_bias: int = 0,
                 scales: object = None, zero_points: object = None,
                 shared: bool = False) -> Tensor: ...

    def relayout(t: Tensor, layout: object) -> Tensor: ...

    def sparsify(t: Tensor, fmt: str, *, mode_order: Sequence[int] | None = None,
                 keep: object = None) -> Tensor: ...

    def from_dlpack(x: object, *, stream: object = None, copy: bool | None = None) -> Tensor: ...

    def attach(path: str, *, timeout: float = 10.0) -> Tensor: ...

    def open_file(path: str | os.PathLike[str], *, permissive: bool = False,
                  max_composite_depth: int = 8) -> HrryFile: ...

    def load(path: str | os.PathLike[str], names: list[str] | None = None, *,
             device: DeviceSpec = None, memory_class: MemoryClass | str = "standard",
             progress: bool | None = None) -> dict[str, Tensor]: ...


def __getattr__(name: str) -> Any:
    """Import a public name's module on first access (PEP 562)."""
    if name == "__version__":
        globals()[name] = _version()
        return globals()[name]
    found = _LAZY.get(name)
    if found is None:
        raise AttributeError(f"module 'hurray_gpu' has no attribute {name!r}")
    value = getattr(importlib.import_module(found[0]), found[1])
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})


def _version() -> str:
    """The installed distribution's version: pyproject.toml is its one source. Looked up on
    first access, since importlib.metadata costs milliseconds that ``import hurray_gpu`` does
    not otherwise pay."""
    from importlib import metadata

    try:
        return metadata.version("hurray_gpu")
    except metadata.PackageNotFoundError:  # a source tree on sys.path that was never installed
        return "0+unknown"


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
    from hurray_gpu.tensor import Tensor

    return Tensor.from_numpy(array, order=order)


__all__ = [
    "AmbiguousTruthError",
    "ArgumentTypeError",
    "BackendUnavailableError",
    "BoundsViolation",
    "Buffer",
    "BufferHandle",
    "ColMajor",
    "CompileError",
    "ConversionError",
    "CopyRequiredError",
    "DType",
    "Device",
    "DeviceError",
    "DeviceTag",
    "Event",
    "FileWriter",
    "Hilbert",
    "HrryFile",
    "HurrayFormatError",
    "HurrayGPUError",
    "MemoryClass",
    "MissingFileError",
    "Morton",
    "OutOfMemoryError",
    "OutOfPagesError",
    "PagedKVCache",
    "ProtocolError",
    "RemoteError",
    "RowMajor",
    "SharedTensor",
    "Stream",
    "StreamReader",
    "StreamWriter",
    "Strided",
    "SyncMode",
    "Tensor",
    "TensorDescriptor",
    "TensorIndexError",
    "TensorNotFoundError",
    "Tiled",
    "TransportError",
    "UInt64",
    "UnreadableFileError",
    "UnsupportedConversionError",
    "UnsupportedOpError",
    "__version__",
    "attach",
    "by_name",
    "by_tag",
    "compile_stats",
    "connect",
    "convert",
    "export",
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
    "serve",
    "share",
    "sparsify",
    "unpack",
]
