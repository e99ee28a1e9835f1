"""Host<->device transfer bandwidth per device and memory class, against numpy copy bandwidth.

Also the device's own copy between two buffers of each class (D2D: ``Buffer.copy_from``, bytes
read + written, on the device's clock up to the host's wait for it; the dequantization and
KV-cache benchmarks time their roof without that wait).
Warm buffers; H2D, D2H and NumPy's copy of the same bytes take turns in every round; median
and [min, max] over the rounds (``*_range``), our bandwidth over NumPy's per round
(``*_vs_copy``). Prints a table and writes JSON.
Usage: python bench/transfer.py [--quick] [--size-mib 64] [--runs 7]
       [--json bench/out/transfer.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.registry import devices
from hurray_gpu.runtime.registry import resolve_device as device
from hurray_gpu.tensor import Tensor

from _timing import interleaved, median_s, on_device, on_host, parse_args, ratio, rounds, spread


def numpy_copy_gbps(nbytes: int, runs: int) -> float:
    """Median host memcpy bandwidth (np.copyto) in GB/s."""
    src = np.random.default_rng(0).integers(0, 256, nbytes, dtype=np.uint8)
    dst = np.empty_like(src)
    return nbytes / median_s(lambda: np.copyto(dst, src), runs) / 1e9


def measure(dev: Any, memory_class: Any, nbytes: int, runs: int) -> dict[str, Any]:
    """Median H2D and D2H bandwidth of one device and memory class."""
    host = np.random.default_rng(1).integers(0, 256, nbytes, dtype=np.uint8)
    back = np.empty_like(host)
    copy = np.empty_like(host)
    buf, dst = Buffer(dev, nbytes, memory_class), Buffer(dev, nbytes, memory_class)
    try:
        # NumPy's copy of the same bytes takes turns with ours: the per-round limit.
        took = rounds({"h2d": on_host(lambda: buf.copyin(host)),
                       "d2h": on_host(lambda: buf.copyout(back)),
                       "copy": on_host(lambda: np.copyto(copy, host))}, runs)
        h2d, d2h = (statistics.median(took[k]) for k in ("h2d", "d2h"))
        exact = bool(np.array_equal(host, back))
        d2d = interleaved({"d2d": on_device(dev, lambda: dst.copy_from(buf, progress=False))},
                          runs)["d2d"].median
        exact = exact and bool(np.array_equal(dst.numpy(), host))
    finally:
        buf.free()
        dst.free()
        dev.allocator.free_cache()
    to_s, back_s, to_exact = measure_tensor_to(dev, memory_class, host, runs)
    dev.allocator.free_cache()
    row = {"device": dev.spec, "name": dev.name, "memory_class": memory_class.label,
           "bytes": nbytes, "h2d_gbps": nbytes / h2d / 1e9, "d2h_gbps": nbytes / d2h / 1e9,
           "h2d_s": h2d, "d2h_s": d2h, "d2d_gbps": 2 * nbytes / d2d / 1e9,
           "bit_exact": exact and to_exact,
           "tensor_to_gbps": nbytes / to_s / 1e9 if to_s else None,
           "tensor_to_cpu_gbps": nbytes / back_s / 1e9 if back_s else None}
    for key in ("h2d", "d2h", "copy"):  # GB/s: (median, [min, max]) over the rounds
        gbps = [nbytes / s / 1e9 for s in took[key]]
        name = "numpy_copy_gbps" if key == "copy" else f"{key}_gbps"
        row[name], row[f"{name}_range"] = spread(gbps)
        if key != "copy":  # our bandwidth over NumPy's, round by round
            row[f"{key}_vs_copy"], row[f"{key}_vs_copy_range"] = ratio(took["copy"], took[key])
    return row


def measure_tensor_to(dev: Any, memory_class: Any, host: np.ndarray,
                      runs: int) -> tuple[float | None, float | None, bool]:
    """Median seconds of ``Tensor.to(dev, memory_class=...)`` (allocation included) and of ``.to("cpu")``.

    Returns (None, None, True) where the tensor would not move (the cpu's standard memory) or
    the class cannot hold it (pinned memory over the locked-memory limit).
    """
    t = Tensor.from_numpy(host)
    try:
        on = t.to(dev, memory_class=memory_class, progress=False)
    except UnsupportedOpError:
        return None, None, True
    if on is t:
        return None, None, True
    to_s = median_s(lambda: t.to(dev, memory_class=memory_class, progress=False), runs)
    back_s = median_s(lambda: on.to("cpu", progress=False), runs)
    exact = bool(np.array_equal(on.to("cpu").buffers[0].array, t.buffers[0].array))
    return to_s, back_s, exact


def _table(rows: list[dict[str, Any]], numpy_gbps: float) -> str:
    lines = [f"numpy copy (np.copyto): {numpy_gbps:8.2f} GB/s",
             f"{'device':12s} {'class':12s} {'H2D GB/s':>9s} {'D2H GB/s':>9s} "
             f"{'H2D/numpy':>9s} {'D2H/numpy':>9s} {'T.to GB/s':>9s} {'.to(cpu)':>9s} "
             f"{'D2D GB/s':>9s} exact"]
    for r in rows:
        to, back = (f"{v:9.2f}" if v else f"{'-':>9s}" for v in (r["tensor_to_gbps"],
                                                                 r["tensor_to_cpu_gbps"]))
        lines.append(f"{r['device']:12s} {r['memory_class']:12s} {r['h2d_gbps']:9.2f} "
                     f"{r['d2h_gbps']:9.2f} {r['h2d_gbps'] / numpy_gbps:9.2f} "
                     f"{r['d2h_gbps'] / numpy_gbps:9.2f} {to} {back} {r['d2d_gbps']:9.2f} "
                     f"{r['bit_exact']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 1 if any round trip was not bit-exact."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mib", type=int, default=64)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--device", action="append", default=[], help="spec; default: all")
    parser.add_argument("--json", default="bench/out/transfer.json")
    args = parse_args(parser, {"size_mib": 4, "runs": 3}, argv)
    nbytes = max(1, args.size_mib) * 1024 * 1024
    targets = [device(s) for s in args.device] or [d for d in devices() if d.kind != "reference"]
    numpy_gbps = numpy_copy_gbps(nbytes, args.runs)
    rows = [measure(d, mc, nbytes, args.runs) for d in targets for mc in d.memory_classes]
    print(_table(rows, numpy_gbps))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"bytes": nbytes, "runs": args.runs, "numpy_copy_gbps": numpy_gbps,
                               "results": rows}, indent=2))
    print(f"wrote {out}")
    return 0 if all(r["bit_exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
