"""Dequantization throughput per device against peers and the device's own copy, in one run.

Inputs are random codes and scales generated directly (every bit pattern is a valid code of
these storage types), not quantized floats, so even a GPU-sized run sets up in seconds; NF4
takes bitsandbytes' own quantization when it is installed, so both sides decode the same
bytes and their outputs are compared. The roof of each device is its own device-side copy
(``Buffer.copy_from`` on that device) of as many bytes as the dequantization reads and writes,
timed in the same rounds as our kernel; the GPU goal is a ``roof_fraction`` of at least 0.9.

Every peer comparison gives two ratios (ours / peer speed, min/median/max of per-round ratios):
``vs_peer``, both through their public APIs allocating outputs as those APIs do
(``hg.dequantize`` against bitsandbytes ``dequantize_4bit``, ``gguf.quants.dequantize``,
ml_dtypes ``astype``), and for NF4 ``kernel_vs_peer``, both kernels into reused outputs
(our launch against bitsandbytes' native CPU kernel called directly; its ``out=`` raises on
CPU). Peers run on the host (optional benchmark dependencies, skipped with a note when
missing; ``--no-peers`` leaves them out, as the GPU check does). OpenMP waits passively for
every library (torch's libgomp reads the policy when it loads). Warm buffers; every call takes
its turn in every round; G elem/s and GB/s of bytes read + written.
Clocks: ``device`` (default) times our kernel and the copy on the device (CUDA events, OpenCL
profiling, Vulkan timestamps; the host clock on the cpu); ``wall`` and ``cpu`` time every call
plus a synchronize on the host (``cpu``: CPU time of every thread, fairer on a loaded host).
Usage: python bench/dequant.py [--quick] [--elements 67108864] [--runs 5]
       [--devices cpu,opencl,vulkan,webgpu] [--no-peers] [--threads 1 --clock cpu]
Devices after the first also report ``time_vs_<first>``: their kernel's seconds over the first
device's in each round (``--devices vulkan:0,webgpu:0 --clock wall``: WGSL over GLSL on
lavapipe).
"""

from __future__ import annotations

import os

# Set before torch (a peer) loads its libgomp: see bench/kv_cache.py.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import ctypes
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
from hurray_gpu.format.descriptor.quant import MXFP, NF4, PerBlockAffine
from hurray_gpu.format.dtypes import buffer_size, by_name
from hurray_gpu.ops.dequantize import dequantize
from hurray_gpu.ops.plan import bind_inputs, elements_per_item, launch, plan_dequantize
from hurray_gpu.ops.quantize import SCALE_TYPE_TAGS, random_values
from hurray_gpu.parts import assemble
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.registry import resolve_device as device
from hurray_gpu.tensor import Tensor

from _timing import CLOCKS, Timed, copy_roof, interleaved, on_host, parse_args, ratio, time_vs

BLOCK = 32
ROW = 1024  # elements per row of the benchmark tensors (--elements is rounded down to rows)
# Host clocks for --clock wall / cpu (and for the host peers under every clock).
CLOCK: dict[str, Callable[[], float]] = {"device": time.perf_counter, **CLOCKS}


def random_tensor(rng: np.random.Generator, storage: str, n: int, quant: Any = None,
                  scales: np.ndarray | None = None) -> Tensor:
    """A [n / ROW, ROW] host tensor of random packed codes (and ``scales`` for ``quant``)."""
    return packed_tensor(storage, n, rng.integers(0, 256, buffer_size(by_name(storage), n),
                                                  dtype=np.uint8), quant, scales)


