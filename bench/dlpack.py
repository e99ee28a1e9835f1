"""DLPack round-trip overhead: ``torch.from_dlpack(hurray_tensor)`` vs torch's own round trip.

Both loops run interleaved in the same process (median of several warm runs each), so the
machine's load hits both alike; the per-tensor overhead is ours minus torch's.

Usage: python bench/dlpack.py [--runs 9] [--loops 20000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np


def _per_call_us(fn: Callable[[], object], loops: int) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops * 1e6


def measure(runs: int, loops: int) -> dict[str, float]:
    """Median microseconds per round trip for each path, and ours minus torch's."""
    import torch

    import hurray_gpu as hg

    arr = np.arange(4096, dtype=np.float32).reshape(64, 64)
    ours = hg.from_numpy(arr)
    peer = torch.from_numpy(arr.copy())
    paths: dict[str, Callable[[], object]] = {
        "hurray -> torch": lambda: torch.from_dlpack(ours),
        "torch -> torch": lambda: torch.from_dlpack(peer),
        "hurray -> numpy": lambda: np.from_dlpack(ours),
        "numpy -> numpy": lambda: np.from_dlpack(arr),
    }
    assert torch.from_dlpack(ours).data_ptr() == ours.buffers[0].ctypes.data  # zero-copy
    for fn in paths.values():  # warm: templates cached, code paths hot
        _per_call_us(fn, 2000)
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(runs):
        for name, fn in paths.items():
            samples[name].append(_per_call_us(fn, loops))
    out = {name: statistics.median(vals) for name, vals in samples.items()}
    out["overhead vs torch"] = out["hurray -> torch"] - out["torch -> torch"]
    out["overhead vs numpy"] = out["hurray -> numpy"] - out["numpy -> numpy"]
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print (optionally save) the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--loops", type=int, default=20000)
    parser.add_argument("--json", default=None, help="write the results to this file")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.loops < 1:
        parser.error("--runs and --loops must be positive")
    results = measure(args.runs, args.loops)
    for name, value in results.items():
        print(f"{name:>20}: {value:7.2f} us")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({k: round(v, 3) for k, v in results.items()}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
