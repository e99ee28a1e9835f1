"""Dequantization throughput per device against peers and the memory-copy roof, in one run.

Peers (optional benchmark dependencies, skipped with a note when missing): bitsandbytes
``dequantize_4bit`` (NF4), ``gguf.quants.dequantize`` (Q4_0/Q8_0), ml_dtypes ``astype``
(fp8/fp6/fp4). Warm buffers; ours, the peer and the copy roof run in alternation within each
case (a shared machine's load hits all three alike), median of the runs; G elem/s and GB/s of
bytes read + written; "roof" is against the copy measured in the same case.
Usage: python bench/dequant.py [--elements 67108864] [--runs 5] [--devices cpu,opencl,vulkan]
       [--threads 1 --clock cpu]  (per-core CPU time: fairer than wall time on a loaded host)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hurray_gpu.format.dtypes import buffer_size, by_name
from hurray_gpu.ops.plan import bind_inputs, elements_per_item, launch, plan_dequantize
from hurray_gpu.ops.quantize import quantized_tensor, random_values
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.registry import resolve_device as device
from hurray_gpu.tensor import Tensor

BLOCK = 32
# time.perf_counter (wall) or time.process_time (CPU time of every thread of this process).
CLOCK: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = CLOCK["wall"]


def interleaved(calls: dict[str, Callable[[], Any]], runs: int) -> dict[str, float]:
    """Median seconds of each call, the calls taking turns (one warm-up round first)."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for round_ in range(runs + 1):
        for name, call in calls.items():
            start = _clock()
            call()
            if round_:
                samples[name].append(_clock() - start)
    return {name: statistics.median(times) for name, times in samples.items()}


def copy_call(nbytes: int) -> Callable[[], Any]:
    """np.copyto of ``nbytes`` (the CPU roof: 2 * nbytes per call, read + written)."""
    src = np.random.default_rng(0).integers(0, 256, nbytes, dtype=np.uint8)
    dst = np.empty_like(src)
    return lambda: np.copyto(dst, src)


