"""Paged KV cache throughput: append (decode and prefill) and gather, per local backend.

Simulated decode: sequences of random lengths, one token appended per sequence per step, 10%
of sequences forked each step (the forks append too, then are freed). Compared in the same
run with the memory-copy roof (np.copyto of the same bytes) and with the same operations
written by hand in NumPy (fancy indexing) and torch (index_copy_ / index_select) on the CPU.
Warm, median of runs. Usage: python bench/kv_cache.py [--runs 5] [--seqs 256] [--max-len 512]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hurray_gpu.devices_api import devices
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kv_cache import PagedKVCache

OUT = Path(__file__).resolve().parent / "out" / "kv_cache.json"
HEADS, HEAD_DIM, PAGE = 8, 128, 16
ROW_BYTES = HEADS * HEAD_DIM * 2


def _median(fn: Callable[[], Any], runs: int) -> float:
    fn()  # warm-up: compiles, first touch
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _build(spec: Any, lens: np.ndarray, layers: int,
           kv_dtype: str | None = None) -> tuple[PagedKVCache, list[int]]:
    pages = int(sum(-(-(n + 64) // PAGE) for n in lens)) * 2 + 64
    cache = PagedKVCache(spec, layers, HEADS, HEAD_DIM, pages, PAGE, "float16", kv_dtype)
    seqs = [cache.add_sequence() for _ in lens]
    rows = np.ones((int(lens.sum()), HEADS, HEAD_DIM), np.float16)
    for layer in range(layers):
        cache.append(seqs, layer, rows, rows, counts=[int(n) for n in lens])
    return cache, seqs


def _decode_step(cache: PagedKVCache, seqs: list[int], layers: int, rng: np.random.Generator,
                 token: np.ndarray) -> int:
    forks = [cache.fork(s) for s in rng.choice(seqs, len(seqs) // 10, replace=False)]
    batch = seqs + forks
    rows = np.broadcast_to(token, (len(batch), HEADS, HEAD_DIM))
    for layer in range(layers):
        cache.append_decode(batch, layer, rows, rows)
    for f in forks:
        cache.free(f)
    return len(batch) * layers


def bench_device(spec: Any, lens: np.ndarray, layers: int, runs: int,
                 kv_dtype: str | None = None) -> dict[str, Any]:
    """Decode append tokens/s, prefill append and gather GB/s (fp16 bytes) on one device."""
    cache, seqs = _build(spec, lens, layers, kv_dtype)
    rng = np.random.default_rng(0)
    token = np.ones((1, HEADS, HEAD_DIM), np.float16)
    tokens_per_step = (len(seqs) + len(seqs) // 10) * layers
    t_decode = _median(lambda: _decode_step(cache, seqs, layers, rng, token), runs)
    total = int(sum(cache.seq_len(s, 0) for s in seqs))
    t_gather = _median(lambda: cache.gather(seqs, 0), runs)
    prefill = PagedKVCache(spec, 1, HEADS, HEAD_DIM, -(-total // PAGE) + len(seqs), PAGE,
                           "float16", kv_dtype)
    pseqs = [prefill.add_sequence() for _ in seqs]
    counts = [cache.seq_len(s, 0) for s in seqs]
    rows = np.ones((total, HEADS, HEAD_DIM), np.float16)

    def prefill_once() -> None:
        for s in pseqs:
            prefill.free(s)
        pseqs[:] = [prefill.add_sequence() for _ in seqs]
        prefill.append(pseqs, 0, rows, rows, counts=counts)

    t_prefill = _median(prefill_once, runs)
    moved = 2 * 2 * total * ROW_BYTES  # K and V, read + write
    return {"device": cache.device.spec + (f" {kv_dtype}" if kv_dtype else ""), "tokens": total,
            "decode_tokens_per_s": tokens_per_step / t_decode,
            "prefill_gb_per_s": moved / t_prefill / 1e9,
            "gather_gb_per_s": moved / t_gather / 1e9}


def bench_peers(lens: np.ndarray, runs: int) -> dict[str, float]:
    """The same gather and prefill scatter by hand: NumPy, torch, and the np.copyto roof."""
    total = int(lens.sum())
    slots_n = -(-total // PAGE) * PAGE + PAGE * len(lens)
    rng = np.random.default_rng(1)
    slots = rng.permutation(slots_n)[:total]
    pool = np.ones((slots_n, ROW_BYTES // 2), np.float16)
    dense = np.empty((total, ROW_BYTES // 2), np.float16)
    moved = 2 * 2 * total * ROW_BYTES
    out = {"roof_copy_gb_per_s": moved / _median(
        lambda: (np.copyto(dense, pool[:total]), np.copyto(dense, pool[:total])), runs) / 1e9}
    out["numpy_gather_gb_per_s"] = moved / _median(
        lambda: (np.take(pool, slots, axis=0, out=dense),
                 np.take(pool, slots, axis=0, out=dense)), runs) / 1e9

    def np_scatter() -> None:
        pool[slots] = dense
        pool[slots] = dense

    out["numpy_scatter_gb_per_s"] = moved / _median(np_scatter, runs) / 1e9
    try:
        import torch
    except ImportError:
        return out
    tp, td = torch.from_numpy(pool), torch.from_numpy(dense)
    ti = torch.from_numpy(slots.astype(np.int64))
    out["torch_gather_gb_per_s"] = moved / _median(
        lambda: (torch.index_select(tp, 0, ti, out=td), torch.index_select(tp, 0, ti, out=td)),
        runs) / 1e9
    out["torch_scatter_gb_per_s"] = moved / _median(
        lambda: (tp.index_copy_(0, ti, td), tp.index_copy_(0, ti, td)), runs) / 1e9
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seqs", type=int, default=256)
    parser.add_argument("--max-len", type=int, default=512)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--kv-dtype", default=None, choices=["int8", "float8_e4m3"],
                        help="also measure a quantized cache on each device")
    parser.add_argument("--json", type=Path, default=OUT)
    args = parser.parse_args()
    lens = np.random.default_rng(0).integers(1, args.max_len + 1, args.seqs)
    peers = bench_peers(lens, args.runs)
    kinds = [None] + ([args.kv_dtype] if args.kv_dtype else [])
    rows, skipped = [], []
    for dev in devices():
        for kv in kinds:
            if dev.kind == "reference":
                continue
            try:
                rows.append(bench_device(dev, lens, args.layers, args.runs, kv))
            except UnsupportedOpError as exc:  # e.g. a pool beyond lavapipe's binding range
                skipped.append({"device": dev.spec, "kv_dtype": kv, "why": str(exc)})
    print(f"{args.seqs} seqs, lengths 1..{args.max_len} ({int(lens.sum())} tokens), "
          f"{HEADS} heads x {HEAD_DIM} fp16, page {PAGE}, {args.layers} layers; median of "
          f"{args.runs}")
    print("peers: " + ", ".join(f"{k} {v:.2f}" for k, v in peers.items()))
    roof = peers["roof_copy_gb_per_s"]
    best_gather = max(peers.get("torch_gather_gb_per_s", 0), peers["numpy_gather_gb_per_s"])
    best_scatter = max(peers.get("torch_scatter_gb_per_s", 0), peers["numpy_scatter_gb_per_s"])
    print(f"{'device':16s} {'decode tok/s':>13s} {'prefill GB/s':>13s} {'gather GB/s':>12s} "
          f"{'gather/roof':>12s} {'gather/peer':>12s} {'prefill/peer':>13s}")
    for r in rows:
        r["gather_vs_roof"] = r["gather_gb_per_s"] / roof
        r["gather_vs_best_peer"] = r["gather_gb_per_s"] / best_gather
        r["prefill_vs_best_peer"] = r["prefill_gb_per_s"] / best_scatter
        print(f"{r['device']:16s} {r['decode_tokens_per_s']:13.0f} {r['prefill_gb_per_s']:13.2f}"
              f" {r['gather_gb_per_s']:12.2f} {r['gather_vs_roof']:12.2f}"
              f" {r['gather_vs_best_peer']:12.2f} {r['prefill_vs_best_peer']:13.2f}")
    for skip in skipped:
        print(f"{skip['device']:16s} skipped: {skip['why'][:110]}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"config": vars(args) | {"json": str(args.json)},
                                     "peers": peers, "devices": rows, "skipped": skipped},
                                    indent=2))


if __name__ == "__main__":
    main()