def packed_tensor(storage: str, n: int, data: np.ndarray, quant: Any = None,
                  scales: np.ndarray | None = None) -> Tensor:
    """A [n / ROW, ROW] host tensor of the packed codes ``data`` (and ``scales``)."""
    buffers = [data] + ([np.ascontiguousarray(scales).view(np.uint8)] if quant else [])
    desc = TensorDescriptor(by_name(storage), (n // ROW, ROW), RowMajor(),
                            tuple(BufferHandle(b.nbytes, 64) for b in buffers),
                            quantization=quant)
    tensor: Tensor = assemble(desc, buffers)
    return tensor


def _blocked(rng: np.random.Generator, storage: str, scheme: str, n: int) -> Tensor:
    if scheme == "nf4":
        scales = rng.random(n // 64, dtype=np.float32) + 0.5
        return random_tensor(rng, storage, n, NF4(1, 64, 1), scales)
    if scheme == "mxfp":  # e8m0 codes of moderate exponents (255 would be NaN, rejected)
        return random_tensor(rng, storage, n, MXFP(1, BLOCK, 1),
                             rng.integers(100, 150, n // BLOCK, dtype=np.uint8))
    scales = (rng.random(n // BLOCK) + 0.5).astype(np.float16)
    return random_tensor(rng, storage, n, PerBlockAffine(1, BLOCK, 1, None,
                                                         SCALE_TYPE_TAGS["float16"]), scales)


def _unpacked(storage: str, n: int) -> Callable[[np.random.Generator], Tensor]:
    return lambda r: random_tensor(r, storage, n)


def cases(n: int) -> list[tuple[str, str, Callable[[np.random.Generator], Tensor]]]:
    """(label, output dtype, tensor factory) for every measured operation."""
    out: list[tuple[str, str, Callable[[np.random.Generator], Tensor]]] = [
        ("NF4 -> float32", "float32", lambda r: _blocked(r, "uint4", "nf4", n)),
        ("NF4 -> bfloat16", "bfloat16", lambda r: _blocked(r, "uint4", "nf4", n)),
        ("Q4_0 (int4, f16 scale/32) -> float32", "float32",
         lambda r: _blocked(r, "int4", "per_block", n)),
        ("Q8_0 (int8, f16 scale/32) -> float32", "float32",
         lambda r: _blocked(r, "int8", "per_block", n)),
        ("Q8_0 (int8, f16 scale/32) -> float16", "float16",
         lambda r: _blocked(r, "int8", "per_block", n)),
        ("Q8_0 (int8, f16 scale/32) -> bfloat16", "bfloat16",
         lambda r: _blocked(r, "int8", "per_block", n)),
        ("MXFP4 (e2m1, e8m0/32) -> bfloat16", "bfloat16",
         lambda r: _blocked(r, "float4_e2m1", "mxfp", n)),
        ("MXFP6 (e2m3, e8m0/32) -> bfloat16", "bfloat16",
         lambda r: _blocked(r, "float6_e2m3", "mxfp", n)),
        ("MXFP8 (e4m3, e8m0/32) -> bfloat16", "bfloat16",
         lambda r: _blocked(r, "float8_e4m3", "mxfp", n)),
    ]
    for storage in ("float8_e4m3", "float8_e5m2", "float6_e2m3", "float6_e3m2",
                    "float4_e2m1"):
        out.append((f"{storage} -> float32", "float32", _unpacked(storage, n)))
    for storage in ("float8_e4m3", "float8_e5m2"):
        for o in ("float16", "bfloat16"):
            out.append((f"{storage} -> {o}", o, _unpacked(storage, n)))
    return out


def ours_runner(t: Tensor, out_dtype: str, dev: Any, clock: str,
                ept: int = 0) -> tuple[Timed, int, Buffer]:
    """(one timed kernel run on ``dev`` with warm, preallocated buffers, bytes moved, the
    output buffer). ``ept``: elements per work item (0: what dequantize() uses on ``dev``)."""
    dt = t.to(dev)
    plan = plan_dequantize(dt.descriptor, out_dtype, ept=ept or elements_per_item(dev))
    bufs = [b if isinstance(b, Buffer) else Buffer.from_bytes(dev, np.ascontiguousarray(b))
            for b in dt.buffers]
    inputs = bind_inputs(plan, dev, bufs)
    out = Buffer(dev, buffer_size(by_name(out_dtype), plan.count))
    err = Buffer(dev, 4)
    read = sum(int(h.byte_size) for h in t.descriptor.buffers)
    if clock == "device":  # the kernel alone, on the device's clock
        return lambda: float(launch(plan, dev, inputs, out, err, wait=True) or 0.0), \
            read + out.nbytes, out
    return on_host(lambda: launch(plan, dev, inputs, out, err), dev.synchronize,
                   CLOCK[clock]), read + out.nbytes, out


def api_runner(t: Tensor, out_dtype: str, dev: Any, clock: str) -> Timed:
    """``hg.dequantize`` of ``t`` (already on ``dev``), its output allocated as the API does."""
    dt = t.to(dev)
    return on_host(lambda: dequantize(dt, out_dtype, device=dev), dev.synchronize, CLOCK[clock])


@dataclass
class Peer:
    """A peer of one case: its public call, and for NF4 its native kernel into a reused output
    (``kernel``), the tensor of the same codes for us (``tensor``) and its output's bits."""

    name: str
    public: Callable[[], Any]
    kernel: Callable[[], Any] | None = None
    tensor: Tensor | None = None
    bits: Callable[[], np.ndarray] | None = None


def _bnb_nf4(label: str, n: int, rng: np.random.Generator) -> Peer:
    import bitsandbytes.functional as bnbf  # type: ignore[import-not-found]
    import torch  # type: ignore[import-not-found]
    from bitsandbytes.cextension import lib  # type: ignore[import-not-found]

    bf16 = "bfloat16" in label
    dtype = torch.bfloat16 if bf16 else torch.float32
    src = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(dtype)
    packed, state = bnbf.quantize_4bit(src, blocksize=64, quant_type="nf4")
    absmax = state.absmax.float().contiguous()
    codes = packed.view(torch.uint8).contiguous()
    out = torch.empty(n, dtype=dtype)
    native = lib.cdequantize_blockwise_cpu_nf4_bf16 if bf16 else \
        lib.cdequantize_blockwise_cpu_nf4_fp32
    args = (ctypes.c_void_p(codes.data_ptr()), ctypes.c_void_p(absmax.data_ptr()),
            ctypes.c_void_p(out.data_ptr()), ctypes.c_longlong(64), ctypes.c_longlong(1),
            ctypes.c_longlong(n))
    raw = codes.numpy().reshape(-1)
    # bitsandbytes packs an even element in the high nibble, Hurray in the low one.
    ours = packed_tensor("uint4", n, ((raw >> 4) | (raw << 4)).astype(np.uint8),
                         NF4(1, 64, 1), absmax.numpy())
    return Peer("bitsandbytes", lambda: bnbf.dequantize_4bit(packed, state),
                lambda: native(*args), ours,
                lambda: out.view(torch.int16 if bf16 else torch.int32).numpy().view(np.uint8))


def peer_runner(label: str, t: Tensor, rng: np.random.Generator) -> Peer:
    """The peer of ``label``; raises ImportError when it is not installed."""
    n = math.prod(int(d or 0) for d in t.shape)
    if label.startswith("NF4"):
        return _bnb_nf4(label, n, rng)
    if label.startswith(("Q4_0", "Q8_0")):
        from gguf import GGMLQuantizationType  # type: ignore[import-not-found]
        from gguf.quants import dequantize as gguf_dequantize  # type: ignore[import-not-found]
        from gguf.quants import quantize  # type: ignore[import-not-found]

        kind = GGMLQuantizationType.Q4_0 if label.startswith("Q4_0") else \
            GGMLQuantizationType.Q8_0
        raw = quantize(rng.standard_normal((n // ROW, ROW)).astype(np.float32), kind)
        return Peer("gguf.quants.dequantize", lambda: gguf_dequantize(raw, kind))
    if label.startswith("MXFP"):
        raise ImportError("no installed peer dequantizes MX formats on the CPU")
    import ml_dtypes  # noqa: F401  (the peer is ml_dtypes' astype)

    values = random_values(rng, label.split(" ")[0], (n,))  # one element per byte, as it takes
    return Peer("ml_dtypes astype", lambda: values.astype(np.float32))


def run_case(label: str, out_dtype: str, make: Callable[[np.random.Generator], Tensor],
             devs: list[Any], runs: int, clock: str, peers: bool,
             ept: int = 0) -> list[dict[str, Any]]:
    """One operation: ours (kernel and API) and the copy roof on each device, and the peer
    (API and, for NF4, kernel), interleaved. ``ept``: see :func:`ours_runner`."""
    rng = np.random.default_rng(7)
    t = make(rng)
    n = math.prod(int(d or 0) for d in t.shape)
    calls: dict[str, Timed] = {}
    moved: dict[str, int] = {}
    outs: dict[str, Buffer] = {}
    peer = None
    if peers:
        try:
            peer = peer_runner(label, t, rng)
            t = peer.tensor if peer.tensor is not None else t
            calls["peer"] = on_host(peer.public, clock=CLOCK[clock])
            if peer.kernel is not None:
                calls["peer kernel"] = on_host(peer.kernel, clock=CLOCK[clock])
        except ImportError as exc:
            print(f"  peer for {label!r} skipped: {exc}", file=sys.stderr)
    for dev in devs:
        timed, moved[dev.spec], outs[dev.spec] = ours_runner(t, out_dtype, dev, clock, ept)
        calls[dev.spec] = timed
        if peer is not None:
            calls[f"{dev.spec} api"] = api_runner(t, out_dtype, dev, clock)
        copy, timed, moved[f"{dev.spec} copy"] = copy_roof(dev, moved[dev.spec])
        calls[f"{dev.spec} copy"] = timed if clock == "device" else \
            on_host(copy, dev.synchronize, CLOCK[clock])
    took = interleaved(calls, runs)
    rows = []
    if peer is not None:
        rows.append({"op": label, "impl": peer.name, "device": "cpu", "elements": n,
                     "gelem_s": n / took["peer"].median / 1e9})
    for dev in devs:
        ours, roof = took[dev.spec], took[f"{dev.spec} copy"]
        gbps = ours.rates(moved[dev.spec] / 1e9)
        roof_gbps = roof.rates(moved[f"{dev.spec} copy"] / 1e9)
        row = {"op": label, "impl": "hurray_gpu", "device": dev.spec, "elements": n,
               "gelem_s": n / ours.median / 1e9, "gbps": gbps["median"],
               "gbps_range": [gbps["min"], gbps["max"]], "roof_gbps": roof_gbps["median"],
               "roof_gbps_range": [roof_gbps["min"], roof_gbps["max"]],
               "roof_fraction": gbps["median"] / roof_gbps["median"],
               "roof_fraction_range": ratio(list(roof.samples), list(ours.samples),
                                            moved[dev.spec] / moved[f"{dev.spec} copy"])[1]}
        if dev is not devs[0]:
            # The same kernels on another backend of the same hardware (webgpu:0 beside
            # vulkan:0, both lavapipe): its seconds over the first device's, per round.
            first = devs[0].spec
            row.update(time_vs(first, list(ours.samples), list(took[first].samples)))
        if peer is not None:
            row["peer"] = peer.name
            row["vs_peer"], row["vs_peer_range"] = ratio(
                list(took["peer"].samples), list(took[f"{dev.spec} api"].samples))
            if peer.kernel is not None and peer.bits is not None:
                if not np.array_equal(outs[dev.spec].numpy(), peer.bits()):
                    raise SystemExit(f"{label}: our output on {dev.spec} differs from "
                                     f"{peer.name}'s on the same codes")
                row["kernel_vs_peer"], row["kernel_vs_peer_range"] = ratio(
                    list(took["peer kernel"].samples), list(ours.samples))
        rows.append(row)
    del calls, outs  # frees every device buffer of this case before the next one
    for dev in devs:
        dev.allocator.free_cache()
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The printed table (one line per implementation and device)."""
    lines = ["roof: each device's own copy of the same bytes (read + write), same rounds",
             f"{'operation':38s} {'impl':28s} {'device':9s} {'Gelem/s':>8s} {'GB/s':>8s} "
             f"{'roof GB/s':>9s} {'roof':>6s} {'vs peer (APIs; kernels into reused outputs)'}"]
    for r in rows:
        gbps = f"{r['gbps']:8.2f}" if "gbps" in r else " " * 8
        roof = f"{r['roof_gbps']:9.2f}" if "roof_gbps" in r else " " * 9
        roof_f = f"{r['roof_fraction']:6.1%}" if "roof_fraction" in r else " " * 6
        ratio = f"{r['vs_peer']:7.2f}x" if r.get("vs_peer") else " " * 8
        if r.get("kernel_vs_peer"):
            ratio += f" kernel {r['kernel_vs_peer']:.2f}x"
        ratio += "".join(f" time/{k[8:]} {v:.2f}" for k, v in r.items()
                         if k.startswith("time_vs_") and not k.endswith("_range"))
        lines.append(f"{r['op']:38s} {r['impl']:28s} {r['device']:9s} {r['gelem_s']:8.3f} "
                     f"{gbps} {roof} {roof_f} {ratio}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--elements", type=int, default=64 * 1024 * 1024)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--devices", default="cpu", help="comma-separated device specs")
    parser.add_argument("--only", default="", help="run operations whose label contains this")
    parser.add_argument("--json", default="bench/out/dequant.json")
    parser.add_argument("--no-peers", action="store_true", help="leave out the host peers")
    parser.add_argument("--threads", type=int, default=0, help="OpenMP/torch threads (0: all)")
    parser.add_argument("--clock", choices=sorted(CLOCK), default="device")
    parser.add_argument("--ept", type=int, default=0,
                        help="elements per work item of our kernels (0: the device's default, "
                             "as dequantize() uses; for tuning sweeps)")
    args = parse_args(parser, {"elements": 1 << 16, "runs": 3}, argv)
    if args.threads:
        # Read by libgomp when the first kernel library loads, so set before any launch.
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        try:
            import torch  # type: ignore[import-not-found]

            torch.set_num_threads(args.threads)
        except ImportError:
            pass
    n = max(ROW, args.elements // ROW * ROW)
    devs = [device(spec) for spec in args.devices.split(",") if spec]
    rows: list[dict[str, Any]] = []
    for label, out_dtype, make in cases(n):
        if args.only in label:
            rows += run_case(label, out_dtype, make, devs, max(1, args.runs), args.clock,
                             not args.no_peers, args.ept)
    print(table(rows))
    fractions = [r["roof_fraction"] for r in rows if "roof_fraction" in r]
    if fractions:
        print(f"roof fraction: min {min(fractions):.1%}, median "
              f"{statistics.median(fractions):.1%}, max {max(fractions):.1%}")
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"elements": n, "runs": args.runs, "clock": args.clock,
                                "ept": args.ept or None,
                                "threads": args.threads or os.cpu_count(),
                                "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
                                "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
