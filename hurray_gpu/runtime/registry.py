"""The backend registry and the one device resolver.

Every (device_tag, memory_class) a Hurray descriptor can name maps to a backend module in
``BACKENDS``; a module is imported only when its device is first opened (by name, so importing
hurray_gpu never imports a driver). :func:`resolve_device` turns any device spec into an opened,
memoised Device; it is the only place specs are parsed, and ``None`` always means
:func:`default_device`.

Specs are ``"cpu"``, ``"reference"``, ``"opencl:0"``, ``"vulkan:1"``, ``"cuda:0"``,
``"rocm:0"``, a ``(device_tag, index)`` pair, a bare tag int, a Device, or None.
"""

from __future__ import annotations

import importlib
import logging
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any

from hurray_gpu import config
from hurray_gpu.errors import BackendUnavailableError
from hurray_gpu.format.descriptor.buffers import DeviceTag

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from hurray_gpu.runtime.device import Device

# The backend contract (see backends/cpu.py and backends/opencl.py):
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
    "BACKENDS", "EXTRAS", "MAX_SPEC_LEN", "PREFERENCE", "SPECIAL_BACKENDS", "backend_module",
    "default_device", "describe_devices", "device_count", "devices", "is_available",
    "module_name", "parse_spec", "resolve_device", "tag_name",
]

# Tag -> module name in hurray_gpu.backends. Rows are only ever added.
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
# Longest accepted spec string; anything longer is not a device name.
MAX_SPEC_LEN = 64

_KIND_TAGS = {t.name.lower(): int(t) for t in DeviceTag}
_KIND_TAGS.update({"levelzero": 0x07, "hip": 0x02, "cl": 0x08, "host": 0x00})
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
        raise BackendUnavailableError(f"unknown backend {tag!r}; supported: {_supported()}",
                                      fix="use 'reference', 'null' or a device tag.")
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
            except BackendUnavailableError as exc:
                log.debug("backend %s unavailable: %s", name, exc)
                _AVAILABLE[name] = False
        return _AVAILABLE[name]


def _open(tag: int | str, index: int) -> Device:
    """Open (once; memoised) device ``index`` of the backend for ``tag``."""
    name = module_name(tag)
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise BackendUnavailableError(f"device index must be a non-negative int, got {index!r}",
                                      fix="pass an index such as 0.")
    with _LOCK:
        opened = _OPENED.get((name, index))
        if opened is not None:
            return opened
        count = device_count(tag)
        if index >= count:
            raise BackendUnavailableError(
                f"{name} has {count} device(s) here; index {index} does not exist",
                fix="run `hurray-gpu devices` and pick a listed index.")
        device: Device = backend_module(tag).DEVICE(index)
        _OPENED[(name, index)] = device
        log.info("opened %s (%s)", device.spec, device.name)
        return device


def _bad_spec(spec: Any) -> BackendUnavailableError:
    return BackendUnavailableError(
        f"cannot parse device spec {spec!r}",
        fix="use 'cpu', 'reference', 'opencl:0', 'vulkan:0', 'cuda:0', 'rocm:0' or (tag, index).")


def parse_spec(spec: Any) -> tuple[int | str, int]:
    """Return ``(tag or special name, index)`` for a device spec.

    Raises:
        BackendUnavailableError: the spec is malformed.
    """
    if isinstance(spec, tuple) and len(spec) == 2:
        tag, index = spec
        if isinstance(tag, str):
            return parse_spec(f"{tag}:{index}")
        if isinstance(tag, int) and isinstance(index, int) and not isinstance(index, bool):
            return int(tag), index
        raise _bad_spec(spec)
    if isinstance(spec, int) and not isinstance(spec, bool):
        return int(spec), 0
    if not isinstance(spec, str) or not spec or len(spec) > MAX_SPEC_LEN:
        raise _bad_spec(spec)
    kind, _, index_text = spec.strip().lower().partition(":")
    if index_text and (not index_text.isdigit() or len(index_text) > 6):
        raise _bad_spec(spec)
    index = int(index_text) if index_text else 0
    if kind in SPECIAL_BACKENDS:
        return kind, index
    if kind in _KIND_TAGS:
        return _KIND_TAGS[kind], index
    raise _bad_spec(spec)


def resolve_device(spec: Any = None) -> Device:
    """Open a device: the one resolver every API that takes a device uses.

    Args:
        spec: see the module docstring; None means :func:`default_device` (everywhere: a
            Buffer, Stream, Event, Tensor.to or kernel launch given no device lands there).

    Returns:
        The opened (memoised) device.

    Raises:
        BackendUnavailableError: malformed spec, a tag with no backend (metal, webgpu,
            hexagon, level zero, private...), a missing driver package (the message names the
            pip extra), or no such device index.
    """
    if spec is None:
        return default_device()
    if isinstance(spec, (str, int, tuple)):
        tag, index = parse_spec(spec)
        return _open(tag, index)
    if hasattr(spec, "allocator") and hasattr(spec, "program"):  # already a Device
        return spec  # type: ignore[no-any-return]
    raise _bad_spec(spec)


def devices() -> list[Device]:
    """Every device actually available here: cpu, the reference oracle, then GPU backends.

    Returns:
        Opened devices, in the order cpu, reference, cuda, rocm, vulkan, opencl.
    """
    found: list[Device] = []
    order: list[int | str] = [DeviceTag.CPU, "reference"]
    order += [t for t in PREFERENCE if t != DeviceTag.CPU]
    for key in order:
        if not is_available(key):
            continue
        for index in range(device_count(key)):
            try:
                found.append(_open(key, index))
            except BackendUnavailableError:
                continue
    return found


def default_device() -> Device:
    """The best device: ``HURRAY_GPU_DEVICE`` if set, else cuda > rocm > vulkan > opencl > cpu.

    Vulkan or OpenCL devices that emulate a GPU on the CPU (lavapipe, pocl) are skipped: the
    native cpu backend does the same work faster.

    Raises:
        BackendUnavailableError: ``HURRAY_GPU_DEVICE`` names a device that cannot be opened
            (there is no silent fallback).
    """
    override = config.device_override()
    if override is not None:
        return resolve_device(override)
    for tag in PREFERENCE:
        if tag == DeviceTag.CPU or not is_available(tag):
            continue
        for index in range(device_count(tag)):
            opened = _open(tag, index)
            if not opened.emulated:
                return opened
    return _open(DeviceTag.CPU, 0)


def describe_devices() -> str:
    """A text table of every backend: its devices, or why it is unavailable here.

    Returns:
        One line per device (spec, tag, memory classes, name) and per missing backend.
    """
    lines = []
    for tag, name in sorted(BACKENDS.items()):
        try:
            count = device_count(tag)
        except BackendUnavailableError as exc:
            lines.append(f"{name:8s} 0x{tag:02x}  unavailable: {exc}")
            continue
        if count == 0:
            lines.append(f"{name:8s} 0x{tag:02x}  no devices")
        for index in range(count):
            dev = _open(tag, index)
            classes = ",".join(m.label for m in dev.memory_classes)
            note = " (emulated on the CPU)" if dev.emulated else ""
            lines.append(f"{dev.spec:8s} 0x{tag:02x}  [{classes}] {dev.name}{note}")
    lines.append("reference      NumPy oracle (never chosen by default)")
    return "\n".join(lines)
