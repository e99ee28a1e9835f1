"""The backend table: Hurray device tag -> backend module, imported only when first used.

A new backend is one module here and one row in ``BACKENDS``. Each module defines ``DEVICE``,
its Device subclass, whose ``count()`` probes the driver and whose constructor opens one.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType
from typing import TYPE_CHECKING

from hurray_gpu.errors import BackendUnavailableError
from hurray_gpu.format.descriptor.buffers import DeviceTag

if TYPE_CHECKING:
    from hurray_gpu.device import Device

# The backend contract (see cpu.py and opencl.py):
# - ``DEVICE`` is the module's Device subclass; ``DEVICE.count()`` raises
#   BackendUnavailableError when the driver package/library is missing and returns 0 when it
#   sees no device; ``DEVICE(index)`` opens one. Set ``tag``, ``kind``, ``dialect``
#   ("cuda", "hip", "opencl", "glsl", "c"), ``program_cls`` and ``emulated``.
# - The Allocator subclass fills ``_alloc/_free/_copyin/_copyout/_offset``; ``_offset`` gets the
#   root raw handle and an absolute byte offset. Zero-byte buffers never reach the hooks.
# - The Program subclass fills ``_launch(buffers, scalars, global_size, local_size, wait)``:
#   buffers are Allocations in ``kernel.buffers`` order (binding i = buffer i; use
#   ``a.root.raw`` and ``a.offset`` for views); scalars are numpy 32-bit scalars in
#   ``kernel.scalars`` order (GLSL: one push-constant word each); global_size counts work items
#   per axis and must be rounded up to a multiple of local_size (bodies bounds-check).
# - GLSL buffers are arrays of uint words: allocate sizes rounded up to 4 bytes.

__all__ = [
    "BACKENDS",
    "EXTRAS",
    "PREFERENCE",
    "DeviceTag",
    "backend_module",
    "device_count",
    "is_available",
    "open_device",
    "tag_name",
]


# Tag -> module name in this package. Rows are only ever added.
BACKENDS: dict[int, str] = {
    DeviceTag.CPU: "cpu",
    DeviceTag.CUDA: "cuda",
    DeviceTag.ROCM: "rocm",
    DeviceTag.VULKAN: "vulkan",
    DeviceTag.OPENCL: "opencl",
}
# Devices that are not Hurray tags: the NumPy oracle and the no-op test device.
SPECIAL_BACKENDS: dict[str, str] = {"reference": "reference", "null": "null"}
# The pip extra that brings each backend's driver package.
EXTRAS: dict[str, str] = {"cuda": "cuda", "rocm": "rocm", "vulkan": "vulkan", "opencl": "opencl"}
# default_device() order: the first available non-emulated device wins.
PREFERENCE: tuple[int, ...] = (DeviceTag.CUDA, DeviceTag.ROCM, DeviceTag.VULKAN,
                               DeviceTag.OPENCL, DeviceTag.CPU)

_LOCK = threading.RLock()
_AVAILABLE: dict[str, bool] = {}
_COUNTS: dict[str, int] = {}
_OPENED: dict[tuple[str, int], Device] = {}


def tag_name(tag: int) -> str:
    """A readable name for any tag value, e.g. ``"metal (0x03)"`` or ``"private(0xf1)"``."""
    if tag in DeviceTag._value2member_map_:
        return f"{DeviceTag(tag).name.lower()} (0x{tag:02x})"
    if 0xF0 <= tag <= 0xFE:
        return f"private(0x{tag:02x})"
    return f"invalid tag 0x{tag:02x}" if 0 <= tag <= 0xFF else f"invalid tag {tag}"


def _supported() -> str:
    return ", ".join(f"{name} (0x{tag:02x})" for tag, name in sorted(BACKENDS.items()))


def module_name(tag: int | str) -> str:
    """The backend module name for a tag (or special name such as ``"reference"``).

    Raises:
        BackendUnavailableError: the tag has no backend (metal, webgpu, private, reserved...).
    """
    if isinstance(tag, str):
        if tag in SPECIAL_BACKENDS:
            return SPECIAL_BACKENDS[tag]
        raise BackendUnavailableError(f"unknown backend {tag!r}; supported: {_supported()}")
    if isinstance(tag, bool) or not isinstance(tag, int) or tag not in BACKENDS:
        raise BackendUnavailableError(
            f"device tag {tag_name(tag) if isinstance(tag, int) else repr(tag)} has no "
            f"hurray_gpu backend; supported: {_supported()}",
            fix="open one of the supported devices, or copy the data to the host first.")
    return BACKENDS[tag]


def backend_module(tag: int | str) -> ModuleType:
    """Import (once) and return the backend module for ``tag``.

    Raises:
        BackendUnavailableError: no backend for the tag, or its driver package is missing.
    """
    name = module_name(tag)
    try:
        return importlib.import_module(f"hurray_gpu.backends.{name}")
    except ImportError as exc:
        extra = EXTRAS.get(name, name)
        raise BackendUnavailableError(
            f"the {name} backend cannot be imported: {exc}",
            fix=f"pip install 'hurray_gpu[{extra}]'.") from exc


def device_count(tag: int | str) -> int:
    """How many devices the backend for ``tag`` sees (probed once, then cached).

    Raises:
        BackendUnavailableError: no backend, or its driver package or library is missing.
    """
    name = module_name(tag)
    with _LOCK:
        if name not in _COUNTS:
            _COUNTS[name] = int(backend_module(tag).DEVICE.count())
        return _COUNTS[name]


def is_available(tag: int | str) -> bool:
    """True when the backend for ``tag`` imports and sees at least one device (cached)."""
    name = module_name(tag) if isinstance(tag, str) or tag in BACKENDS else None
    if name is None:
        return False
    with _LOCK:
        if name not in _AVAILABLE:
            try:
                _AVAILABLE[name] = device_count(tag) > 0
            except BackendUnavailableError:
                _AVAILABLE[name] = False
        return _AVAILABLE[name]


def open_device(tag: int | str, index: int = 0) -> Device:
    """Open (once; memoised) device ``index`` of the backend for ``tag``.

    Raises:
        BackendUnavailableError: no backend, driver missing, or no device ``index``.
    """
    name = module_name(tag)
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise BackendUnavailableError(f"device index must be a non-negative int, got {index!r}")
    with _LOCK:
        opened = _OPENED.get((name, index))
        if opened is not None:
            return opened
        count = device_count(tag)
        if index >= count:
            raise BackendUnavailableError(
                f"{name} has {count} device(s) here; index {index} does not exist",
                fix="run `hurray-gpu devices` and pick a listed index.")
        device = backend_module(tag).DEVICE(index)
        _OPENED[(name, index)] = device
        return device
