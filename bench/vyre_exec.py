"""Compiled vyre programs on every local device against the reference interpreter, same run.

1. u32 matmul (n x n, one invocation per output; also the shared-memory tiled variant where the
   device has workgroup barriers). Device time: Kernel launches on device buffers plus the
   device sync: ``seconds`` is the best of --runs (at least 3), ``seconds_median`` and
   ``seconds_range`` their median and [min, max], likewise every speedup. The reference is far too slow for the whole grid: it runs a
   few workgroups of the *same* program (--ref-workgroups) and is scaled linearly by the
   workgroup count (every workgroup does identical work); --ref-n instead runs the whole
   program at that size and scales by (n/ref_n)^3. Outputs are checked against NumPy, and the
   device's subset bytes against the reference's.
2. BLAKE3 over --blake3-mib MiB (chunk program + parent levels), checked against the blake3
   package; the reference hashes a 64 KiB message and is scaled linearly (16 KiB in --quick).
3. The tiled matmul on cpu:0 (host C) against opencl:0 (pocl), interleaved rounds: the ratio
   of their times, min/median/max.
4. Warm Kernel(...) overhead: time in Kernel.__call__ minus time inside the backend's enqueue
   (measured by wrapping it), median and [min, max] over many calls, per device, against
   the goal (``goal_us``).
Usage: python bench/vyre_exec.py [--quick] [--n 512] [--blake3-mib 16] [--json out.json]
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

import blake3
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if (ROOT / "hurray_gpu").is_dir():  # a checkout (the package's own copy imports the package)
    sys.path.insert(0, str(ROOT))

import vyre  # noqa: E402
from hurray_gpu.runtime.buffer import Buffer  # noqa: E402
from hurray_gpu.runtime.registry import devices  # noqa: E402
from vyre import reference  # noqa: E402
from vyre.programs import blake3 as b3  # noqa: E402
from vyre.programs import elementwise_program, matmul_program, matmul_tiled_program  # noqa: E402

TILE = 16


# The goal for the Python time of a warm Kernel(...) call outside the backend's enqueue.
OVERHEAD_GOAL_US = 10.0


def _runs(fn: Callable[[], Any], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def _timing(samples: list[float], reference_s: float, amount: float | None = None,
            unit: str = "") -> dict[str, Any]:
    """Best seconds and speedup (the original fields), plus the median and [min, max] of the
    seconds, of the speedup over the reference and of ``amount`` per second (``unit``)."""
    seconds, spread = statistics.median(samples), [min(samples), max(samples)]
    row: dict[str, Any] = {"seconds": spread[0], "speedup_vs_reference": reference_s / spread[0],
                           "seconds_median": seconds, "seconds_range": spread,
                           "speedup_vs_reference_median": reference_s / seconds,
                           "speedup_vs_reference_range": [reference_s / spread[1],
                                                          reference_s / spread[0]]}
    if amount is not None:
        row |= {unit: amount / spread[0], f"{unit}_median": amount / seconds,
                f"{unit}_range": [amount / spread[1], amount / spread[0]]}
    return row


def _devices() -> list[Any]:
    return [d for d in devices() if d.kind != "reference" and d.compiler is not None]


def _launch_matmul(dev: Any, prog: vyre.Program, a: np.ndarray, bm: np.ndarray, grid: tuple,
                   runs: int) -> tuple[list[float], np.ndarray]:
    kernel = vyre.compile(prog, dev)
    bufs = [Buffer.from_bytes(dev, a.tobytes()), Buffer.from_bytes(dev, bm.tobytes()),
            Buffer(dev, a.nbytes)]

    def once() -> None:
        kernel(bufs, grid)
        dev.synchronize()

    once()  # warm
    seconds = _runs(once, runs)
    out = np.frombuffer(bytes(bufs[2].copyout()), np.uint32).copy()
    for buf in bufs:
        buf.free()
    return seconds, out


def _reference_matmul(n: int, ref_n: int | None, ref_wg: int, a: np.ndarray,
                      bm: np.ndarray) -> dict[str, Any]:
    groups = -(-n // TILE)
    if ref_n is not None:
        small = matmul_program(ref_n)
        rng = np.random.default_rng(1)
        sa, sb = (rng.integers(0, 2**32, ref_n * ref_n, dtype=np.uint64).astype(np.uint32)
                  for _ in range(2))
        grid = (-(-ref_n // TILE), -(-ref_n // TILE), 1)
        start = time.perf_counter()
        out = reference.run_bytes(small, {"a": sa, "b": sb}, grid=grid, max_steps=2**40)
        measured = time.perf_counter() - start
        return {"reference_s": measured * (n / ref_n) ** 3, "measured_s": measured,
                "how": f"whole program at n={ref_n}, scaled by (n/ref_n)^3",
                "check": (small, {"a": sa, "b": sb}, grid, out["out"])}
    wx = max(1, min(ref_wg, groups))
    grid = (wx, 1, 1)
    start = time.perf_counter()
    out = reference.run_bytes(matmul_program(n), {"a": a, "b": bm}, grid=grid, max_steps=2**40)
    measured = time.perf_counter() - start
    scale = groups * groups / wx
    return {"reference_s": measured * scale, "measured_s": measured,
            "how": f"{wx} of {groups * groups} workgroups of the same program, scaled x{scale:g}",
            "check": (matmul_program(n), {"a": a, "b": bm}, grid, out["out"])}


def bench_matmul(n: int, ref_n: int | None, ref_wg: int, runs: int) -> dict[str, Any]:
    """Matmul on every device (plain and tiled) and on the reference (subset, scaled)."""
    rng = np.random.default_rng(0)
    a, bm = (rng.integers(0, 2**32, n * n, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    want = ((a.reshape(n, n).astype(np.uint64) @ bm.reshape(n, n).astype(np.uint64))
            % 2**32).astype(np.uint32).ravel()
    ref = _reference_matmul(n, ref_n, ref_wg, a, bm)
    check_prog, check_inputs, check_grid, check_bytes = ref.pop("check")
    result: dict[str, Any] = {"n": n, **ref, "devices": {}}
    grid = (-(-n // TILE), -(-n // TILE), 1)
    for dev in _devices():
        got = vyre.run_bytes(check_prog, check_inputs, grid=check_grid, device=dev)
        assert got["out"] == check_bytes, f"{dev.spec}: differs from the reference"
        for label, build in (("plain", matmul_program), ("tiled", matmul_tiled_program)):
            try:
                seconds, out = _launch_matmul(dev, build(n), a, bm, grid, runs)
            except vyre.UnsupportedOpError:
                continue  # a device without workgroup barriers
            assert np.array_equal(out, want), f"{dev.spec} {label}: wrong product"
            result["devices"][f"{dev.spec} {label}"] = _timing(seconds, ref["reference_s"])
    return result


def bench_tiled_host_vs_opencl(n: int, rounds: int) -> dict[str, Any] | None:
    """The workgroup-tiled matmul on cpu:0 (host C: barriers by region splitting) against the
    same program on opencl:0 (pocl), interleaved: each round times one launch on each.
    ``ratio`` is opencl seconds / cpu seconds (>= 1: the host is at least as fast)."""
    devs = {d.spec: d for d in _devices()}
    if "cpu:0" not in devs or "opencl:0" not in devs:
        return None
    rng = np.random.default_rng(5)
    a, bm = (rng.integers(0, 2**32, n * n, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    want = ((a.reshape(n, n).astype(np.uint64) @ bm.reshape(n, n).astype(np.uint64))
            % 2**32).astype(np.uint32).ravel()
    grid = (-(-n // TILE), -(-n // TILE), 1)
    launches = {}
    for spec in ("cpu:0", "opencl:0"):
        dev = devs[spec]
        kernel = vyre.compile(matmul_tiled_program(n), dev)
        bufs = [Buffer.from_bytes(dev, a.tobytes()), Buffer.from_bytes(dev, bm.tobytes()),
                Buffer(dev, a.nbytes)]

        def once(kernel: Any = kernel, bufs: list[Buffer] = bufs, dev: Any = dev) -> None:
            kernel(bufs, grid)
            dev.synchronize()

        once()  # warm: compiled, first touch
        out = np.frombuffer(bytes(bufs[2].copyout()), np.uint32)
        assert np.array_equal(out, want), f"{spec}: wrong tiled product"
        launches[spec] = (once, bufs)
    # Wall time, and CPU time of the whole process (pocl's worker threads and OpenMP's are
    # both in it), which a loaded machine distorts less.
    times: dict[str, list[float]] = {"cpu:0": [], "opencl:0": []}
    cpu_times: dict[str, list[float]] = {"cpu:0": [], "opencl:0": []}
    try:
        for _ in range(rounds):
            for spec in times:
                start = time.process_time()
                times[spec] += _runs(launches[spec][0], 1)
                cpu_times[spec].append(time.process_time() - start)
    finally:
        for _, bufs in launches.values():
            for buf in bufs:
                buf.free()

    def spread(values: list[float], scale: float = 1.0) -> list[float]:
        return [scale * min(values), scale * statistics.median(values), scale * max(values)]

    ratios = [o / c for c, o in zip(times["cpu:0"], times["opencl:0"], strict=True)]
    cpu_ratios = [o / c for c, o in zip(cpu_times["cpu:0"], cpu_times["opencl:0"], strict=True)]
    return {"n": n, "rounds": rounds, "cpu_ms": spread(times["cpu:0"], 1e3),
            "opencl_ms": spread(times["opencl:0"], 1e3), "ratio": spread(ratios),
            "cpu_time_ratio": spread(cpu_ratios)}


def _device_blake3(dev: Any, data: bytes, runs: int) -> list[float]:
    b3.blake3_hash(data[:5000], dev)  # compile both programs
    assert b3.blake3_hash(data, dev) == blake3.blake3(data).digest(), dev.spec
    return _runs(lambda: b3.blake3_hash(data, dev), runs)


def bench_blake3(mib: float, ref_kib: int, runs: int) -> dict[str, Any]:
    """BLAKE3 of ``mib`` MiB on each device vs the reference on ``ref_kib`` KiB, scaled."""
    size = int(mib * 2**20)
    data = np.random.default_rng(2).integers(0, 256, size, dtype=np.uint8).tobytes()
    sample = data[:ref_kib * 1024]
    start = time.perf_counter()
    assert b3.blake3_hash(sample, "reference") == blake3.blake3(sample).digest()
    measured = time.perf_counter() - start
    ref_s = measured * size / len(sample)
    result: dict[str, Any] = {"mib": mib, "reference_s": ref_s, "reference_measured_s": measured,
                              "reference_kib": ref_kib, "devices": {}}
    for dev in _devices():
        result["devices"][dev.spec] = _timing(_device_blake3(dev, data, runs), ref_s, mib,
                                              "mib_per_s")
    return result


def _time_enqueues(program: Any, inside: list[float]) -> None:
    """Make ``program``'s backend enqueue accumulate its seconds into ``inside[0]`` (an
    instance attribute shadowing the method; ``del program._launch`` restores it)."""
    enqueue = program._launch

    def timed(*args: Any) -> Any:
        start = time.perf_counter()
        try:
            return enqueue(*args)
        finally:
            inside[0] += time.perf_counter() - start

    program._launch = timed


def bench_overhead(calls: int) -> dict[str, dict[str, Any]]:
    """Warm Kernel(...) time per call, and that time minus the backend enqueue."""
    out = {}
    prog = elementwise_program("clamp_u32", 64)
    for dev in _devices():
        kernel = vyre.compile(prog, dev)
        bufs = [Buffer(dev, 256) for _ in range(4)]
        inside = [0.0]
        for program in kernel._programs:
            _time_enqueues(program, inside)
        totals, overheads = [], []
        try:
            for k in range(calls + 50):
                inside[0] = 0.0
                start = time.perf_counter()
                kernel(bufs, (1, 1, 1))
                total = time.perf_counter() - start
                if k >= 50:
                    totals.append(total)
                    overheads.append(total - inside[0])
            dev.synchronize()
        finally:
            for program in kernel._programs:
                del program._launch
            for buf in bufs:
                buf.free()
        out[dev.spec] = {"call_us": statistics.median(totals) * 1e6,
                         "call_us_range": [min(totals) * 1e6, max(totals) * 1e6],
                         "overhead_us": statistics.median(overheads) * 1e6,
                         "overhead_us_range": [min(overheads) * 1e6, max(overheads) * 1e6],
                         "goal_us": OVERHEAD_GOAL_US}
    return out


def _report(result: dict[str, Any]) -> None:
    mm, bl = result["matmul"], result["blake3"]
    print(f"u32 matmul {mm['n']}x{mm['n']}: reference ~{mm['reference_s']:.1f} s "
          f"(measured {mm['measured_s']:.2f} s: {mm['how']})")
    for name, row in mm["devices"].items():
        print(f"  {name:16s} {row['seconds'] * 1e3:9.1f} ms  "
              f"{row['speedup_vs_reference']:9.0f}x vs reference")
    print(f"BLAKE3 {bl['mib']:g} MiB: reference ~{bl['reference_s']:.1f} s (measured "
          f"{bl['reference_measured_s']:.2f} s on {bl['reference_kib']} KiB, scaled linearly)")
    for name, row in bl["devices"].items():
        print(f"  {name:16s} {row['seconds'] * 1e3:9.1f} ms  {row['mib_per_s']:8.1f} MiB/s  "
              f"{row['speedup_vs_reference']:9.0f}x vs reference")
    tiled = result["tiled_host_vs_opencl"]
    if tiled is not None:
        lo, mid, hi = tiled["ratio"]
        print(f"Tiled {tiled['n']}x{tiled['n']} u32 matmul, {tiled['rounds']} interleaved rounds: "
              f"cpu:0 {tiled['cpu_ms'][1]:.1f} ms, opencl:0 {tiled['opencl_ms'][1]:.1f} ms "
              f"(median); opencl/cpu wall time {lo:.2f} / {mid:.2f} / {hi:.2f}, CPU time "
              + " / ".join(f"{r:.2f}" for r in tiled["cpu_time_ratio"]) + " (min/median/max)")
    for name, row in result["kernel_overhead"].items():
        print(f"  Kernel(...) warm on {name:9s}: {row['call_us']:7.1f} us per call, "
              f"{row['overhead_us']:5.1f} us of it in Python outside the enqueue")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="n=128, 1 MiB, 3 runs")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--ref-n", type=int, default=None)
    parser.add_argument("--ref-workgroups", type=int, default=4)
    parser.add_argument("--blake3-mib", type=float, default=None)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    n = args.n or (128 if args.quick else 512)
    mib = args.blake3_mib or (1.0 if args.quick else 16.0)
    runs = max(3, args.runs or 3)  # min/median/max need three
    result: dict[str, Any] = {
        "matmul": bench_matmul(n, args.ref_n, args.ref_workgroups, runs),
        "blake3": bench_blake3(mib, 16 if args.quick else 64, runs),
        "kernel_overhead": bench_overhead(500 if args.quick else 3000),
        "tiled_host_vs_opencl": bench_tiled_host_vs_opencl(n, max(5, runs))}
    # A flat table (one row per device) for `hurray-gpu bench`'s report.
    result["rows"] = [{"device": spec, "matmul_ms": row["seconds"] * 1e3,
                       "speedup_vs_reference": row["speedup_vs_reference"]}
                      for spec, row in result["matmul"]["devices"].items()]
    result["rows"] += [{"device": spec, "blake3_mib_per_s": row["mib_per_s"],
                        "kernel_overhead_us": result["kernel_overhead"][spec]["overhead_us"]}
                       for spec, row in result["blake3"]["devices"].items()]
    tiled = result["tiled_host_vs_opencl"]
    if tiled is not None:
        result["rows"].append({"device": "cpu:0 vs opencl:0 tiled", "ratio": tiled["ratio"][1],
                               "ratio_range": [tiled["ratio"][0], tiled["ratio"][2]]})
    _report(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
