"""Lowered vyre execution against the reference interpreter, in the same run.

A u32 matmul (one invocation per output element, a loop over k) runs on every available
compiling device and on vyre.reference; outputs are checked byte-identical, and the best
device's speed-up over the reference is reported. Also: the warm per-call overhead of
vyre.execute.run_bytes (lowering and compile cached) on a tiny program.
Usage: python bench/vyre_exec.py [--n 512] [--ref-n 512] [--runs 3] [--json bench/out/vyre.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hurray_gpu.devices_api import devices  # noqa: E402
from vyre import builder as b  # noqa: E402
from vyre import ir, reference  # noqa: E402
from vyre.execute import run_bytes  # noqa: E402
from vyre.ir import Scalar  # noqa: E402


def matmul_program(n: int) -> ir.Program:
    """C[r][c] = sum_k A[r][k] * B[k][c] (u32, wrapping); 16x16 workgroups, 2-D grid."""
    r, c, k = b.var("r"), b.var("c"), b.var("k")
    acc = b.add(b.var("acc"), b.mul(b.load("a", b.add(b.mul(r, n), k)),
                                    b.load("b", b.add(b.mul(k, n), c))))
    body = [b.let("c", b.invocation_id(0)), b.let("r", b.invocation_id(1)),
            b.if_(b.and_(b.lt(r, n), b.lt(c, n)), [
                b.let("acc", 0),
                b.loop("k", 0, n, [b.assign("acc", acc)]),
                b.store("out", b.add(b.mul(r, n), c), b.var("acc"))])]
    return b.program([b.read("a", 0, Scalar.U32, n * n), b.read("b", 1, Scalar.U32, n * n),
                      b.output("out", 2, Scalar.U32, n * n)], body, workgroup_size=(16, 16, 1))


def _best(fn: Callable[[], Any], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return min(samples)


def bench_matmul(n: int, ref_n: int, runs: int) -> dict[str, Any]:
    """Time the matmul on every device; the reference runs ref_n (scaled to n^3 work)."""
    rng = np.random.default_rng(0)
    results: dict[str, Any] = {"n": n, "ref_n": ref_n, "devices": {}}
    small = matmul_program(ref_n)
    sa, sb = (rng.integers(0, 2**32, ref_n * ref_n, dtype=np.uint64).astype(np.uint32)
              for _ in range(2))
    grid_small = (-(-ref_n // 16), -(-ref_n // 16), 1)
    start = time.perf_counter()
    want_small = reference.run_bytes(small, {"a": sa, "b": sb}, grid=grid_small,
                                     max_steps=2**40)
    ref_s = time.perf_counter() - start
    results["reference_s"] = ref_s * (n / ref_n) ** 3
    results["reference_measured_s"] = ref_s
    prog = matmul_program(n)
    a, bb = (rng.integers(0, 2**32, n * n, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    want = (a.reshape(n, n).astype(np.uint64) @ bb.reshape(n, n).astype(np.uint64)) % 2**32
    grid = (-(-n // 16), -(-n // 16), 1)
    for dev in devices():
        if dev.kind == "reference" or dev.compiler is None:
            continue
        small_got = run_bytes(small, {"a": sa, "b": sb}, grid=grid_small, device=dev)
        assert small_got == want_small, f"{dev.spec}: differs from the reference"
        got = run_bytes(prog, {"a": a, "b": bb}, grid=grid, device=dev)  # compile + warm
        assert np.array_equal(np.frombuffer(got["out"], "<u4"), want.astype(np.uint32).ravel())
        seconds = _best(lambda d=dev: run_bytes(prog, {"a": a, "b": bb}, grid=grid, device=d),
                        runs)
        results["devices"][dev.spec] = {"seconds": seconds,
                                        "speedup_vs_reference": results["reference_s"] / seconds}
    return results


def bench_overhead(runs: int) -> dict[str, float]:
    """Warm seconds per run_bytes call of a 1-invocation program, per device."""
    prog = b.program([b.read_write("o", 0, Scalar.U32)],
                     [b.store("o", 0, b.add(b.load("o", 0), 1))])
    inputs = {"o": np.zeros(1, np.uint32)}
    out = {}
    for dev in devices():
        if dev.kind == "reference" or dev.compiler is None:
            continue
        run_bytes(prog, inputs, grid=(1, 1, 1), device=dev)
        samples = []
        for _ in range(max(runs, 20)):
            start = time.perf_counter()
            run_bytes(prog, inputs, grid=(1, 1, 1), device=dev)
            samples.append(time.perf_counter() - start)
        out[dev.spec] = statistics.median(samples)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--ref-n", type=int, default=512)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result = {"matmul": bench_matmul(args.n, args.ref_n, args.runs),
              "run_overhead_s": bench_overhead(args.runs)}
    mm = result["matmul"]
    # A flat table (one row per device) for `hurray-gpu bench`'s report.
    result["rows"] = [{"device": spec, "matmul_ms": row["seconds"] * 1e3,
                       "speedup_vs_reference": row["speedup_vs_reference"],
                       "run_overhead_us": result["run_overhead_s"].get(spec, 0.0) * 1e6}
                      for spec, row in mm["devices"].items()]
    print(f"u32 matmul {args.n}x{args.n}: reference ~{mm['reference_s']:.1f} s "
          f"(measured {mm['reference_measured_s']:.2f} s at n={args.ref_n}, scaled by n^3)")
    for spec, row in mm["devices"].items():
        print(f"  {spec:10s} {row['seconds'] * 1e3:9.1f} ms   "
              f"{row['speedup_vs_reference']:9.0f}x vs reference")
    for spec, seconds in result["run_overhead_s"].items():
        print(f"  run_bytes warm overhead on {spec}: {seconds * 1e6:.0f} us per call")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
