"""``hurray-gpu inspect PATH``: validate a .hrry file, raw stream or descriptor and print it.

The text form names every coded field (scale types, composition rules, member and KV roles,
computed statistics); ``--json`` keeps the codes as the descriptor stores them.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.tree import Tree

from hurray_gpu.cli.common import render_text, show, table
from hurray_gpu.format.descriptor.layouts import layout_name
from hurray_gpu.format.dtypes import by_tag
from hurray_gpu.io import report

__all__ = ["add_parser", "inspect_command", "render"]

_RULES = {1: "partition", 2: "overlay", 3: "group"}
_COMBINE = {0: "none", 1: "replace", 2: "add"}
_KV_ROLES = {0: "key", 1: "value", 2: "fused"}
_MEMBER_ROLES = {0: "correction", 1: "base"}
_INDEX_TYPES = {0: "u32", 1: "u64"}
# Statistics computed_mask bits, in bit order, and the fields each one makes meaningful.
_STAT_BITS = (("nnz", ("nnz",)), ("sparsity", ("sparsity_ratio",)),
              ("value range", ("value_min", "value_max", "value_abs_max")),
              ("value stats", ("value_mean", "value_stddev")), ("N:M sparsity", ("nm_n", "nm_m")),
              ("NaN/Inf", ("has_nan", "has_inf")))
NO_LAYER = 0xFFFFFFFF


def add_parser(sub: Any) -> None:
    """Register ``inspect``."""
    p = sub.add_parser(
        "inspect", help="validate and print the tensors of a .hrry file, stream or descriptor",
        description="Print tensors (dtype, shape, layout, quantization, buffers with device_tag, "
                    "sync_mode, memory_class and sizes, statistics, composite members) and the "
                    "file's KV metadata; report the first problem exactly (exit code 1).")
    p.add_argument("path", help="a .hrry file, a raw tensor stream or one descriptor")
    p.add_argument("--json", action="store_true",
                   help="print the report as JSON (coded fields as the numbers stored)")
    p.add_argument("--kind", choices=("auto", "file", "stream", "descriptor"), default="auto",
                   help="how to read PATH (default: detect from its first bytes)")
    p.set_defaults(run=run)


def _value(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def _fields(d: dict[str, Any]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {_value(v)}" for k, v in d.items())


def _type_name(tag: int) -> str:
    try:
        return by_tag(tag).name
    except Exception:  # noqa: BLE001 - an unknown tag prints as its number
        return f"type 0x{tag:02X}"


def named_layout(layout: dict[str, Any]) -> dict[str, Any]:
    """A report's layout fields with their codes replaced by names (name and tag dropped, and
    the tiled layout's absent strides and nesting)."""
    out = {k: v for k, v in layout.items()
           if k not in ("name", "tag") and v not in ([], None)}
    names = {"composition_rule": _RULES, "combine_op": _COMBINE, "kv_role": _KV_ROLES,
             "block_table_index_type": _INDEX_TYPES}
    for key, table_ in names.items():
        if key in out:
            out[key] = table_.get(out[key], f"private 0x{out[key]:02X}")
    for key in ("outer_layout", "inner_layout"):
        if key in out:
            out[key] = layout_name(out[key])
    if "is_sorted" in out:
        out["is_sorted"] = "yes" if out["is_sorted"] else "no"
    if out.get("layer_index") == NO_LAYER:
        out["layer_index"] = "none"
    if isinstance(out.get("inner"), dict):
        out["inner"] = f"({_fields(named_layout(out['inner']))})"
    return out


def named_quantization(q: dict[str, Any]) -> str:
    """``scheme: field value, ...`` with the scale type named and symmetry spelled out."""
    fields = {k: v for k, v in q.items() if k not in ("scheme", "trailing")}
    if "scale_type_tag" in fields:
        fields["scale_type"] = _type_name(fields.pop("scale_type_tag"))
    if "zero_point_buffer_index" in fields and fields["zero_point_buffer_index"] is None:
        del fields["zero_point_buffer_index"]
        fields["symmetric"] = "yes"
    text = f"{q['scheme']}: {_fields(fields)}"
    return text + (f", {len(q['trailing']) // 2} trailing bytes" if q.get("trailing") else "")


