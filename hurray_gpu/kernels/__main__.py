"""``python -m hurray_gpu.kernels``: list kernels, render one, or compile-check a dialect."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hurray_gpu.dialect import DIALECTS, render
from hurray_gpu.errors import BackendUnavailableError, UnsupportedOpError
from hurray_gpu.kernels import get_kernel, kernel_names
from hurray_gpu.kernels.check import CHECKERS, iter_check


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
    check.add_argument("--jobs", type=int, default=1,
                       help="kernels compiled at once, on threads (default 1)")
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
    failed = False
    try:
        # Each result is printed as it is known: a run cut short still shows how far it got.
        for r in iter_check(args.dialect, archs, args.kernel, max(1, args.jobs)):
            first = r.detail.splitlines()[0] if r.detail else ""
            print(f"{r.status:8s} {r.kernel:16s} {r.dialect} {r.arch}  {first}", flush=True)
            if r.status == "failed":
                failed = True
                print(r.detail, file=sys.stderr, flush=True)
    except (BackendUnavailableError, UnsupportedOpError) as exc:
        print(f"error: cannot check {args.dialect}: {exc}", file=sys.stderr)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
