"""hurray_gpu: the GPU-aware runtime for the Hurray tensor interchange format."""

from __future__ import annotations

from hurray_gpu.errors import (
    BackendUnavailableError,
    CompileError,
    DeviceError,
    HurrayFormatError,
    HurrayGPUError,
    OutOfMemoryError,
    UnsupportedOpError,
)

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailableError",
    "CompileError",
    "DeviceError",
    "HurrayFormatError",
    "HurrayGPUError",
    "OutOfMemoryError",
    "UnsupportedOpError",
    "__version__",
]
