"""Layout-conversion throughput per device and size, against the device's memory-copy roof and a
NumPy gather (precomputed offset map) in the same run; CSR -> dense against scipy's
``toarray()`` at several densities. GB/s counts bytes read + written. Warm; the calls compared
take turns in every round; each figure is the median and [min, max] (``*_range``) over the
rounds, each ratio is taken round by round. The layout rows of all devices share their rounds:
devices after the first also report ``time_vs_<first>``, their kernel's time over the first
device's per round (``--devices vulkan,webgpu --clock cpu``: WGSL over GLSL on lavapipe).
Writes bench/out/layout.json. On a shared CPU host set OMP_WAIT_POLICY=passive.
Usage: python bench/layout.py [--sides 512,4096 | --side N] [--runs 5] [--devices cpu]
       [--csr-only] [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from hurray_gpu.format.addressing import dense_offsets
from hurray_gpu.format.descriptor.layouts import (
    ColMajor,
    Hilbert,
    Morton,
    RowMajor,
    Strided,
    Tiled,
)
from hurray_gpu.ops.host import relayout, sparsify
from hurray_gpu.ops.layout_plan import alloc_out, device_buffers, plan_dense, run_dense
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.runtime.registry import resolve_device as device
from hurray_gpu.tensor import Tensor

from _timing import CLOCKS, copy_roof, on_host, ratio, rounds, spread, time_vs


def _layouts(side: int) -> dict[str, Any]:
    bits = (side - 1).bit_length()
    return {"row_major_identity": RowMajor(), "col_major": ColMajor(), "strided_neg": Strided((-side, 1)),
            "tiled_32x32": Tiled((32, 32)), "tiled_nested": Tiled(
                (64, 64), inner_layout=4, inner=Tiled((8, 8))),
            "morton": Morton((bits, bits)), "hilbert": Hilbert(bits, 2)}


def _dense_rows(devs: dict[str, Any], t: Tensor, runs: int, nbytes: int,
                clock: str = "wall") -> dict[str, dict[str, Any]]:
    """Per device (``devs``: spec -> device): our kernel, materialize() and the device's copy
    of the same bytes, and one NumPy gather; every call of every device takes its turn in every
    round, so devices after the first get their kernel's time over the first's, round by round.
    """
    offs = dense_offsets(t.descriptor).reshape(-1) + t.descriptor.byte_offset // 4
    host = np.asarray(t.buffers[0]).view(np.uint32)
    res = np.empty(offs.size, np.uint32)
    tick = CLOCKS[clock]
    calls = {"numpy_gather_gbps": on_host(lambda: np.take(host, offs, out=res), clock=tick)}
    copied: dict[str, int] = {}
    for spec, dev in devs.items():
        moved = t.to(dev)
        src = device_buffers(moved, dev)[0]
        plan = plan_dense(moved.descriptor, src.nbytes)
        out = alloc_out(dev, plan, moved.dtype)
        copy, _, copied[spec] = copy_roof(dev, 2 * nbytes)
        sync = dev.synchronize
        calls[f"{spec} gbps"] = on_host(
            lambda dev=dev, plan=plan, src=src, out=out: run_dense(dev, plan, src, out),
            sync, tick)
        calls[f"{spec} gbps_end_to_end"] = on_host(lambda m=moved: materialize(m), sync, tick)
        calls[f"{spec} copy_gbps"] = on_host(copy, sync, tick)
    took = rounds(calls, runs)
    return pair_rows({spec: dev.spec for spec, dev in devs.items()}, took, nbytes, copied)


def pair_rows(specs: dict[str, str], took: dict[str, list[float]], nbytes: int,
              copied: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Each device's row from the seconds of one set of rounds (``took``: ``"<spec> gbps"``,
    ``"<spec> gbps_end_to_end"``, ``"<spec> copy_gbps"`` per device, ``"numpy_gather_gbps"``):
    GB/s as median and [min, max], fractions of the copy, and for devices after the first
    ``time_vs_<first>`` (``specs`` maps each key to its device's spec)."""
    first = next(iter(specs))
    rows: dict[str, dict[str, Any]] = {}
    for spec in specs:
        seconds = {name: took[f"{spec} {name}"]
                   for name in ("gbps", "gbps_end_to_end", "copy_gbps")}
        seconds["numpy_gather_gbps"] = took["numpy_gather_gbps"]
        row: dict[str, Any] = {}
        for name, values in seconds.items():
            amount = copied[spec] if name == "copy_gbps" else 2 * nbytes
            row[name], row[f"{name}_range"] = spread([amount / s / 1e9 for s in values])
        # Our bandwidth over the copy's, round by round.
        scale = 2 * nbytes / copied[spec]
        row["fraction_of_copy"], row["fraction_of_copy_range"] = ratio(
            seconds["copy_gbps"], seconds["gbps"], scale)
        row["fraction_of_copy_end_to_end"] = ratio(seconds["copy_gbps"],
                                                   seconds["gbps_end_to_end"], scale)[0]
        if spec != first:  # the same kernel on another backend (webgpu:0 beside vulkan:0)
            row.update(time_vs(specs[first], seconds["gbps"], took[f"{first} gbps"]))
        rows[spec] = row
    return rows


