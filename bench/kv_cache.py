"""Paged KV cache throughput: decode append (tokens/s), gather and prefill (GB/s) per backend.

Simulated decode (the issue's loop): sequences of random lengths; each step forks 10% of them,
appends one token per sequence (forks included) to every layer, then frees the forks. A timed
sample is as many steps as make about 2000 appends (one step of a small batch is too short to
time on a shared host). K and V
rows are already on the device, as a model produces them. The roof of gather and prefill (the
bulk append) is the device's own copy (``Buffer.copy_from`` on that device) of the same bytes,
timed in the same rounds; the GPU goal is at least 0.85 of it (``gather_vs_roof``,
``prefill_vs_roof``). The peer, in the same run, is the same cache written by hand with torch
on the device's torch counterpart (the GPU for cuda, the CPU otherwise): a Python block manager
(free list, reference counts, copy-on-write of the rows in use) plus index_copy_ /
index_select; its CPU pools are NumPy-backed (huge pages, as ours). When a host device is
measured, NumPy fancy indexing and a one-thread np.copyto are reported too. Device work is
timed on the device's clock (events; the host clock on the cpu). Warm, interleaved,
min/median/max of runs; every ratio also as [min, max] over the rounds (``*_range``).
Usage: python bench/kv_cache.py [--quick] [--runs 5] [--seqs 256] [--max-len 256] [--layers 8]
"""

from __future__ import annotations

import os

# torch ships its own libgomp, which reads OMP_WAIT_POLICY once, when torch is imported. Its
# default (spinning workers) then also governs the cpu backend's OpenMP kernels, and on a
# small machine each of their launches waits for spinning threads, many times slower.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from itertools import chain  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from hurray_gpu.errors import UnsupportedOpError  # noqa: E402
from hurray_gpu.kv_cache import PagedKVCache  # noqa: E402
from hurray_gpu.runtime.buffer import Buffer  # noqa: E402
from hurray_gpu.runtime.registry import devices  # noqa: E402

from _timing import Stats, Timed, copy_roof, median_s, on_device, on_host, parse_args, ratio, rounds  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "kv_cache.json"
PAGE = 16
# Distinct random rows generated per call of Shape.rows; longer inputs repeat them (values do
# not change what a row copy costs, and a GPU-sized input would take seconds to draw).
BASE_ROWS = 4096


