"""``hurray-gpu convert SRC OUT.hrry``: convert a GGUF, safetensors, PyTorch or NumPy checkpoint
to a ``.hrry`` file, one tensor at a time (docs/importing.md)."""

from __future__ import annotations

import argparse
from typing import Any

from hurray_gpu.cli.common import check_overwrite, dump_json, render_text, table
from hurray_gpu.io.convert import FORMATS, ConvertResult, convert

__all__ = ["add_parser", "report"]


def add_parser(sub: Any) -> None:
    """Register ``convert``."""
    p = sub.add_parser("convert", help="convert a GGUF/safetensors/PyTorch/.npz checkpoint to "
                       ".hrry", description=__doc__ + " Types that have no exact Hurray form "
                       "are refused before anything is written.")
    p.add_argument("src", help="the source checkpoint (format detected from its first bytes)")
    p.add_argument("out", help="the .hrry file to write (atomically)")
    p.add_argument("--device", default=None, help="also decode every tensor on this device and "
                   "compare it bit for bit with the source's own decoding")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="the source format (default: detected)")
    p.add_argument("--force", action="store_true", help="replace OUT when it exists")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="draw a progress bar (default: on a terminal, for large sources)")
    p.add_argument("--json", action="store_true", help="print what was done as JSON")
    p.set_defaults(run=run)


def report(result: ConvertResult, src: str, out: str, width: int | None = None) -> str:
    """The text summary of a conversion, wrapped to ``width`` (default: the console's, see
    :func:`~hurray_gpu.cli.common.console`)."""
    mb = result.source_bytes / 1e6
    rate = mb / result.seconds if result.seconds > 0 else 0.0
    head = (f"{src} ({result.source_format}) -> {out}: {result.tensors} tensors, {mb:,.1f} MB "
            f"in {result.seconds:.2f} s ({rate:,.0f} MB/s)")
    if result.checked_on:
        head += f", every tensor checked on {result.checked_on}"
    rows = [(kind, count, result.forms.get(kind, "")) for kind, count in result.kinds.items()]
    return render_text(head, table(("source type", "tensors", "Hurray form"), rows), width=width)


def run(args: argparse.Namespace) -> int:
    """Convert ``args.src`` to ``args.out`` and print the summary."""
    check_overwrite(args.out, args.force)
    result = convert(args.src, args.out, device=args.device, progress=args.progress,
                     format=args.format)
    if args.json:
        print(dump_json({"src": args.src, "out": args.out, **vars(result)}))
    else:
        print(report(result, args.src, args.out), end="")
    return 0