def _interleaved(fns: dict[str, Any], runs: int) -> dict[str, list[float]]:
    """Wall seconds of each function per round, sampled in turns so that load drift on a shared
    host hits every candidate alike (one warm-up call each first). The order rotates every
    round: a candidate that runs right after another finds the caches holding its data."""
    for fn in fns.values():
        fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for turn in range(runs):
        for name in names[turn % len(names):] + names[:turn % len(names)]:
            start = time.perf_counter()
            fns[name]()
            samples[name].append(time.perf_counter() - start)
    return samples


def _fresh(dev: Any, fn: Any) -> Any:
    """``fn`` with the device's buffer pool off: every output lands on never-touched pages,
    as scipy's ``toarray()`` output does (a fresh ``np.zeros``)."""
    def run() -> None:
        allocator = dev.allocator
        limit, allocator.pool_limit = allocator.pool_limit, 0
        try:
            fn()
        finally:
            allocator.pool_limit = limit
    return run


def _csr_rows(dev: Any, side: int, runs: int, densities: list[float]) -> list[dict[str, Any]]:
    """CSR -> dense of a side x side float32 matrix per density, against scipy (same data).

    Like with like, both ways: ``fresh`` outputs are new pages each call (our buffer pool off;
    scipy's ``toarray()``), ``warm`` ones are reused, already-touched memory (our pooled
    buffer; scipy zeroing then filling one array with ``toarray(out=)``, which adds into it).
    ``speedup_vs_scipy`` is the smaller of the two like-for-like ratios.
    """
    try:
        import scipy.sparse as sps
    except ImportError:
        sps = None
    rows = []
    for density in densities:
        rng = np.random.default_rng(1)
        dense = np.where(rng.random((side, side)) < density,
                         rng.standard_normal((side, side)), 0).astype(np.float32)
        t = sparsify(Tensor.from_numpy(dense), "csr").to(dev)
        if not np.array_equal(materialize(t).to("cpu").numpy(), dense):
            raise AssertionError(f"CSR -> dense differs on {dev}")

        def ours(t: Tensor = t) -> None:
            materialize(t)
            dev.synchronize()
        warm: dict[str, Any] = {"seconds": ours}
        fresh: dict[str, Any] = {"fresh_seconds": _fresh(dev, ours)}
        if sps is not None:
            matrix, out = sps.csr_matrix(dense), np.empty((side, side), np.float32)

            def scipy_warm(matrix: Any = matrix, out: np.ndarray = out) -> None:
                out.fill(0)
                matrix.toarray(out=out)
            warm["scipy_warm_seconds"] = scipy_warm
            fresh["scipy_fresh_seconds"] = matrix.toarray
        # Fresh runs empty the pool, so each pair is timed on its own (warm first).
        took = {**_interleaved(warm, runs), **_interleaved(fresh, runs)}
        row: dict[str, Any] = {"side": side, "density": density,
                               "nnz": int(t.descriptor.layout.nnz),
                               "loadavg_1min": os.getloadavg()[0]}
        for name, seconds in took.items():
            row[name], row[f"{name}_range"] = spread(seconds)
        if sps is not None:  # scipy's time over ours, round by round
            for kind, ours in (("fresh", "fresh_seconds"), ("warm", "seconds")):
                row[f"speedup_vs_scipy_{kind}"], row[f"speedup_vs_scipy_{kind}_range"] = ratio(
                    took[f"scipy_{kind}_seconds"], took[ours])
            row["speedup_vs_scipy"] = min(row["speedup_vs_scipy_fresh"],
                                          row["speedup_vs_scipy_warm"])
        rows.append(row)
    return rows


