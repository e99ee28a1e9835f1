"""``hurray-gpu inspect PATH``: validate a .hrry file, raw stream or descriptor and print it."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hurray_gpu.io import report

__all__ = ["add_parser", "inspect_command"]


def add_parser(sub: Any) -> None:
    """Register ``inspect``."""
    p = sub.add_parser(
        "inspect", help="validate and print the tensors of a .hrry file, stream or descriptor",
        description="Print tensors (dtype, shape, layout, quantization, buffers with device_tag, "
                    "sync_mode, memory_class and sizes, statistics, composite members) and the "
                    "file's KV metadata; report the first problem exactly (exit code 1).")
    p.add_argument("path", help="a .hrry file, a raw tensor stream or one descriptor")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--kind", choices=("auto", "file", "stream", "descriptor"), default="auto",
                   help="how to read PATH (default: detect from its first bytes)")
    p.set_defaults(run=run)


def inspect_command(path: str, kind: str = "auto", as_json: bool = False) -> str:
    """Validate ``path`` and return its report as text (or JSON).

    Args:
        path: the input file.
        kind: ``"auto"``, ``"file"``, ``"stream"`` or ``"descriptor"``.
        as_json: return JSON instead of the text tree.

    Returns:
        The report.

    Raises:
        HurrayFormatError: the first problem found in the input.
        OSError: the file cannot be read.
    """
    if kind == "auto":
        kind = report.detect_kind(path)
    builders = {"file": report.inspect_file, "stream": report.inspect_stream,
                "descriptor": report.inspect_descriptor}
    result = builders[kind](path)
    return json.dumps(result, indent=2) if as_json else report.render(result)


def run(args: argparse.Namespace) -> int:
    """Print the report of ``args.path``."""
    print(inspect_command(args.path, args.kind, args.json))
    return 0
