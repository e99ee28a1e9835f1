"""Cold start: `import hurray_gpu`, and the first call on each device with a cold and a warm
kernel cache, each in a fresh process.

Every sample is a new interpreter (nothing imported, nothing loaded); "cold" uses an empty
HURRAY_GPU_CACHE_DIR, "warm" the same directory again, so the kernels come from disk. The
first call is `hg.materialize` of a 64 x 64 column-major float32 tensor already on the device
(one layout kernel); the second call in the same process is the steady state it is compared
with. Runs are interleaved (every measurement once per round), min/median/max over the rounds.
Usage: python bench/cold_start.py [--runs 5] [--quick] [--json bench/out/cold_start.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# Goals (milliseconds) the report compares with: `import hurray_gpu`, and a first call whose
# kernels are in the disk cache, on cpu:0.
IMPORT_GOAL_MS = 150.0
WARM_FIRST_CALL_GOAL_MS = 10.0

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import hurray_gpu as hg
t1 = time.perf_counter()
if sys.argv[1] == "-":
    print(json.dumps({"import_ms": 1e3 * (t1 - t0)}))
    raise SystemExit(0)
import numpy as np
from hurray_gpu.format.descriptor import ColMajor
want = np.arange(4096, dtype=np.float32).reshape(64, 64)
x = hg.relayout(hg.from_numpy(want), ColMajor())
t2 = time.perf_counter()
dev = hg.device(sys.argv[1])
xd = x.to(dev)
dev.synchronize()
t3 = time.perf_counter()
y = hg.materialize(xd)
dev.synchronize()
t4 = time.perf_counter()
z = hg.materialize(xd)
dev.synchronize()
t5 = time.perf_counter()
ok = bool(np.array_equal(y.to("cpu").numpy(), want) and np.array_equal(z.to("cpu").numpy(), want))
print(json.dumps({"import_ms": 1e3 * (t1 - t0), "open_ms": 1e3 * (t3 - t2),
                  "first_call_ms": 1e3 * (t4 - t3), "second_call_ms": 1e3 * (t5 - t4),
                  "ok": ok}))
"""


def _child(spec: str, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "HURRAY_GPU_CACHE_DIR": str(cache)}
    env.pop("HURRAY_GPU_NO_CACHE", None)
    done = subprocess.run([sys.executable, "-c", CHILD, spec], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": tail}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _stats(values: list[float]) -> dict[str, float]:
    return {"min_ms": min(values), "median_ms": statistics.median(values),
            "max_ms": max(values)}


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and write the JSON report (default bench/out/cold_start.json)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="rounds (>= 3)")
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--devices", default="cpu:0,opencl:0,vulkan:0")
    parser.add_argument("--json", type=Path,
                        default=Path(__file__).parent / "out" / "cold_start.json")
    args = parser.parse_args(argv)
    runs = 3 if args.quick else max(3, args.runs)
    specs = [s for s in args.devices.split(",") if s]
    samples: dict[tuple[str, str], list[dict[str, Any]]] = {}
    errors: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="hurray_gpu_cold_") as tmp:
        for r in range(runs):
            samples.setdefault(("import hurray_gpu", "-"), []).append(
                _child("-", Path(tmp) / "unused"))
            for spec in specs:
                if spec in errors:
                    continue
                cache = Path(tmp) / f"round{r}-{spec.replace(':', '_')}"
                for state in ("cold", "warm"):  # the warm run reuses the cold run's cache
                    got = _child(spec, cache)
                    if "error" in got or not got.get("ok"):
                        errors[spec] = got.get("error", "wrong result")
                        break
                    samples.setdefault((f"first call, {state} cache", spec), []).append(got)
    rows = []
    for (what, spec), got in samples.items():
        if spec in errors:
            continue
        key = "import_ms" if spec == "-" else "first_call_ms"
        row: dict[str, Any] = {"what": what, "device": spec, **_stats([g[key] for g in got])}
        if spec != "-":
            steady = [g["second_call_ms"] for g in got]
            row["open_ms_median"] = statistics.median(g["open_ms"] for g in got)
            row["steady_call_ms_median"] = statistics.median(steady)
            row["steady_call_ms_range"] = [min(steady), max(steady)]
            # The first call's time over the second's, process by process.
            over = [g["first_call_ms"] / g["second_call_ms"] for g in got]
            row["over_steady_ratio"] = statistics.median(over)
            row["over_steady_ratio_range"] = [min(over), max(over)]
        goal = (IMPORT_GOAL_MS if spec == "-" else
                WARM_FIRST_CALL_GOAL_MS if what.endswith("warm cache") and spec == "cpu:0"
                else None)
        if goal:
            row["goal_ms"] = goal
            row["median_over_goal_ratio"] = row["median_ms"] / goal
            row["over_goal_ratio_range"] = [row["min_ms"] / goal, row["max_ms"] / goal]
        rows.append(row)
    report = {"runs": runs, "results": rows,
              "unavailable": [{"device": s, "error": e} for s, e in errors.items()]}
    for row in rows:
        print(f"{row['what']:<24} {row['device']:<9} min/median/max "
              f"{row['min_ms']:8.1f} {row['median_ms']:8.1f} {row['max_ms']:8.1f} ms"
              + (f"  (goal {row['goal_ms']:.0f} ms)" if "goal_ms" in row else ""))
    for spec, err in errors.items():
        print(f"{spec}: not measured ({err})")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
