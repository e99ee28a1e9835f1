"""Opening devices: ``devices()``, ``device(spec)`` and ``default_device()``.

Specs are ``"cpu"``, ``"reference"``, ``"opencl:0"``, ``"vulkan:1"``, ``"cuda:0"``,
``"rocm:0"``, a ``(device_tag, index)`` pair, a bare tag int, or a Device.
"""

from __future__ import annotations

from typing import Any

from hurray_gpu import config
from hurray_gpu.backends import (
    BACKENDS,
    PREFERENCE,
    SPECIAL_BACKENDS,
    DeviceTag,
    device_count,
    is_available,
    open_device,
)
from hurray_gpu.device import Device
from hurray_gpu.errors import BackendUnavailableError

__all__ = ["default_device", "describe_devices", "device", "devices", "parse_spec"]

_KIND_TAGS = {t.name.lower(): int(t) for t in DeviceTag}
_KIND_TAGS.update({"levelzero": 0x07, "hip": 0x02, "cl": 0x08, "host": 0x00})
# Longest accepted spec string; anything longer is not a device name.
MAX_SPEC_LEN = 64


def _bad_spec(spec: Any) -> BackendUnavailableError:
    return BackendUnavailableError(
        f"cannot parse device spec {spec!r}",
        fix="use 'cpu', 'reference', 'opencl:0', 'vulkan:0', 'cuda:0', 'rocm:0' or (tag, index).")


def _parse_index(text: str, spec: Any) -> int:
    if not text.isdigit() or len(text) > 6:
        raise _bad_spec(spec)
    return int(text)


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
    index = _parse_index(index_text, spec) if index_text else 0
    if kind in SPECIAL_BACKENDS:
        return kind, index
    if kind in _KIND_TAGS:
        return _KIND_TAGS[kind], index
    raise _bad_spec(spec)


def device(spec: Any = None) -> Device:
    """Open a device.

    Args:
        spec: see the module docstring; None means :func:`default_device`.

    Returns:
        The opened (memoised) device.

    Raises:
        BackendUnavailableError: malformed spec, a tag with no backend (metal, webgpu,
            hexagon, level zero, private...), a missing driver package (the message names the
            pip extra), or no such device index.
    """
    if spec is None:
        return default_device()
    if isinstance(spec, Device):
        return spec
    tag, index = parse_spec(spec)
    return open_device(tag, index)


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
                found.append(open_device(key, index))
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
        return device(override)
    for tag in PREFERENCE:
        if tag == DeviceTag.CPU or not is_available(tag):
            continue
        for index in range(device_count(tag)):
            opened = open_device(tag, index)
            if not opened.emulated:
                return opened
    return open_device(DeviceTag.CPU, 0)



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
            dev = open_device(tag, index)
            classes = ",".join(m.label for m in dev.memory_classes)
            note = " (emulated on the CPU)" if dev.emulated else ""
            lines.append(f"{dev.spec:8s} 0x{tag:02x}  [{classes}] {dev.name}{note}")
    lines.append("reference      NumPy oracle (never chosen by default)")
    return "\n".join(lines)
