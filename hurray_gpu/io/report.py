"""Plain-data reports of .hrry files, raw streams and single descriptors (for the CLI).

Every report is JSON-serialisable; the CLI's ``inspect`` prints one as a tree with the coded
fields named.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from hurray_gpu.format.descriptor.layouts import layout_name
from hurray_gpu.io.file_reader import open_file
from hurray_gpu.io.framing import DEFAULT_MAX_DESCRIPTOR_SIZE, descriptor_length
from hurray_gpu.io.kv import TAG_NAMES, UInt64
from hurray_gpu.io.stream import StreamReader
from hurray_gpu.parts import TensorLike

_SCHEMES = {0x01: "per_tensor_affine", 0x02: "per_channel_affine", 0x03: "per_block_affine",
            0x04: "nf4", 0x05: "mxfp"}
_DEVICES = ["cpu", "cuda", "rocm", "metal", "vulkan", "webgpu", "hexagon", "level_zero", "opencl"]
_SYNC = ["producer_synced", "event", "consumer_stream"]
_CLASSES = ["standard", "host_pinned", "unified", "peer"]


def _enum(value: int, names: list[str]) -> str:
    return names[value] if value < len(names) else f"private(0x{value:02X})"


def _plain(value: Any) -> Any:
    """Dataclasses, tuples, bytes and UInt64 -> JSON-friendly values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, UInt64):
        return int(value)
    return value


def _buffers(desc: Any) -> list[dict[str, Any]]:
    try:
        roles = [spec.role for spec in desc.buffer_specs()]
    except Exception:  # noqa: BLE001 - roles are informative only; the buffers still print
        roles = []
    out = []
    for i, h in enumerate(desc.buffers):
        out.append({"index": i, "role": roles[i] if i < len(roles) else "opaque",
                    "byte_size": h.byte_size, "alignment": h.alignment,
                    "device_tag": _enum(h.device_tag, _DEVICES),
                    "sync_mode": _enum(h.sync_mode, _SYNC),
                    "memory_class": _enum(h.memory_class, _CLASSES)})
    return out


def describe_descriptor(desc: Any) -> dict[str, Any]:
    """A plain-data summary of one TensorDescriptor."""
    layout = {"name": layout_name(desc.layout_tag), "tag": desc.layout_tag}
    layout.update(_plain(desc.layout) if dataclasses.is_dataclass(desc.layout) else {})
    quant = None
    if desc.quantization is not None:
        q = desc.quantization
        quant = {"scheme": _SCHEMES.get(q.SCHEME, f"0x{q.SCHEME:02X}"), **_plain(q)}
    report: dict[str, Any] = {
        "dtype": desc.dtype.name, "type_tag": desc.type_tag,
        "shape": list(desc.shape), "layout": layout, "byte_offset": desc.byte_offset,
        "version": f"{desc.version_major}.{desc.version_minor}",
        "quantization": quant, "buffers": _buffers(desc),
    }
    for section in ("shard", "statistics", "extension_type", "composite_member"):
        value = getattr(desc, section)
        if value is not None:
            report[section] = _plain(value)
    return report


def describe_tensor(tensor: TensorLike, name: str) -> dict[str, Any]:
    """Summary of a tensor and (recursively) its composite members."""
    report = {"name": name, **describe_descriptor(tensor.descriptor)}
    if tensor.members:
        report["members"] = [describe_tensor(m, f"{name}/{i}")
                             for i, m in enumerate(tensor.members)]
    return report


def _kv_type(value: Any) -> str:
    if isinstance(value, list):
        return "array" if not value else f"array<{_kv_type(value[0])}>"
    if isinstance(value, bool):
        return TAG_NAMES[5]
    if isinstance(value, UInt64):
        return TAG_NAMES[3]
    return {int: "i64", float: "f64", str: "string", bytes: "bytes"}[type(value)]


def inspect_file(path: str) -> dict[str, Any]:
    """Open and fully validate a .hrry file (every descriptor and buffer range)."""
    with open_file(path) as f:
        tensors = []
        for name in f.top_level_names():
            report = describe_tensor(f.read(name), name)
            _add_entries(report, f)
            tensors.append(report)
        h, t = f.header, f.trailer
        return {
            "kind": "hrry_file", "path": path, "size": f.size,
            "container_version": f"{h.version_major}.{h.version_minor}",
            "file_flags": h.file_flags, "alignment": h.alignment,
            "index": {"offset": t.index_offset, "length": t.index_length,
                      "entries": len(f.entries), "crc32c": t.index_crc32c},
            "metadata": {k: {"type": _kv_type(v), "value": _plain(v)}
                         for k, v in f.metadata.items()},
            "tensors": tensors,
        }


def _add_entries(report: dict[str, Any], f: Any) -> None:
    e = f.entry(report["name"]) if report["name"] in f else None
    if e is not None:
        report["file"] = {"descriptor_offset": e.descriptor_offset,
                          "descriptor_length": e.descriptor_length,
                          "data_offset": e.data_offset, "data_length": e.data_length}
    for member in report.get("members", []):
        _add_entries(member, f)


def inspect_stream(path: str) -> dict[str, Any]:
    """Read and validate every tensor of a raw stream."""
    tensors: list[dict[str, Any]] = []
    with StreamReader(path) as reader:
        while True:
            start = reader.position
            tensor = reader.read()
            if tensor is None:
                break
            report = describe_tensor(tensor, f"#{len(tensors)}")
            report["stream_offset"] = start
            tensors.append(report)
    return {"kind": "stream", "path": path, "size": os.path.getsize(path), "tensors": tensors}


def inspect_descriptor(path: str) -> dict[str, Any]:
    """Decode a file holding exactly one descriptor (no buffer data)."""
    from hurray_gpu.format import codec as _codec

    with open(path, "rb") as fh:
        raw = fh.read(DEFAULT_MAX_DESCRIPTOR_SIZE + 1)
    descriptor_length(raw[:10].ljust(10, b"\0"), 0, DEFAULT_MAX_DESCRIPTOR_SIZE)
    desc = _codec.decode(raw)
    return {"kind": "descriptor", "path": path, "size": len(raw),
            "tensors": [{"name": "descriptor", **describe_descriptor(desc)}]}


def detect_kind(path: str) -> str:
    """``"file"``, ``"descriptor"`` (exactly one descriptor, nothing after) or ``"stream"``."""
    with open(path, "rb") as fh:
        head = fh.read(10)
    if head[:8] == b"HRRYFILE":
        return "file"
    if len(head) == 10 and head[:4] == b"HRRY":
        declared = int.from_bytes(head[6:10], "little")
        if declared == os.path.getsize(path):
            return "descriptor"
    return "stream"
