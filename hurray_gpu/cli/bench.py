"""``hurray-gpu bench [--quick] [--out DIR]``: run every bench/ suite, collect their JSON, write
report.md (ours vs. peer or limit, with ratios) and PNG plots, and print the summary."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hurray_gpu.cli.bench_report import load_results, write_report
from hurray_gpu.errors import HurrayGPUError

__all__ = ["QUICK_ARGS", "add_parser", "find_bench_dir", "run_suites"]

# Suite arguments for --quick (small sizes, few runs) and for the full run; a suite not listed
# gets ``--quick`` when its source mentions that flag, and no extra arguments otherwise.
QUICK_ARGS = {
    "transfer": ["--size-mib", "4", "--runs", "3"],
    "codec": ["--runs", "2"],
    "dequant": ["--elements", str(1 << 20), "--runs", "2"],
    "kv_cache": ["--runs", "2", "--seqs", "16", "--max-len", "64", "--layers", "1"],
    "layout": ["--side", "256", "--runs", "2"],
    "vyre_exec": ["--quick"],
}
FULL_ARGS: dict[str, list[str]] = {}
# One suite may not run longer than this (seconds).
SUITE_TIMEOUT_S = 900


def add_parser(sub: Any) -> None:
    """Register ``bench``."""
    p = sub.add_parser("bench", help="run the benchmarks; write report.md and PNG plots",
                       description=__doc__)
    p.add_argument("--quick", action="store_true", help="small sizes (well under a minute)")
    p.add_argument("--out", default="bench/out/report", help="output directory")
    p.add_argument("--suite", action="append", default=[],
                   help="run only these suites (repeatable; default: all)")
    p.set_defaults(run=run)


def find_bench_dir() -> Path:
    """The repository's bench/ directory (benchmarks ship with the source tree, not the wheel).

    Raises:
        HurrayGPUError: no bench/ next to the hurray_gpu package.
    """
    root = Path(__file__).resolve().parents[2]
    bench = root / "bench"
    if not bench.is_dir():
        raise HurrayGPUError(
            f"no bench/ directory at {bench}",
            fix="run `hurray-gpu bench` from a source checkout (pip install -e .).")
    return bench


def _suite_args(script: Path, quick: bool) -> list[str]:
    name = script.stem
    if quick:
        if name in QUICK_ARGS:
            return list(QUICK_ARGS[name])
        return ["--quick"] if "--quick" in script.read_text(encoding="utf-8") else []
    return list(FULL_ARGS.get(name, []))


def run_suites(bench: Path, out: Path, quick: bool, only: list[str]) -> list[dict[str, Any]]:
    """Run each suite as its own process, writing ``out/<suite>.json``.

    Returns:
        One record per suite: name, exit code, seconds, JSON path and the printed text.
    """
    env = dict(os.environ)
    root = str(bench.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("HURRAY_GPU_PROGRESS", "0")
    records = []
    for script in sorted(bench.glob("*.py")):
        if script.stem.startswith("_") or (only and script.stem not in only):
            continue
        json_path = out / f"{script.stem}.json"
        argv = [sys.executable, str(script), *_suite_args(script, quick), "--json", str(json_path)]
        start = time.perf_counter()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root,
                                  timeout=SUITE_TIMEOUT_S, check=False)
            code, text = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired:
            code, text = -1, f"timed out after {SUITE_TIMEOUT_S} s"
        records.append({"suite": script.stem, "returncode": code, "text": text,
                        "seconds": time.perf_counter() - start, "json": json_path})
        print(f"  {script.stem}: exit {code} in {records[-1]['seconds']:.1f} s", file=sys.stderr)
    return records


def run(args: argparse.Namespace) -> int:
    """Run the suites, write the report; 0 when every suite succeeded."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records = run_suites(find_bench_dir(), out, args.quick, args.suite)
    if not records:
        raise HurrayGPUError("no benchmark suite ran",
                             fix="check the --suite names against bench/*.py.")
    summary = write_report(out, load_results(records), quick=args.quick)
    print(summary)
    print(f"\nwrote {out / 'report.md'} and {len(list(out.glob('*.png')))} plots")
    return 0 if all(r["returncode"] == 0 for r in records) else 1
