"""Command line: ``python -m vyre inspect PROG.vir`` prints a decoded VIR0 blob."""

from __future__ import annotations

import argparse
import sys

from vyre.inspect import inspect_blob


def main(argv: list[str] | None = None) -> int:
    """Run the ``vyre`` command line.

    Args:
        argv: arguments (default ``sys.argv[1:]``).

    Returns:
        0 when the blob decodes, 1 when it does not, 2 on usage or I/O errors.
    """
    parser = argparse.ArgumentParser(prog="python -m vyre", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("inspect", help="print header, digest check, buffers and node tree")
    cmd.add_argument("path", help="VIR0 blob file, or - for stdin")
    cmd.add_argument(
        "--strict", action="store_true",
        help="fail on unregistered extensions instead of showing them as opaque",
    )
    args = parser.parse_args(argv)
    try:
        if args.path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.path, "rb") as handle:
                data = handle.read()
    except OSError as exc:
        print(f"error: cannot read {args.path}: {exc}", file=sys.stderr)
        return 2
    text, ok = inspect_blob(data, preserve_unknown=not args.strict)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