def _side_report(devs: dict[str, Any], side: int, runs: int, densities: list[float],
                 csr_only: bool = False, clock: str = "wall") -> dict[str, dict[str, Any]]:
    """Every device's report for one side (spec -> report); the layouts of all devices are
    timed in the same rounds."""
    out = {spec: {"layouts": {}, "csr_to_dense": _csr_rows(dev, side, runs, densities)}
           for spec, dev in devs.items()}
    if csr_only:
        return out
    nbytes = side * side * 4
    base = Tensor.from_numpy(np.random.default_rng(0).standard_normal((side, side))
                             .astype(np.float32))
    for name, lay in _layouts(side).items():
        for spec, row in _dense_rows(devs, relayout(base, lay), runs, nbytes, clock).items():
            out[spec]["layouts"][name] = row
    for report in out.values():
        rows = report["layouts"]
        ident = rows["row_major_identity"]["gbps"]
        for row in rows.values():
            # Against the same gather kernel on a row-major source: the addressing's own cost.
            row["fraction_of_identity_gather"] = row["gbps"] / ident
        report["copy_roof_gbps"] = statistics.median(row["copy_gbps"] for row in rows.values())
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and write the JSON report (default bench/out/layout.json)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--side", type=int, default=None, help="one square f32 side (2**k)")
    parser.add_argument("--sides", default="1024,4096", help="comma-separated sides (2**k)")
    parser.add_argument("--densities", default="0.01,0.05,0.2", help="CSR densities")
    parser.add_argument("--csr-only", action="store_true", help="only CSR -> dense vs scipy")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--devices", default="cpu,opencl,vulkan,webgpu")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="host clock of the layout rows (cpu: CPU time of every thread)")
    parser.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "layout.json")
    args = parser.parse_args(argv)
    sides = [args.side] if args.side else [int(v) for v in args.sides.split(",") if v]
    densities = [float(v) for v in args.densities.split(",") if v]
    report: dict[str, Any] = {"sides": sides, "dtype": "float32", "runs": args.runs,
                              "clock": args.clock, "sizes": {}}
    devs: dict[str, Any] = {}
    for spec in args.devices.split(","):
        try:
            devs[spec] = device(spec)
        except Exception as exc:  # noqa: BLE001 - a missing backend is reported, not fatal
            print(f"{spec}: skipped ({exc})", file=sys.stderr)
    for side in sides:
        entry = _side_report(devs, side, args.runs, densities, args.csr_only, args.clock)
        report["sizes"][str(side)] = entry
        print(json.dumps({str(side): entry}, indent=1))
    # A flat table (one row per device, size and layout) for `hurray-gpu bench`'s report.
    report["rows"] = [{"device": spec, "side": int(side), "layout": name, "gbps": row["gbps"],
                       "fraction_of_copy": row["fraction_of_copy"],
                       **{k: v for k, v in row.items()
                          if k.startswith("time_vs_") and not k.endswith("_range")}}
                      for side, per_dev in report["sizes"].items()
                      for spec, dev_report in per_dev.items()
                      for name, row in dev_report["layouts"].items()]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
