"""``hurray-gpu cache info`` and ``hurray-gpu cache clear``: the disk kernel cache (location,
size limit, entries and bytes per backend) and emptying it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hurray_gpu import config
from hurray_gpu.cli.common import dump_json, show, table
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.runtime.cache import cache_info, clear_cache
from hurray_gpu.runtime.program import compile_stats

__all__ = ["add_parser", "info"]


def add_parser(sub: Any) -> None:
    """Register ``cache info`` and ``cache clear``."""
    p = sub.add_parser("cache", help="show or clear the disk kernel cache", description=__doc__
                       + " Set its location with HURRAY_GPU_CACHE_DIR and its size limit with "
                       "HURRAY_GPU_CACHE_MAX_BYTES (default 1G; least recently used kernels are "
                       "evicted beyond it).")
    csub = p.add_subparsers(dest="cache_command", required=True, metavar="SUBCOMMAND")
    i = csub.add_parser("info", help="location, size limit, entries and bytes per backend")
    i.add_argument("--json", action="store_true", help="print the summary as JSON")
    i.set_defaults(run=_run_info)
    c = csub.add_parser("clear", help="remove the cached kernels (they are compiled again)")
    c.add_argument("--backend", default=None,
                   help="clear only this backend's kernels (cpu, opencl, vulkan, cuda, rocm)")
    c.set_defaults(run=_run_clear)


def info() -> dict[str, Any]:
    """The cache summary ``cache info`` prints.

    Returns:
        ``location``, ``entries``, ``bytes``, ``backends`` (entries and bytes per backend
        folder), ``max_bytes`` (the limit), ``enabled`` (False under HURRAY_GPU_NO_CACHE=1)
        and ``this_process`` (:func:`hurray_gpu.compile_stats`, all zero in a fresh CLI).
    """
    root = config.cache_dir()
    return {**cache_info(root), "max_bytes": config.cache_max_bytes(),
            "enabled": not config.no_cache(), "this_process": compile_stats()}


def _size(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):,.1f} {unit}"
    return f"{nbytes:,} B"


def _run_info(args: argparse.Namespace) -> int:
    summary = info()
    if args.json:
        print(dump_json(summary))
        return 0
    share = summary["bytes"] / summary["max_bytes"]
    state = "" if summary["enabled"] else " (disabled: HURRAY_GPU_NO_CACHE=1)"
    rows = [[name, b["entries"], _size(b["bytes"])] for name, b in summary["backends"].items()]
    rows.append(["all", summary["entries"], _size(summary["bytes"])])
    show(f"kernel cache: {summary['location']}{state}",
         f"size limit: {_size(summary['max_bytes'])} (HURRAY_GPU_CACHE_MAX_BYTES), "
         f"{share:.1%} used",
         table(["backend", "entries", "size"], rows))
    return 0


def _run_clear(args: argparse.Namespace) -> int:
    root = config.cache_dir()
    if args.backend is not None and (Path(args.backend).name != args.backend
                                     or args.backend in ("", ".", "..")):
        raise UnsupportedOpError(f"bad --backend {args.backend!r}: not a backend name",
                                 fix="name a backend such as cpu or opencl (`hurray-gpu cache "
                                     "info` lists them).")
    target = root / args.backend if args.backend else root
    entries, nbytes = clear_cache(target)
    show(f"removed {entries} cached kernels ({_size(nbytes)}) from {target}")
    return 0