def named_statistics(s: dict[str, Any]) -> str:
    """Only the statistics whose computed_mask bit is set, by name."""
    mask, shown = s.get("computed_mask", 0), {}
    for bit, (_, keys) in enumerate(_STAT_BITS):
        if mask >> bit & 1:
            shown.update({k: s[k] for k in keys if k in s})
    return _fields(shown) if shown else "none computed"


def _details(t: dict[str, Any]) -> list[str]:
    lines = []
    layout = named_layout(t["layout"])
    if layout:
        lines.append(f"layout: {_fields(layout)}")
    if t.get("quantization"):
        lines.append(f"quantization: {named_quantization(t['quantization'])}")
    if "shard" in t:
        lines.append(f"shard: {_fields(t['shard'])}")
    if "composite_member" in t:
        role = t["composite_member"]["member_role"]
        lines.append(f"composite member: {_MEMBER_ROLES.get(role, f'role 0x{role:02X}')}")
    if "statistics" in t:
        lines.append(f"statistics: {named_statistics(t['statistics'])}")
    if "extension_type" in t:
        lines.append(f"extension type: {_fields(t['extension_type'])}")
    return lines + [f"buffer {b['index']} ({b['role']}): {b['byte_size']} B, align "
                    f"{b['alignment']}, {b['device_tag']}, {b['sync_mode']}, {b['memory_class']}"
                    for b in t["buffers"]]


def _headline(t: dict[str, Any]) -> str:
    shape = "[" + ", ".join("?" if d is None else str(d) for d in t["shape"]) + "]"
    layout = t["layout"]
    text = f"{t['name']}: {t['dtype']} {shape} {layout['name']}"
    if layout["name"] == "composite":
        rule = _RULES.get(layout["composition_rule"], "private")
        text += f" ({rule}, {layout['member_count']} members)"
    if t["quantization"]:
        text += f" quantized={t['quantization']['scheme']}"
    if "file" in t:
        e = t["file"]
        text += f" @{e['descriptor_offset']} data@{e['data_offset']}+{e['data_length']}"
    return text


def _tensor_tree(t: dict[str, Any], parent: Tree) -> None:
    node = parent.add(_headline(t))
    for line in _details(t):
        node.add(line)
    for m in t.get("members", []):
        _tensor_tree(m, node)


def render(result: dict[str, Any]) -> list[Any]:
    """The report as rich renderables: the container, the KV metadata table, the tensor tree."""
    out: list[Any] = [f"{result['path']}: {result['kind']}, {result['size']} bytes"]
    if result["kind"] == "hrry_file":
        idx = result["index"]
        out.append(f"container {result['container_version']}, flags "
                   f"0x{result['file_flags']:02X}, alignment {result['alignment']}, index "
                   f"{idx['entries']} entries ({idx['length']} B, CRC-32C 0x{idx['crc32c']:08X})")
        if result["metadata"]:
            out.append(table(["metadata key", "type", "value"],
                             [[k, item["type"], repr(item["value"])]
                              for k, item in result["metadata"].items()]))
    tree = Tree(f"tensors ({len(result['tensors'])})")
    for t in result["tensors"]:
        _tensor_tree(t, tree)
    return [*out, tree]


def inspect_command(path: str, kind: str = "auto", as_json: bool = False,
                    width: int | None = None) -> str:
    """Validate ``path`` and return its report as text (or JSON).

    Args:
        path: the input file.
        kind: ``"auto"``, ``"file"``, ``"stream"`` or ``"descriptor"``.
        as_json: return JSON (coded fields as stored) instead of the text tree.
        width: the text's width (default: the console's).

    Returns:
        The report.

    Raises:
        HurrayFormatError: the first problem found in the input.
        OSError: the file cannot be read.
    """
    result = _build(path, kind)
    return json.dumps(result, indent=2) if as_json else render_text(*render(result), width=width)


def _build(path: str, kind: str) -> dict[str, Any]:
    if kind == "auto":
        kind = report.detect_kind(path)
    builders = {"file": report.inspect_file, "stream": report.inspect_stream,
                "descriptor": report.inspect_descriptor}
    return builders[kind](path)


def run(args: argparse.Namespace) -> int:
    """Print the report of ``args.path``."""
    result = _build(args.path, args.kind)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        show(*render(result))
    return 0
