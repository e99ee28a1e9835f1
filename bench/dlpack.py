"""DLPack round-trip overhead: ``torch.from_dlpack(hurray_tensor)`` vs torch's own round trip.

Both loops run interleaved in the same process (median of several warm runs each), so the
machine's load hits both alike; the per-tensor overhead is ours minus torch's. ``rows`` holds
each of our paths against its peer: median and [min, max] over the runs, and the speed ratio
(the peer's time over ours) run by run.

``--against TREE`` compares two checkouts instead: rounds alternate a fresh process on this
tree and on TREE (each importing hurray_gpu from its own root, same script), and the
min/median/max over rounds of each process's medians are printed, with the difference.

Usage: python bench/dlpack.py [--runs 9] [--loops 20000] [--json out.json]
       python bench/dlpack.py --against /path/to/other/checkout [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def _per_call_us(fn: Callable[[], object], loops: int) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops * 1e6


# Each of our paths and the peer path it is compared with.
PEERS = {"hurray -> torch": "torch -> torch", "hurray -> numpy": "numpy -> numpy"}


def measure(runs: int, loops: int) -> dict[str, Any]:
    """Median microseconds per round trip for each path, and ours minus the peer's; ``rows``:
    ours against the peer as median and [min, max] over the runs, the speed ratio per run.
    Without torch installed only the NumPy paths run (``skipped`` says why)."""
    import hurray_gpu as hg

    arr = np.arange(4096, dtype=np.float32).reshape(64, 64)
    ours = hg.from_numpy(arr)
    paths: dict[str, Callable[[], object]] = {
        "hurray -> numpy": lambda: np.from_dlpack(ours),
        "numpy -> numpy": lambda: np.from_dlpack(arr),
    }
    skipped = []
    try:
        import torch
    except ImportError as exc:
        skipped.append(f"torch paths: {exc}")
    else:
        peer = torch.from_numpy(arr.copy())
        paths["hurray -> torch"] = lambda: torch.from_dlpack(ours)
        paths["torch -> torch"] = lambda: torch.from_dlpack(peer)
        # zero-copy: torch and NumPy see the same memory (works on checkouts of any age, for
        # --against)
        assert torch.from_dlpack(ours).data_ptr() == np.from_dlpack(ours).ctypes.data
    for fn in paths.values():  # warm: templates cached, code paths hot
        _per_call_us(fn, 2000)
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(runs):
        for name, fn in paths.items():
            samples[name].append(_per_call_us(fn, loops))
    out: dict[str, Any] = {name: statistics.median(vals) for name, vals in samples.items()}
    out["rows"] = []
    for path, peer_path in PEERS.items():
        if path not in samples:
            continue
        out[f"overhead vs {peer_path.split()[0]}"] = out[path] - out[peer_path]
        mine, theirs = samples[path], samples[peer_path]
        speed = [t / o for o, t in zip(mine, theirs, strict=True)]  # above 1: ours is faster
        out["rows"].append({
            "path": path, "peer": peer_path, "us": out[path], "us_range": [min(mine), max(mine)],
            "peer_us": out[peer_path], "peer_us_range": [min(theirs), max(theirs)],
            "vs_peer": statistics.median(speed), "vs_peer_range": [min(speed), max(speed)]})
    if skipped:
        out["skipped"] = skipped
    return out


def compare(other: str, rounds: int, runs: int, loops: int) -> dict[str, dict[str, float]]:
    """Alternate fresh processes on this tree and on ``other``; per tree and path, the
    min/median/max over rounds of each process's medians (microseconds)."""
    trees = {"this": str(Path(__file__).resolve().parents[1]), "other": str(Path(other))}
    samples: dict[str, dict[str, list[float]]] = {t: {} for t in trees}
    for _ in range(rounds):
        for tree, root in trees.items():
            env = {**os.environ, "PYTHONPATH": root}
            done = subprocess.run([sys.executable, __file__, "--runs", str(runs), "--loops",
                                   str(loops), "--json", "/dev/stdout", "--quiet"], env=env,
                                  capture_output=True, text=True, check=True, timeout=600)
            for name, value in json.loads(done.stdout).items():
                if isinstance(value, float):  # the medians (not the rows)
                    samples[tree].setdefault(name, []).append(value)
    return {f"{tree} {name}": {"min": min(v), "median": statistics.median(v), "max": max(v)}
            for tree, paths in samples.items() for name, v in paths.items()}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print (optionally save) the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--loops", type=int, default=20000)
    parser.add_argument("--json", default=None, help="write the results to this file")
    parser.add_argument("--quiet", action="store_true", help="print nothing but --json")
    parser.add_argument("--against", default=None, help="another checkout to compare with")
    parser.add_argument("--rounds", type=int, default=5, help="alternations for --against")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.loops < 1 or args.rounds < 1:
        parser.error("--runs, --loops and --rounds must be positive")
    if args.against:
        stats = compare(args.against, args.rounds, args.runs, args.loops)
        for name, s in stats.items():
            print(f"{name:>26}: min {s['min']:6.2f}  median {s['median']:6.2f}  "
                  f"max {s['max']:6.2f} us")
        for path in ("hurray -> torch", "hurray -> numpy"):
            diff = stats[f"this {path}"]["median"] - stats[f"other {path}"]["median"]
            print(f"{path}: this - other = {diff:+.2f} us (medians over {args.rounds} rounds)")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump(stats, handle, indent=2)
        return 0
    results = measure(args.runs, args.loops)
    for name, value in results.items():
        if not args.quiet and isinstance(value, float):
            print(f"{name:>20}: {value:7.2f} us")
    for line in results.get("skipped", []):
        print(f"skipped: {line}", file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({k: round(v, 3) if isinstance(v, float) else v
                       for k, v in results.items()}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
