"""The fixed cost of a small call: microseconds per ``hg.dequantize``, ``hg.materialize`` and
KV-cache gather call on a host device, against the peer doing the same work through its public
API.

Rows, at 4096, 65536, 262144 and 1048576 elements (``--elements``):
  * NF4 -> float32 (one f32 absmax per 64): ``hg.dequantize`` against bitsandbytes
    ``dequantize_4bit`` on its own quantization of the same data (the codes are handed to us
    with the nibbles swapped into Hurray's order; both outputs are checked bit-identical);
  * int4 per-block -> float32 (one f32 scale per 64): ``hg.dequantize`` against bitsandbytes
    ``dequantize_4bit`` with ``quant_type="fp4"``, the closest 4-bit block-scaled format it
    has (the same shapes and bytes; the values differ, so ours is checked against NumPy);
  * a square float32 layout -> row-major (``--layouts``): ``hg.materialize`` against the NumPy
    reshape/transpose copy of the stored elements (outputs checked equal): tiled 32x32
    ``np.ascontiguousarray(a.reshape(gy, gx, 32, 32).transpose(0, 2, 1, 3))``, nested 64x64
    tiles of 8x8 tiles (a 6-axis transpose), Morton (one axis per address bit, the y bits
    first) and column-major (``a.reshape(nx, ny).T``).
And once (``--kv-tokens``, 0 to leave it out): a paged KV-cache gather of one layer's K and V
(16 sequences of 1..64 tokens plus decode steps, 8 x 128 float16, pages of 16) into reused
outputs, ``PagedKVCache.gather(out=...)`` against the same cache written by hand with torch
(bench/kv_cache.py's peer: its slot map, then ``index_select(out=...)`` per role; outputs
checked equal).

Both sides allocate as their public APIs do (a fresh output per call, or both into reused
outputs). One sample is a loop of ``--calls`` calls (at 2^16 elements or fewer; larger sizes
take proportionally fewer) timed with ``time.perf_counter_ns`` (a single call is too short for
the clock on a shared machine); the calls take turns in every round (bench/_timing.py), after a
warm-up round. Reported: min/median/max microseconds per call over ``--runs`` rounds, and the
peer's time over ours (``vs_peer``: above 1, ours is faster), min/median/max of the per-round
ratios. A peer that is not installed is left out with a note.
Usage: python bench/small_calls.py [--quick] [--elements 4096,65536] [--layouts tiled,morton]
       [--kv-tokens 573] [--runs 5] [--calls 2000]
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
from kv_cache import PAGE, Shape, TorchPeer, _fill  # noqa: E402

import hurray_gpu as hg  # noqa: E402
from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor  # noqa: E402
from hurray_gpu.format.descriptor.layouts import ColMajor, Morton, Tiled  # noqa: E402
from hurray_gpu.format.descriptor.quant import NF4, PerBlockAffine  # noqa: E402
from hurray_gpu.format.dtypes import by_name  # noqa: E402
from hurray_gpu.kv_cache import PagedKVCache  # noqa: E402
from hurray_gpu.parts import assemble  # noqa: E402
from hurray_gpu.runtime.buffer import Buffer  # noqa: E402

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


def _untile(grid: int, tile: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: a.reshape(grid, grid, tile, tile).transpose(0, 2, 1, 3)


def _layouts(side: int) -> dict[str, tuple[Any, Callable[[np.ndarray], np.ndarray]]]:
    """Each layout the rows cover, with the NumPy view that reads its storage in row-major
    order (the peer copies it with ``np.ascontiguousarray``)."""
    bits = (side - 1).bit_length()

    def nested(a: np.ndarray) -> np.ndarray:  # [gy, gx, 8, 8 (tiles of a tile), 8, 8]
        grid = side // 64
        return a.reshape(grid, grid, 8, 8, 8, 8).transpose(0, 2, 4, 1, 3, 5)

    def morton(a: np.ndarray) -> np.ndarray:  # address bits ... y1 x1 y0 x0 (Hurray's order)
        axes = list(range(1, 2 * bits, 2)) + list(range(0, 2 * bits, 2))
        return a.reshape((2,) * (2 * bits)).transpose(axes)

    return {"tiled": (Tiled((TILE, TILE)), _untile(side // TILE, TILE)),
            "nested": (Tiled((64, 64), inner_layout=4, inner=Tiled((8, 8))), nested),
            "morton": (Morton((bits, bits)), morton),
            "col_major": (ColMajor(), lambda a: a.reshape(side, side).T)}


LAYOUT_NAMES = {"tiled": f"tiled {TILE}x{TILE}", "nested": "nested tiles 64x64 of 8x8",
                "morton": "Morton", "col_major": "column-major"}


def materialize_case(n: int, dev: Any, layout: str
                     ) -> tuple[Callable[[], Any], Callable[[], Any], str]:
    """(ours, NumPy's reshape/transpose copy, its name) for a side x side float32 tensor
    stored in ``layout``."""
    side = int(round(n ** 0.5))
    lay, view = _layouts(side)[layout]
    dense = np.random.default_rng(7).standard_normal((side, side)).astype(np.float32)
    host = hg.relayout(hg.from_numpy(dense), lay)
    stored = np.asarray(host.buffers[0]).view(np.float32)  # the storage order, as the peer reads
    t = host.to(dev)

    def peer() -> np.ndarray:
        return np.ascontiguousarray(view(stored)).reshape(side, side)

    if not (np.array_equal(peer(), dense)
            and np.array_equal(hg.materialize(t).to("cpu").numpy(), dense)):
        raise SystemExit(f"{layout} {side}x{side}: the materialized tensors differ")
    return lambda: hg.materialize(t), peer, "NumPy reshape/transpose copy"


def kv_case(tokens: int, dev: Any) -> tuple[Callable[[], Any], Callable[[], Any] | None, str]:
    """(our gather, torch's or None, its name) of a cache of 16 sequences of 1..64 tokens, each
    longer by the decode steps that bring the total to ``tokens`` or just above (573: three)."""
    lens = np.random.default_rng(0).integers(1, 65, 16)
    steps = max(0, -(-(tokens - int(lens.sum())) // len(lens)))
    shape = Shape(lens + steps, 1, 8, 128, samples=1)
    cache = PagedKVCache(dev.spec, 1, 8, 128, shape.pages, PAGE, "float16")
    seqs = [cache.add_sequence() for _ in lens]
    _fill(cache, seqs, shape)
    total = int(shape.lens.sum())
    outs = tuple(Buffer(cache.device, total * shape.row_bytes) for _ in range(2))

    def ours() -> Any:
        return cache.gather(seqs, 0, out=outs)

    try:
        import torch
    except ImportError as exc:
        print(f"  torch peer skipped: {exc}", file=sys.stderr)
        return ours, None, ""
    peer = TorchPeer(torch, shape, torch.device("cpu"))
    peer.gather()
    if not np.array_equal(ours()[0].numpy().view(np.uint16).reshape(total, -1),
                          peer.outs[0].numpy().view(np.uint16)):
        raise SystemExit("KV gather: ours differs from torch's")
    return ours, peer.gather, "torch index_select (bench/kv_cache.py's paged cache)"


def run(n: int, dev: Any, runs: int, calls: int, layouts: list[str],
        kv_tokens: int = 0) -> list[dict[str, Any]]:
    """Every row at ``n`` elements on ``dev`` (and the KV gather of ``kv_tokens`` tokens):
    ours and the peers, interleaved."""
    rng = np.random.default_rng(19)
    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any] | None, str]] = {
        "NF4 -> float32 (hg.dequantize)": dequant_case("nf4", n, rng, dev),
        "int4 per-block -> float32 (hg.dequantize)": dequant_case("int4", n, rng, dev),
        **{f"{LAYOUT_NAMES[lay]} float32 (hg.materialize)": materialize_case(n, dev, lay)
           for lay in layouts}}
    elements = dict.fromkeys(cases, n)
    if kv_tokens:
        ours, peer, peer_name = kv_case(kv_tokens, dev)
        tokens = int(ours()[2][-1])
        op = f"KV gather, {tokens} tokens, 8 x 128 fp16 (PagedKVCache.gather)"
        cases[op], elements[op] = (ours, peer, peer_name), 2 * tokens * 8 * 128
    # Calls per sample shrink with the size: a sample stays about as long at every size.
    calls = max(3, calls * 65536 // max(n, 65536))
    timed: dict[str, Timed] = {}
    for op, (ours, peer, _) in cases.items():
        timed[op] = per_call(ours, calls)
        if peer is not None:
            timed[op + " peer"] = per_call(peer, calls)
    took = interleaved(timed, runs)
    rows = []
    for op, (_, peer, peer_name) in cases.items():
        mine = took[op]
        row: dict[str, Any] = {"op": op, "device": dev.spec, "elements": elements[op],
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
    parser.add_argument("--elements", default="4096,65536,262144,1048576",
                        help="comma-separated element counts (squares of powers of 2, >= 4096)")
    parser.add_argument("--layouts", default=",".join(LAYOUT_NAMES),
                        help=f"materialized layouts, of {', '.join(LAYOUT_NAMES)}")
    parser.add_argument("--kv-tokens", type=int, default=573,
                        help="tokens of the KV gather row (0: none)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed sample")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", default="bench/out/small_calls.json")
    args = parse_args(parser, {"runs": 3, "calls": 200, "elements": "4096,65536"}, argv)
    dev = hg.device(args.device)
    layouts = [x for x in args.layouts.split(",") if x]
    if unknown := set(layouts) - set(LAYOUT_NAMES):
        raise SystemExit(f"unknown layouts {sorted(unknown)}; have {', '.join(LAYOUT_NAMES)}")
    rows: list[dict[str, Any]] = []
    for i, n in enumerate(int(x) for x in args.elements.split(",") if x):
        rows += run(n, dev, max(3, args.runs), max(1, args.calls), layouts,
                    args.kv_tokens if i == 0 else 0)
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
