"""The ``hurray-gpu`` command line: one small module per subcommand, one error policy here.

Every failure prints one ``error: ... Fix: ...`` line and exits non-zero; ``--debug`` shows the
traceback instead.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from hurray_gpu.cli.common import one_line
from hurray_gpu.errors import HurrayGPUError

__all__ = ["build_parser", "main"]

# Subcommand modules under hurray_gpu.cli: each has ``add_parser(subparsers)``, and the parser
# it adds sets ``run(args) -> int``. Listed in help order.
COMMANDS = ("devices", "inspect", "materialize", "convert", "export", "demo", "bench", "net_cmd", "vyre_cmd")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors; values such as ``-1,1,1`` are values, not options
    (so ``--grid -1,1,1`` reaches the option's own check). Subparsers inherit the class."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._negative_number_matcher = re.compile(r"^-\d[\d,.]*$")

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}. Fix: see `{self.prog} --help`.\n")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand registered."""
    parser = _Parser(
        prog="hurray-gpu",
        description="hurray_gpu: Hurray tensors on every local device (demo, inspect, bench).")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback when a command fails")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"hurray_gpu.cli.{name}").add_parser(sub)
    return parser


def _fix_for_os_error(exc: OSError) -> str:
    """The one-line report of a failed read or write, with the hint its errno calls for.

    The same errno comes from reads and writes (a missing output directory is ENOENT too), so
    hints that depend on the direction name both.
    """
    name = exc.filename if exc.filename is not None else "the path"
    hints = {
        errno.ENOENT: f"check that {name} exists (for an output, that its directory exists).",
        errno.EACCES: f"check the permissions of {name}: an input must be readable, an "
                      "output's directory writable.",
        errno.ENOSPC: f"free disk space where {name} is written, or write it elsewhere.",
        errno.EDQUOT: f"free space within your disk quota, or write {name} elsewhere.",
        errno.EROFS: f"write {name} to a writable file system.",
        errno.EISDIR: f"{name} is a directory: pass a file path.",
        errno.ENOTDIR: f"a component of {name} is not a directory: correct the path.",
    }
    hints[errno.EPERM] = hints[errno.EACCES]
    fix = hints.get(exc.errno or 0, f"check {name}: an input must exist and be readable; an "
                                    "output needs a writable directory with free space.")
    return f"error: {one_line(str(exc))} Fix: {fix}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        0 on success, 1 when the command failed (bad input, unavailable device, failed check),
        2 on a usage error.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(args_list)
    except SystemExit as exc:  # argparse already printed usage or help
        return int(exc.code or 0)
    try:
        return int(args.run(args))
    except HurrayGPUError as exc:
        if args.debug:
            raise
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
    except OSError as exc:
        if args.debug:
            raise
        print(_fix_for_os_error(exc), file=sys.stderr)
    except KeyboardInterrupt:
        print("error: interrupted. Fix: run the command again.", file=sys.stderr)
    return 1
