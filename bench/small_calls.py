"""The fixed cost of a small call: microseconds per ``hg.dequantize`` and ``hg.materialize``
call on a host device, against the peer doing the same work through its public API.

Rows, at 4096 and 65536 elements (``--elements``):
  * NF4 -> float32 (one f32 absmax per 64): ``hg.dequantize`` against bitsandbytes
    ``dequantize_4bit`` on its own quantization of the same data (the codes are handed to us
    with the nibbles swapped into Hurray's order; both outputs are checked bit-identical);
  * int4 per-block -> float32 (one f32 scale per 64): ``hg.dequantize`` against bitsandbytes
    ``dequantize_4bit`` with ``quant_type="fp4"``, the closest 4-bit block-scaled format it
    has (the same shapes and bytes; the values differ, so ours is checked against NumPy);
  * tiled 32x32 float32 -> row-major: ``hg.materialize`` against the NumPy copy
    ``np.ascontiguousarray(a.reshape(gy, gx, 32, 32).transpose(0, 2, 1, 3))`` (outputs
    checked equal).

Both sides allocate a fresh output every call, as their public APIs do. One sample is a loop
of ``--calls`` calls timed with ``time.perf_counter_ns`` (a single call is too short for the
clock on a shared machine); the calls take turns in every round (bench/_timing.py), after a
warm-up round. Reported: min/median/max microseconds per call over ``--runs`` rounds, and the
peer's time over ours (``vs_peer``: above 1, ours is faster), min/median/max of the per-round
ratios. A peer that is not installed is left out with a note.
Usage: python bench/small_calls.py [--quick] [--elements 4096,65536] [--runs 5] [--calls 2000]
"""

from __future__ import annotations

import os

# Set before torch (bitsandbytes' backend) loads its libgomp: see bench/kv_cache.py.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import hurray_gpu as hg  # noqa: E402
from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor  # noqa: E402
from hurray_gpu.format.descriptor.layouts import Tiled  # noqa: E402
from hurray_gpu.format.descriptor.quant import NF4, PerBlockAffine  # noqa: E402
from hurray_gpu.format.dtypes import by_name  # noqa: E402
from hurray_gpu.parts import assemble  # noqa: E402

from _timing import Timed, interleaved, parse_args, ratio  # noqa: E402

BLOCK = 64  # elements per scale, both sides
TILE = 32


def per_call(fn: Callable[[], Any], calls: int) -> Timed:
    """Seconds per call of ``fn``, from one loop of ``calls`` calls."""

    def timed() -> float:
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        return (time.perf_counter_ns() - start) / calls / 1e9

    return timed


