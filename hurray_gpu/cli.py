"""The ``hurray-gpu`` command line: ``inspect PATH [--json]`` and ``devices``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .errors import HurrayGPUError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hurray-gpu", description="hurray_gpu tools")
    sub = parser.add_subparsers(dest="command", required=True)
    ins = sub.add_parser(
        "inspect", help="validate and print the tensors of a .hrry file, stream or descriptor")
    ins.add_argument("path", help="a .hrry file, a raw tensor stream or one descriptor")
    ins.add_argument("--json", action="store_true", help="print the report as JSON")
    ins.add_argument("--kind", choices=("auto", "file", "stream", "descriptor"), default="auto",
                     help="how to read PATH (default: detect from its first bytes)")
    sub.add_parser("devices", help="list every backend, its devices, or why it is unavailable")
    return parser


def devices_command() -> str:
    """Every backend with its devices (or why it is unavailable), and the default device."""
    from .devices_api import default_device, describe_devices

    try:
        chosen = str(default_device())
    except HurrayGPUError as exc:
        chosen = f"none ({exc})"
    return f"{describe_devices()}\ndefault: {chosen}"


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
    from .io import report as inspect

    if kind == "auto":
        kind = inspect.detect_kind(path)
    builders = {"file": inspect.inspect_file, "stream": inspect.inspect_stream,
                "descriptor": inspect.inspect_descriptor}
    report = builders[kind](path)
    return json.dumps(report, indent=2) if as_json else inspect.render(report)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        0 on success, 1 when the input is invalid or unreadable, 2 on a usage error.
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage or help
        return int(exc.code or 0)
    try:
        if args.command == "devices":
            print(devices_command())
        else:
            print(inspect_command(args.path, args.kind, args.json))
    except (HurrayGPUError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
