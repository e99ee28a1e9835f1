"""``hurray-gpu devices``: every backend, whether it works here and why not, its devices, their
memory classes and buffer pools, and the kernel compilers this machine offers (NVRTC, hipRTC,
OpenCL, glslang, host cc). A toolchain probe never raises: a missing one is information, not a
failure."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

from hurray_gpu.backends import hostcc, rtc
from hurray_gpu.cli.common import dump_json, one_line, show, table
from hurray_gpu.errors import HurrayGPUError
from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.runtime.registry import BACKENDS, default_device, device_count, resolve_device

__all__ = ["add_parser", "collect", "probe_toolchains", "render"]


# A compiler that does not answer --version within this many seconds counts as broken.
VERSION_TIMEOUT_S = 10


def _ok(name: str, version: str, used_by: str) -> dict[str, Any]:
    return {"name": name, "available": True, "version": version, "used_by": used_by}


def _missing(name: str, reason: str, used_by: str) -> dict[str, Any]:
    return {"name": name, "available": False, "reason": one_line(reason), "used_by": used_by}


def _first_line(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT_S,
                          check=False)
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else f"{argv[0]} (no version output)"


def _rtc(name: str, loader_name: str, used_by: str) -> dict[str, Any]:

    try:
        return _ok(name, getattr(rtc, loader_name)().version(), used_by)
    except HurrayGPUError as exc:
        return _missing(name, str(exc), used_by)


def _nvrtc() -> dict[str, Any]:
    return _rtc("NVRTC", "nvrtc", "cuda (and `python -m hurray_gpu.kernels check`)")


def _hiprtc() -> dict[str, Any]:
    return _rtc("hipRTC", "hiprtc", "rocm (and `python -m hurray_gpu.kernels check`)")


def _opencl() -> dict[str, Any]:
    used_by = "opencl"
    try:
        import pyopencl as cl
    except ImportError as exc:
        return _missing("OpenCL", f"pyopencl is not installed ({exc}). Fix: pip install "
                        "'hurray_gpu[opencl]'.", used_by)
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        return _missing("OpenCL", f"no OpenCL platform ({exc}). Fix: install an ICD, e.g. "
                        "apt install pocl-opencl-icd.", used_by)
    names = ", ".join(f"{p.name} {p.version}".strip() for p in platforms) or "no platforms"
    return _ok("OpenCL", f"pyopencl {cl.VERSION_TEXT}; {names}", used_by)


def _glslang() -> dict[str, Any]:
    used_by = "vulkan (GLSL -> SPIR-V)"
    exe = shutil.which("glslangValidator")
    if exe is None:
        return _missing("glslang", "glslangValidator is not on PATH. Fix: apt install "
                        "glslang-tools.", used_by)
    try:
        return _ok("glslang", _first_line([exe, "--version"]), used_by)
    except (OSError, subprocess.SubprocessError) as exc:
        return _missing("glslang", f"{exe} --version failed: {exc}", used_by)


def _host_cc() -> dict[str, Any]:
    used_by = "cpu (C11 + OpenMP or threads)"
    try:
        found = hostcc.find_toolchain()
    except HurrayGPUError as exc:
        return _missing("host C compiler", str(exc), used_by)
    if found is None or not found.command:
        what = found.describe() if found else f"none found (looked for {hostcc.SEARCHED})"
        return _missing("host C compiler", f"{what}. Fix: {hostcc.INSTALL_FIX}", used_by)
    return _ok("host C compiler", found.describe(), used_by)


PROBES: tuple[Callable[[], dict[str, Any]], ...] = (_nvrtc, _hiprtc, _opencl, _glslang, _host_cc)


def probe_toolchains() -> list[dict[str, Any]]:
    """Probe every kernel toolchain.

    Returns:
        One dict per toolchain: ``name``, ``available``, ``used_by`` and ``version`` (when
        available) or ``reason`` (when not, with a ``Fix:`` hint).
    """
    return [probe() for probe in PROBES]


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
    info["kernels"], why = dev.kernel_support()  # all, cached (cannot compile) or none
    if why:
        info["kernels_reason"] = one_line(why)
    pool = dev.allocator
    info["pool"] = {"limit_bytes": pool.pool_limit, "idle_budget_bytes": pool.pool_idle_budget,
                    "idle_seconds": pool.pool_idle_seconds, "pooled_bytes": pool.pooled_bytes}
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


def render(inv: dict[str, Any]) -> list[Any]:
    """The inventory as tables and text lines: the backends, their buffer pools, the default
    device, the toolchains (rich renderables, see :func:`~hurray_gpu.cli.common.show`)."""
    rows = []
    for b in inv["backends"]:
        if b["devices"]:
            for d in b["devices"]:
                note = " (emulated on the CPU)" if d["emulated"] else ""
                usable = {"all": "yes", "cached": "cached kernels only"}.get(d["kernels"],
                                                                            "memory only")
                why = f"; {d['kernels_reason']}" if d.get("kernels_reason") else ""
                rows.append([d["spec"], b["tag"], usable, ", ".join(d["memory_classes"]),
                             d["name"] + note + why])
        else:
            rows.append([b["backend"], b["tag"], "no", "-", b.get("reason", "")])
    out: list[Any] = [table(["device", "tag", "usable", "memory classes", "details"], rows,
                            title="Backends")]
    pools = [[d["spec"], *(_mib(p[k]) for k in ("limit_bytes", "idle_budget_bytes")),
              f"{p['idle_seconds']:g}", _mib(p["pooled_bytes"])]
             for b in inv["backends"] for d in b["devices"] for p in [d["pool"]]]
    out += ["", table(["device", "limit", "idle budget", "idle seconds", "pooled now"], pools,
                      title="Buffer pools (how to size them: docs/reliability.md)"),
            "Pooled bytes over the idle budget left unused for the idle seconds are freed; "
            "set both with HURRAY_GPU_POOL_IDLE_BYTES and HURRAY_GPU_POOL_IDLE_SECONDS."]
    out += ["", f"reference: {inv['reference']}"]
    default = inv["default"]
    out.append(f"default: {default['spec'] or 'none (' + default['reason'] + ')'}")
    tc_rows = [[t["name"], "yes" if t["available"] else "no", t["used_by"],
                t.get("version") or t.get("reason", "")] for t in inv["toolchains"]]
    out += ["", table(["toolchain", "available", "used by", "version / why not"], tc_rows,
                      title="Kernel toolchains")]
    return out


def _mib(nbytes: int) -> str:
    return f"{nbytes >> 20:,} MiB" if nbytes % (1 << 20) == 0 else f"{nbytes:,} B"


def run(args: argparse.Namespace) -> int:
    """Print the inventory; always 0 (an unusable backend is information, not an error)."""
    inv = collect()
    if args.json:
        print(dump_json(inv))
    else:
        show(*render(inv))
    return 0
