"""The ``hurray-gpu`` command line: one small module per subcommand, one error policy here.

Every failure prints one ``error: ... Fix: ...`` line and exits non-zero; ``--debug`` shows the
traceback instead. Diagnostics are the ``hurray_gpu`` loggers' records, shown on stderr at the
level ``-v`` / ``--log-level`` (or ``HURRAY_GPU_DEBUG``) asks for; stdout carries only the
command's output, so ``--json`` output stays JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import logging
import os
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from hurray_gpu import __version__, config
from hurray_gpu.cli.common import one_line
from hurray_gpu.errors import HurrayGPUError

__all__ = ["build_parser", "configure_logging", "main"]

# Subcommand modules under hurray_gpu.cli: each has ``add_parser(subparsers)``, and the parser
# it adds sets ``run(args) -> int``. Listed in help order.
COMMANDS = ("devices", "inspect", "materialize", "convert", "export", "demo", "bench", "cache_cmd",
            "net_cmd", "vyre_cmd")
LOG_LEVELS = ("debug", "info", "warning", "error")
# Exit status of a command whose reader went away (`| head`): 128 + SIGPIPE, as coreutils'.
BROKEN_PIPE_STATUS = 141


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
    parser.add_argument("--version", action="version", version=f"hurray-gpu {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback when a command fails")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"hurray_gpu.cli.{name}").add_parser(sub)
    _add_logging_options(parser, "")
    return parser


def _add_logging_options(parser: argparse.ArgumentParser, prefix: str) -> None:
    """``-v`` and ``--log-level`` on ``parser`` and every subcommand's parser below it, so that
    they work before or after the subcommand. A subcommand's copies store into ``sub_*``
    (absent unless given), since argparse copies a subparser's values over the parent's."""
    unset = argparse.SUPPRESS if prefix else None
    parser.add_argument("-v", "--verbose", action="count", dest=f"{prefix}verbose",
                        default=unset or 0, help="show diagnostics on stderr: -v info, -vv debug")
    parser.add_argument("--log-level", choices=LOG_LEVELS, type=str.lower, default=unset,
                        dest=f"{prefix}log_level",
                        help="the diagnostics shown on stderr (default: warning; debug when "
                             "HURRAY_GPU_DEBUG=2, info when it is 1)")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in {id(p): p for p in action.choices.values()}.values():
                _add_logging_options(child, "sub_")


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


_handler: logging.Handler | None = None


def configure_logging(verbose: int = 0, level: str | None = None) -> None:
    """Show the ``hurray_gpu`` loggers' records on stderr (replacing a previous call's handler).

    Args:
        verbose: the ``-v`` count (1: info, 2 or more: debug).
        level: a name from LOG_LEVELS; wins over ``verbose``. Without either, the level
            follows ``HURRAY_GPU_DEBUG`` (1: info, 2: debug), else warning.
    """
    global _handler
    debug = config.debug_level()
    if level is None:
        level = ("debug" if verbose >= 2 or debug >= 2 else
                 "info" if verbose == 1 or debug == 1 else "warning")
    logger = logging.getLogger("hurray_gpu")
    if _handler is not None:
        logger.removeHandler(_handler)
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger.addHandler(_handler)
    logger.setLevel(level.upper())


def _broken_pipe() -> int:
    # Point stdout at /dev/null: the interpreter's last flush would fail on the pipe again.
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return BROKEN_PIPE_STATUS


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        0 on success, 1 when the command failed (bad input, unavailable device, failed check),
        2 on a usage error, 141 when the reader of stdout went away (quietly, as coreutils).
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(args_list)
    except SystemExit as exc:  # argparse already printed usage, help or the version
        return int(exc.code or 0)
    configure_logging(args.verbose + getattr(args, "sub_verbose", 0),
                      getattr(args, "sub_log_level", None) or args.log_level)
    try:
        code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        return _broken_pipe()
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
