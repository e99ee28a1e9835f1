"""``python -m hurray_gpu.kernels``: list kernels, render one, or compile-check a dialect."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hurray_gpu.dialect import DIALECTS, render
from hurray_gpu.errors import BackendUnavailableError, UnsupportedOpError
from hurray_gpu.kernels import get_kernel, kernel_names
from hurray_gpu.kernels.check import CHECKERS, check_dialect


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hurray_gpu.kernels")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list registered kernels")
    show = sub.add_parser("render", help="print a kernel rendered in a dialect")
    show.add_argument("kernel")
    show.add_argument("--dialect", default="cuda", choices=sorted(DIALECTS))
    check = sub.add_parser("check", help="compile every kernel's rendering offline")
    check.add_argument("--dialect", required=True, choices=sorted(CHECKERS))
    check.add_argument("--arch", default="", help="comma-separated, e.g. sm_80,sm_90 (default: "
                       "each dialect's DEFAULT_ARCHS; one the toolchain cannot target: exit 2)")
    check.add_argument("--kernel", action="append", default=[],
                       help="only this kernel (vyre.<program> for a vyre program's kernels)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (1: a kernel failed, 2: no toolchain, an
    arch it cannot target, or an unknown kernel)."""
    args = _parser().parse_args(argv)
    if args.command == "list":
        for name in kernel_names():
            print(f"{name:16s} {get_kernel(name).doc}")
        return 0
    if args.command == "render":
        print(render(get_kernel(args.kernel), args.dialect), end="")
        return 0
    archs = [a for a in args.arch.split(",") if a]
    try:
        results = check_dialect(args.dialect, archs, args.kernel)
    except (BackendUnavailableError, UnsupportedOpError) as exc:
        print(f"error: cannot check {args.dialect}: {exc}", file=sys.stderr)
        return 2
    for r in results:
        first = r.detail.splitlines()[0] if r.detail else ""
        print(f"{r.status:8s} {r.kernel:16s} {r.dialect} {r.arch}  {first}")
        if r.status == "failed":
            print(r.detail, file=sys.stderr)
    return 1 if any(r.status == "failed" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