def four_bit(storage: str, quant: Any, codes: np.ndarray, scales: np.ndarray, n: int) -> Any:
    """A [n / 64, 64] host tensor of packed 4-bit ``codes`` and f32 ``scales``."""
    bufs = [np.ascontiguousarray(codes, np.uint8), np.ascontiguousarray(scales, np.float32)
            .view(np.uint8)]
    desc = TensorDescriptor(by_name(storage), (n // BLOCK, BLOCK), RowMajor(),
                            tuple(BufferHandle(b.nbytes, 64) for b in bufs), quantization=quant)
    return assemble(desc, bufs)


def dequant_case(kind: str, n: int, rng: np.random.Generator, dev: Any
                 ) -> tuple[Callable[[], Any], Callable[[], Any] | None, str]:
    """(ours, the peer or None, the peer's name) for ``kind`` ``"nf4"`` or ``"int4"``."""
    try:
        import bitsandbytes.functional as bnbf  # type: ignore[import-not-found]
        import torch  # type: ignore[import-not-found]
    except ImportError as exc:
        print(f"  bitsandbytes peer skipped: {exc}", file=sys.stderr)
        codes = rng.integers(0, 256, n // 2, dtype=np.uint8)
        scales = rng.random(n // BLOCK, dtype=np.float32) + 0.5
        quant = NF4(1, BLOCK, 1) if kind == "nf4" else PerBlockAffine(1, BLOCK, 1)
        t = four_bit("uint4" if kind == "nf4" else "int4", quant, codes, scales, n).to(dev)
        return lambda: hg.dequantize(t), None, ""
    src = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    packed, state = bnbf.quantize_4bit(src, blocksize=BLOCK,
                                       quant_type="nf4" if kind == "nf4" else "fp4")
    raw = packed.view(torch.uint8).numpy().reshape(-1)
    absmax = state.absmax.float().numpy()
    # bitsandbytes packs an even element in the high nibble, Hurray in the low one.
    codes = ((raw >> 4) | (raw << 4)).astype(np.uint8)
    if kind == "nf4":
        t = four_bit("uint4", NF4(1, BLOCK, 1), codes, absmax, n).to(dev)
        want = bnbf.dequantize_4bit(packed, state).numpy().reshape(-1)
    else:
        t = four_bit("int4", PerBlockAffine(1, BLOCK, 1), codes, absmax, n).to(dev)
        nib = np.stack([codes & 15, codes >> 4], axis=1).reshape(-1).astype(np.int8)
        signed = np.where(nib > 7, nib - 16, nib).astype(np.float32)
        want = (signed.reshape(-1, BLOCK) * absmax[:, None]).reshape(-1)
    got = hg.dequantize(t).to("cpu").numpy().reshape(-1)
    if not np.array_equal(got.view(np.uint32), want.astype(np.float32).view(np.uint32)):
        raise SystemExit(f"{kind}: hg.dequantize differs from the expected values at {n}")
    return (lambda: hg.dequantize(t)), (lambda: bnbf.dequantize_4bit(packed, state)), \
        "bitsandbytes dequantize_4bit" + ("" if kind == "nf4" else " (fp4)")


def materialize_case(n: int, dev: Any) -> tuple[Callable[[], Any], Callable[[], Any], str]:
    """(ours, NumPy's untile copy, its name) for a side x side tiled 32x32 float32 tensor."""
    side = int(round(n ** 0.5))
    grid = side // TILE
    tiles = np.arange(side * side, dtype=np.float32).reshape(grid, grid, TILE, TILE)
    dense = np.ascontiguousarray(tiles.transpose(0, 2, 1, 3)).reshape(side, side)
    host = hg.relayout(hg.from_numpy(dense), Tiled((TILE, TILE)))
    stored = np.asarray(host.buffers[0]).view(np.float32)  # tile after tile, as the peer reads
    t = host.to(dev)

    def peer() -> np.ndarray:
        return np.ascontiguousarray(stored.reshape(grid, grid, TILE, TILE)
                                    .transpose(0, 2, 1, 3)).reshape(side, side)

    if not (np.array_equal(peer(), dense)
            and np.array_equal(hg.materialize(t).to("cpu").numpy(), dense)):
        raise SystemExit(f"tiled {side}x{side}: the materialized tensors differ")
    return lambda: hg.materialize(t), peer, "NumPy reshape/transpose copy"


def run(n: int, dev: Any, runs: int, calls: int) -> list[dict[str, Any]]:
    """Every row at ``n`` elements on ``dev``: ours and the peers, interleaved."""
    rng = np.random.default_rng(19)
    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any] | None, str]] = {
        "NF4 -> float32 (hg.dequantize)": dequant_case("nf4", n, rng, dev),
        "int4 per-block -> float32 (hg.dequantize)": dequant_case("int4", n, rng, dev),
        f"tiled {TILE}x{TILE} float32 (hg.materialize)": materialize_case(n, dev),
    }
    timed: dict[str, Timed] = {}
    for op, (ours, peer, _) in cases.items():
        timed[op] = per_call(ours, calls)
        if peer is not None:
            timed[op + " peer"] = per_call(peer, calls)
    took = interleaved(timed, runs)
    rows = []
    for op, (_, peer, peer_name) in cases.items():
        mine = took[op]
        row: dict[str, Any] = {"op": op, "device": dev.spec, "elements": n,
                               "us_per_call": mine.median * 1e6,
                               "us_per_call_range": [mine.min * 1e6, mine.max * 1e6]}
        if peer is not None:
            theirs = took[op + " peer"]
            row |= {"peer": peer_name, "peer_us_per_call": theirs.median * 1e6,
                    "peer_us_per_call_range": [theirs.min * 1e6, theirs.max * 1e6]}
            row["vs_peer"], row["vs_peer_range"] = ratio(list(theirs.samples),
                                                         list(mine.samples))
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--elements", default="4096,65536",
                        help="comma-separated element counts (squares of multiples of 32)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed sample")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", default="bench/out/small_calls.json")
    args = parse_args(parser, {"runs": 3, "calls": 200}, argv)
    dev = hg.device(args.device)
    rows: list[dict[str, Any]] = []
    for n in (int(x) for x in args.elements.split(",") if x):
        rows += run(n, dev, max(3, args.runs), max(1, args.calls))
    print(f"{'operation':44s} {'elements':>8s} {'us/call (min-max)':>22s} "
          f"{'peer us/call':>13s} {'vs peer (min-max)':>20s}  peer")
    for r in rows:
        lo, hi = r["us_per_call_range"]
        ratio = (f"{r['vs_peer']:6.2f}x ({r['vs_peer_range'][0]:.2f}-{r['vs_peer_range'][1]:.2f})"
                 if "vs_peer" in r else "")
        print(f"{r['op']:44s} {r['elements']:8d} {r['us_per_call']:8.1f} ({lo:6.1f}-{hi:6.1f}) "
              f"{r.get('peer_us_per_call', float('nan')):13.1f} {ratio:>20s}  {r.get('peer', '')}")
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"device": dev.spec, "runs": args.runs, "calls": args.calls,
                                "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
                                "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