class Shape:
    """The benchmark geometry: lengths per sequence, layers, heads, head_dim (fp16)."""

    def __init__(self, lens: np.ndarray, layers: int, heads: int, head_dim: int,
                 samples: int) -> None:
        self.lens, self.layers, self.heads, self.head_dim = lens, layers, heads, head_dim
        self.row_bytes = heads * head_dim * 2
        self.batch = len(lens) + len(lens) // 10  # sequences plus forks each step
        # Decode steps per timed sample: a small step is a few hundred microseconds, which
        # one reading of the clock on a shared host cannot time; a sample is >= ~2000 appends.
        self.per_sample = max(1, -(-2000 // (self.batch * layers)))
        steps = samples * self.per_sample
        # Room for every decode step (one page per sequence at most every PAGE steps, and a
        # copy-on-write page per fork) without growing the pool.
        self.pages = int(sum(-(-(int(n) + steps) // PAGE) for n in lens)) + 2 * self.batch

    def rows(self, n: int, seed: int) -> np.ndarray:
        """``n`` float16 rows: BASE_ROWS random ones, repeated."""
        rng = np.random.default_rng(seed)
        base = rng.standard_normal((min(n, BASE_ROWS), self.heads, self.head_dim))
        return np.resize(base.astype(np.float16), (n, self.heads, self.head_dim))


def _fill(cache: Any, seqs: list[int], shape: Shape) -> None:
    # Uploaded once: every layer appends the same device rows (no host copy per layer).
    rows = Buffer.from_bytes(cache.device, shape.rows(int(shape.lens.sum()), 0).view(np.uint8)
                             .reshape(-1))
    for layer in range(shape.layers):
        cache.append(seqs, layer, rows, rows, counts=[int(n) for n in shape.lens])
    rows.free()


def _rates(stats: Stats, amount: float) -> tuple[float, list[float]]:
    """(median rate, [min, max] rate) of ``amount`` per second."""
    rates = stats.rates(amount)
    return rates["median"], [rates["min"], rates["max"]]


def bench_device(spec: Any, shape: Shape, runs: int, kv_dtype: str | None = None,
                 peer: TorchPeer | None = None) -> dict[str, Any]:
    """Decode tokens/s, gather and prefill GB/s (K and V, read + write) on one device, and
    the device's copy of the same bytes (the roof of gather and prefill).

    With ``peer``, its decode step and gather are timed interleaved with ours.
    """
    cache = PagedKVCache(spec, shape.layers, shape.heads, shape.head_dim, shape.pages, PAGE,
                         "float16", kv_dtype)
    dev = cache.device
    seqs = [cache.add_sequence() for _ in shape.lens]
    _fill(cache, seqs, shape)
    rng = np.random.default_rng(0)
    k = Buffer.from_bytes(dev, shape.rows(shape.batch, 1).view(np.uint8).reshape(-1))
    v = Buffer.from_bytes(dev, shape.rows(shape.batch, 2).view(np.uint8).reshape(-1))

    def step() -> None:
        for _ in range(shape.per_sample):
            forks = [cache.fork(int(s)) for s in rng.choice(seqs, len(seqs) // 10,
                                                            replace=False)]
            batch = seqs + forks
            for layer in range(shape.layers):
                cache.append_decode(batch, layer, k, v)
            for f in forks:
                cache.free(f)

    calls = {"decode": on_device(dev, step)}
    if peer is not None:
        calls["torch decode"] = peer.timed(peer.steps)
    samples = rounds(calls, runs)
    total = int(sum(cache.seq_len(s, 0) for s in seqs))
    # Preallocated outputs, as the peer's index_select(out=...): no allocation is timed.
    outs = tuple(Buffer(dev, total * shape.row_bytes) for _ in range(2))
    moved = 2 * 2 * total * shape.row_bytes  # K and V, read + write
    _, roof_timed, copied = copy_roof(dev, moved)
    calls = {"gather": on_device(dev, lambda: cache.gather(seqs, 0, out=outs)),
             "roof": roof_timed}
    if peer is not None:
        calls["torch gather"] = peer.timed(peer.gather)
    samples |= rounds(calls, runs)
    counts = [cache.seq_len(s, 0) for s in seqs]
    cache.close()
    for out in outs:
        out.free()
    samples |= _prefill(spec, shape, counts, runs, kv_dtype, roof_timed)
    took = {name: Stats.of(got) for name, got in samples.items()}
    row: dict[str, Any] = {"device": str(spec) + (f" {kv_dtype}" if kv_dtype else ""),
                           "tokens": total, "steps_per_sample": shape.per_sample}
    appended = shape.batch * shape.layers * shape.per_sample
    for key, name, amount in (("decode_tokens_per_s", "decode", appended),
                              ("gather_gb_per_s", "gather", moved / 1e9),
                              ("prefill_gb_per_s", "prefill", moved / 1e9),
                              ("roof_copy_gb_per_s", "roof", copied / 1e9)):
        row[key], row[f"{key}_range"] = _rates(took[name], amount)
    roof = copied / took["roof"].median  # bytes per second, in the gather's rounds
    row["gather_vs_roof"] = moved / took["gather"].median / roof
    row["prefill_vs_roof"] = moved / took["prefill"].median / (copied / took["prefill roof"].median)
    # Every ratio also round by round (the calls compared took turns): [min, max].
    ranges = [("gather_vs_roof", "roof", "gather", moved / copied),
              ("prefill_vs_roof", "prefill roof", "prefill", moved / copied)]
    if peer is not None:
        row["torch_device"] = str(peer.device)
        row["torch_decode_tokens_per_s"] = appended / took["torch decode"].median
        row["torch_gather_gb_per_s"] = peer.gather_bytes() / took["torch gather"].median / 1e9
        row["decode_vs_torch"] = row["decode_tokens_per_s"] / row["torch_decode_tokens_per_s"]
        row["gather_vs_torch"] = row["gather_gb_per_s"] / row["torch_gather_gb_per_s"]
        row["torch_gather_vs_roof"] = peer.gather_bytes() / took["torch gather"].median / roof
        row["torch_decode_tokens_per_s_range"] = _rates(took["torch decode"], appended)[1]
        row["torch_gather_gb_per_s_range"] = _rates(took["torch gather"],
                                                    peer.gather_bytes() / 1e9)[1]
        ranges += [("decode_vs_torch", "torch decode", "decode", 1.0),
                   ("gather_vs_torch", "torch gather", "gather", moved / peer.gather_bytes())]
    for key, num, den, scale in ranges:
        row[f"{key}_range"] = ratio(samples[num], samples[den], scale)[1]
    dev.allocator.free_cache()
    return row


def _prefill(spec: Any, shape: Shape, counts: list[int], runs: int, kv_dtype: str | None,
             roof: Timed) -> dict[str, list[float]]:
    """The bulk append of every sequence's rows into an empty one-layer cache, and the roof,
    interleaved."""
    total = sum(counts)
    cache = PagedKVCache(spec, 1, shape.heads, shape.head_dim, -(-total // PAGE) + len(counts),
                         PAGE, "float16", kv_dtype)
    rows = Buffer.from_bytes(cache.device, shape.rows(total, 3).view(np.uint8).reshape(-1))
    seqs: list[int] = []

    def once() -> None:
        for s in seqs:
            cache.free(s)
        seqs[:] = [cache.add_sequence() for _ in counts]
        cache.append(seqs, 0, rows, rows, counts=counts)

    try:
        return rounds({"prefill": on_device(cache.device, once), "prefill roof": roof}, runs)
    finally:
        cache.close()
        rows.free()


def _zeros(torch: Any, shape: tuple[int, int], where: Any) -> Any:
    """A zeroed float16 tensor on ``where``; on the CPU over NumPy memory (huge pages, as our
    cpu Buffers)."""
    if where.type == "cpu":
        return torch.from_numpy(np.zeros(shape, np.float16))
    return torch.zeros(shape, dtype=torch.float16, device=where)


class TorchPaged:
    """The peer: a paged KV cache as users write it with torch (on the CPU or a GPU).

    A Python block manager (free list, reference counts, block tables, copy-on-write of a
    shared last page) computes the slot of each new token once per step; every layer then
    does index_copy_ into its K and V pools. Gather is index_select with an out= tensor.
    """

    def __init__(self, torch: Any, shape: Shape, where: Any) -> None:
        self.torch, self.ps, self.where = torch, PAGE, where
        slots, width = shape.pages * PAGE, shape.heads * shape.head_dim
        # On the CPU NumPy-backed, like our cpu pools: NumPy asks for transparent huge pages on
        # large arrays and torch's allocator does not; with 4 KiB pages each scattered row
        # costs a TLB miss, which slows scattered row copies in C and the torch decode step
        # alike: a difference of allocators, not of caches.
        self.pools = [[_zeros(torch, (slots, width), where) for _ in range(2)]
                      for _ in range(shape.layers)]
        self.free_pages = list(range(shape.pages - 1, -1, -1))
        self.refs = [0] * shape.pages
        self.tables: dict[int, list[int]] = {}
        self.lens: dict[int, int] = {}
        self.next_id = 0

    def add(self) -> int:
        self.tables[self.next_id], self.lens[self.next_id] = [], 0
        self.next_id += 1
        return self.next_id - 1

    def fork(self, seq: int) -> int:
        child = self.add()
        self.tables[child], self.lens[child] = list(self.tables[seq]), self.lens[seq]
        for p in self.tables[child]:
            self.refs[p] += 1
        return child

    def free(self, seq: int) -> None:
        for p in self.tables.pop(seq):
            self.refs[p] -= 1
            if not self.refs[p]:
                self.free_pages.append(p)
        del self.lens[seq]

    def _new_page(self) -> int:
        page = self.free_pages.pop()
        self.refs[page] = 1
        return page

    def slots(self, batch: list[int], counts: list[int]) -> Any:
        """Slots of the new tokens (copy-on-write and new pages done)."""
        out, cow = [], []
        for seq, n in zip(batch, counts, strict=True):
            table, start = self.tables[seq], self.lens[seq]
            for pos in range(start, start + n):
                j = pos // self.ps
                if j == len(table):
                    table.append(self._new_page())
                elif self.refs[table[j]] > 1:
                    new = self._new_page()
                    self.refs[table[j]] -= 1
                    # Like ours (and vLLM's block copy minus the unused tail): only the rows
                    # the sequence holds in that page are copied.
                    cow.append((table[j], new, pos % self.ps))
                    table[j] = new
                out.append(table[j] * self.ps + pos % self.ps)
            self.lens[seq] = start + n
        if cow:
            self._copy_rows(cow)
        return self.torch.tensor(out, dtype=self.torch.int64, device=self.where)

    def _copy_rows(self, cows: list[tuple[int, int, int]]) -> None:
        """Copy-on-write: the first ``rows`` slots of page src into page dst, every pool."""
        src = self.torch.tensor([s * self.ps + i for s, _, n in cows for i in range(n)],
                                dtype=self.torch.int64, device=self.where)
        dst = self.torch.tensor([d * self.ps + i for _, d, n in cows for i in range(n)],
                                dtype=self.torch.int64, device=self.where)
        if not src.numel():
            return
        tmp = self.torch.empty(src.numel(), self.pools[0][0].shape[1], dtype=self.torch.float16,
                               device=self.where)
        for pools in self.pools:
            for pool in pools:
                pool.index_copy_(0, dst, self.torch.index_select(pool, 0, src, out=tmp))

    def gather_slots(self, seqs: list[int]) -> Any:
        """Every token's slot, sequence by sequence, in one vectorized pass (as ours)."""
        ps = self.ps
        lens = np.fromiter((self.lens[s] for s in seqs), np.int64, len(seqs))
        sizes = np.fromiter((len(self.tables[s]) for s in seqs), np.int64, len(seqs))
        flat = np.fromiter(chain.from_iterable(self.tables[s] for s in seqs), np.int64,
                           int(sizes.sum()))
        pos = np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(np.cumsum(lens) - lens,
                                                                     lens)
        page = flat[np.repeat(np.cumsum(sizes) - sizes, lens) + pos // ps]
        return self.torch.from_numpy(page * ps + pos % ps).to(self.where)


class TorchPeer:
    """The hand-written torch cache on torch device ``device``, filled like ours: ``step()``
    and ``gather()`` to time (with :meth:`timed`)."""

    def __init__(self, torch: Any, shape: Shape, device: Any) -> None:
        self.torch, self.shape, self.device = torch, shape, device
        self.cache = peer = TorchPaged(torch, shape, device)
        self.seqs = [peer.add() for _ in shape.lens]
        width = shape.heads * shape.head_dim

        def rows(n: int, seed: int) -> Any:
            return torch.from_numpy(shape.rows(n, seed).reshape(n, width)).to(device)

        slots = peer.slots(self.seqs, [int(n) for n in shape.lens])
        filled = rows(int(shape.lens.sum()), 0)
        for pools in peer.pools:
            for pool in pools:
                pool.index_copy_(0, slots, filled)
        del filled
        self.rng = np.random.default_rng(0)
        self.k, self.v = rows(shape.batch, 1), rows(shape.batch, 2)
        self.outs: list[Any] = []

    def timed(self, fn: Callable[[], Any]) -> Timed:
        """``fn`` timed on torch's clock for its device: CUDA events on its current stream on
        a GPU, the host clock on the CPU."""
        if self.device.type != "cuda":
            return on_host(fn)
        cuda = self.torch.cuda
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)

        def timed() -> float:
            start.record()
            fn()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end)) / 1e3

        return timed

    def steps(self) -> None:
        """One sample's decode steps, each: 10% forks, one token per sequence into every
        layer, free forks."""
        peer = self.cache
        for _ in range(self.shape.per_sample):
            forks = [peer.fork(int(s)) for s in self.rng.choice(self.seqs, len(self.seqs) // 10,
                                                                replace=False)]
            batch = self.seqs + forks
            slots = peer.slots(batch, [1] * len(batch))
            for kp, vp in peer.pools:
                kp.index_copy_(0, slots, self.k)
                vp.index_copy_(0, slots, self.v)
            for f in forks:
                peer.free(f)

    def gather_bytes(self) -> int:
        """Bytes a gather of layer 0 moves (K and V, read + write)."""
        return 2 * 2 * sum(self.cache.lens[s] for s in self.seqs) * self.shape.row_bytes

    def gather(self) -> None:
        """index_select of layer 0's K and V into preallocated outputs (its best case)."""
        index = self.cache.gather_slots(self.seqs)
        if not self.outs or self.outs[0].shape[0] != index.shape[0]:
            self.outs = [_zeros(self.torch, (index.shape[0], self.k.shape[1]), self.device)
                         for _ in range(2)]
        kp, vp = self.cache.pools[0]
        self.torch.index_select(kp, 0, index, out=self.outs[0])
        self.torch.index_select(vp, 0, index, out=self.outs[1])


def bench_host(shape: Shape, runs: int) -> dict[str, float]:
    """NumPy fancy-indexing gather and a one-thread np.copyto of the same bytes."""
    total = int(shape.lens.sum())
    width = shape.row_bytes // 2
    rng = np.random.default_rng(1)
    slots = rng.permutation(shape.pages * PAGE)[:total]
    pools = [np.ones((shape.pages * PAGE, width), np.float16) for _ in range(2)]
    dense = [np.empty((total, width), np.float16) for _ in range(2)]
    moved = 2 * 2 * total * shape.row_bytes

    def roof() -> None:
        for d, p in zip(dense, pools, strict=True):
            np.copyto(d, p[:total])

    def take() -> None:
        for d, p in zip(dense, pools, strict=True):
            np.take(p, slots, axis=0, out=d)

    return {"numpy_copy_gb_per_s": moved / median_s(roof, runs) / 1e9,
            "numpy_gather_gb_per_s": moved / median_s(take, runs) / 1e9}


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seqs", type=int, default=256)
    parser.add_argument("--max-len", type=int, default=256,
                        help="lengths are uniform in 1..max-len (the issue: 4096 on a GPU)")
    parser.add_argument("--layers", type=int, default=8, help="the issue: 32 on a GPU")
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--devices", default="", help="comma-separated specs (default: all)")
    parser.add_argument("--kv-dtype", default=None, choices=["int8", "float8_e4m3"],
                        help="also measure a quantized cache on each device")
    parser.add_argument("--json", type=Path, default=OUT)
    return parse_args(parser, {"seqs": 8, "max_len": 32, "layers": 1, "runs": 3})


def _print(args: argparse.Namespace, shape: Shape, peers: dict[str, float],
           rows: list[dict[str, Any]], skipped: list[dict[str, Any]]) -> None:
    print(f"{args.seqs} seqs, lengths 1..{args.max_len} ({int(shape.lens.sum())} tokens), "
          f"{args.layers} layers, {args.heads} heads x {args.head_dim} fp16, page {PAGE}; "
          f"decode batch {shape.batch} (10% forks), {shape.per_sample} steps per sample; "
          f"median of {args.runs}")
    if peers:
        print("host peers: " + ", ".join(f"{k} {v:.3g}" for k, v in peers.items()))
    print(f"{'device':20s} {'decode tok/s':>13s} {'torch tok/s':>12s} {'ratio':>6s} "
          f"{'gather GB/s':>12s} {'torch GB/s':>11s} {'ratio':>6s} {'roof GB/s':>10s} "
          f"{'vs roof':>8s} {'prefill GB/s':>13s} {'vs roof':>8s}")
    nan = float("nan")
    for r in rows:
        print(f"{r['device']:20s} {r['decode_tokens_per_s']:13.0f} "
              f"{r.get('torch_decode_tokens_per_s', nan):12.0f} "
              f"{r.get('decode_vs_torch', nan):6.2f} {r['gather_gb_per_s']:12.2f} "
              f"{r.get('torch_gather_gb_per_s', nan):11.2f} {r.get('gather_vs_torch', nan):6.2f} "
              f"{r['roof_copy_gb_per_s']:10.2f} {r['gather_vs_roof']:8.2f} "
              f"{r['prefill_gb_per_s']:13.2f} {r['prefill_vs_roof']:8.2f}")
    for skip in skipped:
        print(f"{skip['device']:20s} skipped: {skip['why'][:110]}")


def _peer(torch: Any, dev: Any, shape: Shape, made: dict[str, TorchPeer | None]) -> Any:
    """The torch peer for ``dev`` (one per torch device, made on first use): on the GPU for a
    cuda/rocm device (torch calls both cuda), on the CPU otherwise; None without torch, or
    when this torch cannot reach the GPU (said once)."""
    if torch is None:
        return None
    where = torch.device("cuda", dev.index) if dev.kind in ("cuda", "rocm") else \
        torch.device("cpu")
    if str(where) not in made:
        if where.type == "cuda" and not torch.cuda.is_available():
            print(f"torch peer for {dev.spec} skipped: this torch has no GPU support",
                  file=sys.stderr)
            made[str(where)] = None
        else:
            made[str(where)] = TorchPeer(torch, shape, where)
    return made[str(where)]


def main() -> None:
    args = _args()
    lens = np.random.default_rng(0).integers(1, args.max_len + 1, args.seqs)
    wanted = {s for s in args.devices.split(",") if s}
    kinds = [None] + ([args.kv_dtype] if args.kv_dtype else [])
    runs = [(dev, kv) for dev in devices() for kv in kinds
            if dev.kind != "reference"
            and (not wanted or dev.spec in wanted or dev.kind in wanted)]
    if wanted and not runs:
        raise SystemExit(f"no local device matches --devices {args.devices!r}; "
                         f"have {[d.spec for d in devices()]}")
    # Pool room for the decode steps of each run; a torch peer steps alongside every one.
    shape = Shape(lens, args.layers, args.heads, args.head_dim,
                  samples=(len(runs) + 1) * (args.runs + 1))
    # NumPy's gather and copy only say something next to a device on the host.
    on_host_too = any(d.kind == "cpu" or getattr(d, "emulated", False) for d, _ in runs)
    peers = bench_host(shape, args.runs) if on_host_too else {}
    try:
        import torch
    except ImportError:
        torch = None
    made: dict[str, TorchPeer | None] = {}
    rows, skipped = [], []
    for dev, kv in runs:
        try:
            rows.append(bench_device(dev.spec, shape, args.runs, kv,
                                     _peer(torch, dev, shape, made)))
        except UnsupportedOpError as exc:  # e.g. a page beyond a binding range
            skipped.append({"device": dev.spec, "kv_dtype": kv, "why": str(exc)})
    _print(args, shape, peers, rows, skipped)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"config": vars(args) | {"json": str(args.json)},
                                     "peers": peers, "devices": rows, "skipped": skipped},
                                    indent=2))


if __name__ == "__main__":
    main()
