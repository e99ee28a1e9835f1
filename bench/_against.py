"""Before/after: this checkout against another on the public API, in alternating processes.

Answers "did a change make anything slower?" like for like: the same script, the same input
file and the same calls (``hg.dequantize``, ``hg.materialize``, ``PagedKVCache`` decode steps)
run in a fresh process that imports hurray_gpu from this tree, then from TREE, round after
round, so a busy moment of the machine hits both alike. Each process warms every case, then
takes the best of ``--reps`` timed calls per case (the host clock; each call allocates its
output as the API does). The result per case is the ratio other/this of those times per round
(above 1: this tree is faster), as min/median/max over rounds.

The inputs (quantized, tiled, Morton and column-major tensors) are written once by this tree
with ``hg.save`` to one ``.hrry`` file that both trees ``hg.load``, so both decode the same bytes.

Usage: python bench/_against.py --against /path/to/other/checkout [--rounds 7] [--reps 5]
       [--elements 4194304] [--side 2048] [--json out.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# name -> (hg.quantize keyword arguments, output dtype)
DEQUANT: dict[str, tuple[dict[str, Any], str]] = {
    "nf4 -> f32": ({"scheme": "nf4", "block_size": 64}, "float32"),
    "nf4 -> bf16": ({"scheme": "nf4", "block_size": 64}, "bfloat16"),
    "int4 block -> f32": ({"scheme": "per_block", "dtype": "int4", "block_size": 32}, "float32"),
    "int8 block -> f32": ({"scheme": "per_block", "dtype": "int8", "block_size": 32}, "float32"),
    "mxfp8 -> bf16": ({"scheme": "mxfp", "dtype": "float8_e4m3", "block_size": 32}, "bfloat16"),
    "mxfp4 -> bf16": ({"scheme": "mxfp", "dtype": "float4_e2m1", "block_size": 32}, "bfloat16"),
    "mxfp6 -> bf16": ({"scheme": "mxfp", "dtype": "float6_e2m3", "block_size": 32}, "bfloat16"),
}
LAYOUTS = ("tiled 32x32", "col-major", "morton")


def prepare(path: Path, elements: int, side: int) -> None:
    """Write every case's input tensor to ``path`` (this tree's quantize and relayout)."""
    import hurray_gpu as hg
    from hurray_gpu.format.descriptor.layouts import ColMajor, Morton, Tiled

    rng = np.random.default_rng(20261202)
    values = rng.standard_normal((elements // 1024, 1024), dtype=np.float32)
    tensors: dict[str, Any] = {name: hg.quantize(values, axis=1, **kw)
                               for name, (kw, _) in DEQUANT.items()}
    bits = max(side - 1, 1).bit_length()
    square = hg.from_numpy(rng.standard_normal((side, side), dtype=np.float32))
    for name, layout in zip(LAYOUTS, (Tiled((32, 32)), ColMajor(),
                                               Morton((bits, bits))), strict=True):
        tensors[name] = hg.relayout(square, layout)
    hg.save(path, tensors)


def _best_us(fn: Callable[[], object], reps: int) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def measure(path: str, reps: int) -> dict[str, float]:
    """Best-of-``reps`` microseconds per case, in this process's hurray_gpu."""
    import hurray_gpu as hg

    tensors = hg.load(path)
    calls: dict[str, Callable[[], object]] = {}
    for name, (_, out) in DEQUANT.items():
        calls[name] = lambda t=tensors[name], out=out: hg.dequantize(t, out, "cpu")
    for name in LAYOUTS:
        calls[f"materialize {name}"] = lambda t=tensors[name]: hg.materialize(t)
    out = {name: _best_us(fn, reps) for name, fn in calls.items()}
    # A decode step is short (milliseconds): more repetitions for as stable a best.
    out["kv decode step (64 seqs)"] = _best_us(_kv_step(hg), 10 * reps)
    return out


def _kv_step(hg: Any) -> Callable[[], object]:
    """One decode step of 64 sequences in a 2-layer fp16 cache: append a token per sequence
    and layer, then gather layer 0 (the pattern bench/kv_cache.py times)."""
    cache = hg.PagedKVCache("cpu", 2, 8, 128, num_pages=64 * 40, page_size=16)
    seqs = [cache.add_sequence() for _ in range(64)]
    row = np.ones((64, 8, 128), dtype=np.float16)
    for _ in range(64):  # every sequence starts 64 tokens long
        for layer in range(2):
            cache.append_decode(seqs, layer, row, row)
    steps = [0]

    def step() -> None:
        if steps[0] == 256:  # keep the cache bounded: start the sequences over
            for s in seqs:
                cache.free(s)
            seqs[:] = [cache.add_sequence() for _ in range(64)]
            steps[0] = 0
        for layer in range(2):
            cache.append_decode(seqs, layer, row, row)
        cache.gather(seqs, 0)
        steps[0] += 1
    return step


def compare(other: str, rounds: int, reps: int, path: Path) -> dict[str, dict[str, float]]:
    """Alternate fresh processes on this tree and ``other``; per case the min/median/max over
    rounds of other's time over this tree's."""
    trees = {"this": str(Path(__file__).resolve().parents[1]), "other": str(Path(other))}
    ratios: dict[str, list[float]] = {}
    for _ in range(rounds):
        got: dict[str, dict[str, float]] = {}
        for tree, root in trees.items():
            env = {**os.environ, "PYTHONPATH": root}
            done = subprocess.run([sys.executable, __file__, "--measure", str(path), "--reps",
                                   str(reps)], env=env, capture_output=True, text=True,
                                  check=True, timeout=1200)
            got[tree] = json.loads(done.stdout)
        for name, ours in got["this"].items():
            ratios.setdefault(name, []).append(got["other"][name] / ours)
    return {name: {"min": min(v), "median": statistics.median(v), "max": max(v)}
            for name, v in ratios.items()}


def main(argv: list[str] | None = None) -> int:
    """Prepare the inputs, run the rounds and print other/this per case."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="the other checkout")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--elements", type=int, default=1 << 22)
    parser.add_argument("--side", type=int, default=2048)
    parser.add_argument("--json", default=None, help="write the ratios to this file")
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # a child process
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.reps)))
        return 0
    if not args.against or args.rounds < 1 or args.reps < 1 or args.elements < 1024:
        parser.error("--against TREE is required; --rounds, --reps positive; --elements >= 1024")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inputs.hrry"
        prepare(path, args.elements, args.side)
        stats = compare(args.against, args.rounds, args.reps, path)
    print(f"other / this over {args.rounds} rounds (above 1: this tree is faster)")
    for name, s in stats.items():
        print(f"{name:>28}: min {s['min']:5.2f}  median {s['median']:5.2f}  max {s['max']:5.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(stats, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