def _blocked(rng: np.random.Generator, storage: str, scheme: str, n: int) -> Tensor:
    values = random_values(rng, storage, (n // 1024, 1024))
    count = n // BLOCK
    if scheme == "nf4":
        scales = rng.random(n // 64).astype(np.float32) + 0.5
        return quantized_tensor(values, storage, "nf4", axis=1, block_size=64, scales=scales)
    if scheme == "mxfp":
        scales = rng.integers(100, 150, count).astype(np.uint8)
        return quantized_tensor(values, storage, "mxfp", axis=1, block_size=BLOCK,
                                scales=scales)
    scales = (rng.random(count) + 0.5).astype(np.float16)
    return quantized_tensor(values, storage, "per_block", axis=1, block_size=BLOCK,
                            scales=scales, scale_type="float16")


def cases(n: int) -> list[tuple[str, str, Callable[[np.random.Generator], Tensor]]]:
    """(label, output dtype, tensor factory) for every measured operation."""
    out: list[tuple[str, str, Callable[[np.random.Generator], Tensor]]] = [
        ("NF4 -> float32", "float32", lambda r: _blocked(r, "uint4", "nf4", n)),
        ("NF4 -> bfloat16", "bfloat16", lambda r: _blocked(r, "uint4", "nf4", n)),
        ("Q4_0 (int4, f16 scale/32) -> float32", "float32",
         lambda r: _blocked(r, "int4", "per_block", n)),
        ("Q8_0 (int8, f16 scale/32) -> float32", "float32",
         lambda r: _blocked(r, "int8", "per_block", n)),
        ("MXFP4 (e2m1, e8m0/32) -> bfloat16", "bfloat16",
         lambda r: _blocked(r, "float4_e2m1", "mxfp", n)),
    ]
    for storage in ("float8_e4m3", "float8_e5m2", "float6_e2m3", "float6_e3m2",
                    "float4_e2m1"):
        out.append((f"{storage} -> float32", "float32",
                    lambda r, s=storage: Tensor.from_numpy(random_values(r, s, (n,)))))
    return out


def ours_runner(t: Tensor, out_dtype: str, dev: Any) -> tuple[Callable[[], Any], int]:
    """(one synchronous kernel run on ``dev`` with warm, preallocated buffers, bytes moved)."""
    dt = t.to(dev)
    # The elements per work item dequantize() itself uses on this device.
    plan = plan_dequantize(dt.descriptor, out_dtype, ept=elements_per_item(dev))
    bufs = [b if isinstance(b, Buffer) else Buffer.from_bytes(dev, np.ascontiguousarray(b))
            for b in dt.buffers]
    inputs = bind_inputs(plan, dev, bufs)
    out = Buffer(dev, buffer_size(by_name(out_dtype), plan.count))
    err = Buffer(dev, 4)

    def run() -> None:
        launch(plan, dev, inputs, out, err)
        dev.synchronize()

    read = sum(int(h.byte_size) for h in t.descriptor.buffers)
    return run, read + out.nbytes


def peer_runner(label: str, t: Tensor, rng: np.random.Generator) -> tuple[str, Callable[[], Any]]:
    """(peer name, zero-argument call) for ``label``; raises ImportError when not installed."""
    n = int(np.prod(t.shape))
    if label.startswith("NF4"):
        import bitsandbytes.functional as bnbf  # type: ignore[import-not-found]
        import torch  # type: ignore[import-not-found]

        dtype = torch.bfloat16 if "bfloat16" in label else torch.float32
        src = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(dtype)
        packed, state = bnbf.quantize_4bit(src, blocksize=64, quant_type="nf4")
        return "bitsandbytes dequantize_4bit", lambda: bnbf.dequantize_4bit(packed, state)
    if label.startswith(("Q4_0", "Q8_0")):
        from gguf import GGMLQuantizationType  # type: ignore[import-not-found]
        from gguf.quants import dequantize, quantize  # type: ignore[import-not-found]

        kind = GGMLQuantizationType.Q4_0 if label.startswith("Q4_0") else \
            GGMLQuantizationType.Q8_0
        raw = quantize(rng.standard_normal((n // 1024, 1024)).astype(np.float32), kind)
        return "gguf.quants.dequantize", lambda: dequantize(raw, kind)
    if label.startswith("MXFP4"):
        raise ImportError("no installed peer dequantizes MXFP4 on the CPU")
    import ml_dtypes  # noqa: F401  (the peer is ml_dtypes' astype)

    values = random_values(rng, label.split(" ")[0], (n,))
    return "ml_dtypes astype", lambda: values.astype(np.float32)


def run_case(label: str, out_dtype: str, make: Callable[[np.random.Generator], Tensor],
             devs: list[Any], runs: int, copy: Callable[[], Any],
             copy_bytes: int) -> list[dict[str, Any]]:
    """One operation: ours on each device, its peer and the copy roof, interleaved, as rows."""
    rng = np.random.default_rng(7)
    t = make(rng)
    n = int(np.prod(t.shape))
    calls: dict[str, Callable[[], Any]] = {"copy": copy}
    moved: dict[str, int] = {}
    peer = None
    try:
        peer, calls["peer"] = peer_runner(label, t, rng)
    except ImportError as exc:
        print(f"  peer for {label!r} skipped: {exc}", file=sys.stderr)
    for dev in devs:
        calls[dev.spec], moved[dev.spec] = ours_runner(t, out_dtype, dev)
    took = interleaved(calls, runs)
    roof = copy_bytes / took["copy"] / 1e9
    rows = []
    peer_rate = None
    if peer is not None:
        peer_rate = n / took["peer"] / 1e9
        rows.append({"op": label, "impl": peer, "device": "cpu", "elements": n,
                     "gelem_s": peer_rate})
    for dev in devs:
        seconds = took[dev.spec]
        gbps = moved[dev.spec] / seconds / 1e9
        rows.append({"op": label, "impl": "hurray_gpu", "device": dev.spec, "elements": n,
                     "gelem_s": n / seconds / 1e9, "gbps": gbps, "roof_gbps": roof,
                     "roof_fraction": gbps / roof,
                     "vs_peer": None if peer_rate is None else n / seconds / 1e9 / peer_rate})
        dev.allocator.free_cache()
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The printed table (one line per implementation and device)."""
    roofs = [r["roof_gbps"] for r in rows if "roof_gbps" in r]
    roof = f"{statistics.median(roofs):.2f} GB/s median" if roofs else "not measured"
    lines = [f"memory-copy roof (np.copyto, read + write, measured in each case): {roof}",
             f"{'operation':40s} {'impl':30s} {'device':9s} {'Gelem/s':>8s} {'GB/s':>7s} "
             f"{'roof':>6s} {'vs peer':>8s}"]
    for r in rows:
        gbps = f"{r['gbps']:7.2f}" if "gbps" in r else " " * 7
        roof_f = f"{r['roof_fraction']:6.1%}" if "roof_fraction" in r else " " * 6
        ratio = f"{r['vs_peer']:7.2f}x" if r.get("vs_peer") else " " * 8
        lines.append(f"{r['op']:40s} {r['impl']:30s} {r['device']:9s} {r['gelem_s']:8.3f} "
                     f"{gbps} {roof_f} {ratio}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--elements", type=int, default=64 * 1024 * 1024)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--devices", default="cpu", help="comma-separated device specs")
    parser.add_argument("--only", default="", help="run operations whose label contains this")
    parser.add_argument("--json", default="bench/out/dequant.json")
    parser.add_argument("--threads", type=int, default=0, help="OpenMP/torch threads (0: all)")
    parser.add_argument("--clock", choices=sorted(CLOCK), default="wall")
    args = parser.parse_args(argv)
    global _clock
    _clock = CLOCK[args.clock]
    if args.threads:
        # Read by libgomp when the first kernel library loads, so set before any launch.
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        try:
            import torch  # type: ignore[import-not-found]

            torch.set_num_threads(args.threads)
        except ImportError:
            pass
    n = args.elements // 1024 * 1024
    devs = [device(spec) for spec in args.devices.split(",") if spec]
    copy = copy_call(n * 4)
    rows: list[dict[str, Any]] = []
    for label, out_dtype, make in cases(n):
        if args.only in label:
            rows += run_case(label, out_dtype, make, devs, args.runs, copy, 2 * n * 4)
    print(table(rows))
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"elements": n, "runs": args.runs,
                                "clock": args.clock, "threads": args.threads or None,
                                "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
