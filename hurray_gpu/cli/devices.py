"""``hurray-gpu devices``: every backend, whether it works here and why not, its devices, their
memory classes, and the kernel toolchains available."""

from __future__ import annotations

import argparse
from typing import Any

from hurray_gpu.cli.common import dump_json, format_table, one_line
from hurray_gpu.cli.toolchains import probe_toolchains
from hurray_gpu.errors import HurrayGPUError
from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.runtime.registry import BACKENDS, device_count, resolve_device

__all__ = ["add_parser", "collect", "render"]

# Why a backend whose driver loads sees no device, and what to do about it.
NO_DEVICE_HINTS = {
    "cuda": "the CUDA driver sees no NVIDIA GPU. Fix: check nvidia-smi and the driver install.",
    "rocm": "HIP sees no AMD GPU. Fix: check rocm-smi and that the user is in group 'render'.",
    "vulkan": "no Vulkan device. Fix: apt install mesa-vulkan-drivers (lavapipe) or a GPU ICD.",
    "opencl": "no OpenCL device found. Fix: apt install pocl-opencl-icd (or a GPU vendor ICD).",
    "cpu": "the cpu backend found no host compiler. Fix: apt install gcc.",
}


def add_parser(sub: Any) -> None:
    """Register ``devices``."""
    p = sub.add_parser("devices", help="list every backend, its devices, or why it is unusable",
                       description=__doc__)
    p.add_argument("--json", action="store_true", help="print the inventory as JSON")
    p.set_defaults(run=run)


def _device_info(dev: Any) -> dict[str, Any]:
    info: dict[str, Any] = {"spec": dev.spec, "name": dev.name,
                            "memory_classes": [m.label for m in dev.memory_classes],
                            "emulated": bool(dev.emulated)}
    try:
        free, total = dev.memory_info()
        info["memory_total_bytes"], info["memory_free_bytes"] = int(total), int(free)
    except (HurrayGPUError, AttributeError, NotImplementedError):
        pass
    return info


def _backend(tag: int, name: str) -> dict[str, Any]:
    row: dict[str, Any] = {"backend": name, "tag": f"0x{tag:02x}", "available": False,
                           "devices": []}
    try:
        count = device_count(tag)
        row["devices"] = [_device_info(resolve_device((tag, i))) for i in range(count)]
    except HurrayGPUError as exc:
        row["reason"] = one_line(str(exc))
        return row
    row["available"] = bool(row["devices"])
    if not row["available"]:
        row["reason"] = NO_DEVICE_HINTS.get(name, "no device found.")
    return row


def _unsupported_tags() -> list[dict[str, Any]]:
    return [{"backend": t.name.lower(), "tag": f"0x{int(t):02x}", "available": False,
             "devices": [],
             "reason": "hurray_gpu has no backend for this device tag. Fix: copy such tensors "
                       "to the host (or another listed device) first."}
            for t in DeviceTag if int(t) not in BACKENDS]


def collect() -> dict[str, Any]:
    """The inventory ``devices`` prints.

    Returns:
        ``backends`` (one row per Hurray device tag), ``reference``, ``default`` and
        ``toolchains``.
    """
    from hurray_gpu.runtime.registry import default_device

    rows = [_backend(tag, name) for tag, name in sorted(BACKENDS.items())]
    rows += _unsupported_tags()
    rows.sort(key=lambda r: r["tag"])
    try:
        default: dict[str, Any] = {"spec": default_device().spec}
    except HurrayGPUError as exc:
        default = {"spec": None, "reason": one_line(str(exc))}
    return {"backends": rows,
            "reference": "the NumPy oracle device 'reference' (tests only; never a fallback)",
            "default": default, "toolchains": probe_toolchains()}


def render(inv: dict[str, Any]) -> str:
    """The inventory as text: a backend table, device lines, the default, the toolchains."""
    rows = []
    for b in inv["backends"]:
        if b["devices"]:
            for d in b["devices"]:
                note = " (emulated on the CPU)" if d["emulated"] else ""
                rows.append([d["spec"], b["tag"], "yes", ",".join(d["memory_classes"]),
                             d["name"] + note])
        else:
            rows.append([b["backend"], b["tag"], "no", "-", b.get("reason", "")])
    out = ["Backends", format_table(["device", "tag", "usable", "memory classes", "details"],
                                    rows)]
    out += ["", f"reference: {inv['reference']}"]
    default = inv["default"]
    out.append(f"default: {default['spec'] or 'none (' + default['reason'] + ')'}")
    tc_rows = [[t["name"], "yes" if t["available"] else "no", t["used_by"],
                t.get("version") or t.get("reason", "")] for t in inv["toolchains"]]
    out += ["", "Kernel toolchains",
            format_table(["toolchain", "available", "used by", "version / why not"], tc_rows)]
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    """Print the inventory; always 0 (an unusable backend is information, not an error)."""
    inv = collect()
    print(dump_json(inv) if args.json else render(inv))
    return 0
