"""``hurray-gpu export IN.hrry OUT.{safetensors,gguf}``: write a ``.hrry`` file's tensors and
metadata back to safetensors or GGUF, one tensor at a time (docs/importing.md, Export)."""

from __future__ import annotations

import argparse
from typing import Any

from hurray_gpu.cli.common import check_overwrite, dump_json, show, table
from hurray_gpu.io.convert.export import export

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    """Register ``export``."""
    p = sub.add_parser("export", help="export a .hrry file to safetensors or GGUF",
                       description=__doc__ + " Tensors the target cannot represent are "
                       "refused before anything is written, unless --dequantize is given.")
    p.add_argument("src", help="the .hrry file")
    p.add_argument("out", help="the .safetensors or .gguf file to write (atomically)")
    p.add_argument("--format", choices=("safetensors", "gguf"), default=None,
                   help="the target format (default: from OUT's suffix)")
    p.add_argument("--dequantize", choices=("float32", "bfloat16", "float16"), default=None,
                   help="write tensors the target cannot carry dequantized to this type")
    p.add_argument("--force", action="store_true", help="replace OUT when it exists")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="draw a progress bar (default: on a terminal, for large files)")
    p.add_argument("--json", action="store_true", help="print what was done as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Export ``args.src`` to ``args.out`` and print the summary."""
    check_overwrite(args.out, args.force)
    result = export(args.src, args.out, format=args.format, dequantize=args.dequantize,
                    progress=args.progress)
    if args.json:
        print(dump_json({"src": args.src, "out": args.out, **vars(result)}))
        return 0
    show(f"{args.src} -> {args.out} ({result.format}): {result.tensors} tensors, "
         f"{result.output_bytes / 1e6:,.1f} MB in {result.seconds:.2f} s"
         + (f", {len(result.dequantized)} dequantized" if result.dequantized else ""),
         table(("type", "tensors"), sorted(result.kinds.items())))
    return 0
