"""Codec throughput: Hurray descriptors, a 1 MB .hrry index, and VIR0 decode/encode.

Warm; median and [min, max] (``*_range``) of several runs. Prints a table and writes JSON.
Usage: python bench/codec.py [--runs 7] [--json bench/out/codec.json]
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import vyre
from hurray_gpu import Tensor, decode_descriptor, open_file, save
from hurray_gpu.format import descriptor as d
from hurray_gpu.format.dtypes import by_name

from _timing import Stats, stats_s

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"




def _mixed_descriptors() -> list[bytes]:
    """Golden vectors plus quantized, sparse, tiled and paged descriptors."""
    blobs = [p.read_bytes() for p in sorted((GOLDEN / "hurray" / "descriptors").glob("*.bin"))]
    f32, i4 = "float32", "int4"
    extra = [
        d.TensorDescriptor(by_name(i4), (64, 128),
                           d.RowMajor(), (d.BufferHandle(4096), d.BufferHandle(256)),
                           quantization=d.PerChannelAffine(axis=0, scale_buffer_index=1)),
        d.TensorDescriptor(by_name(f32), (8, 8), d.Tiled((4, 4)), (d.BufferHandle(256),)),
        d.TensorDescriptor(by_name(f32), (4, 5), d.CSR(3),
                           (d.BufferHandle(12), d.BufferHandle(24), d.BufferHandle(40))),
    ]
    return blobs + [x.encode() for x in extra]


def bench_descriptors(runs: int) -> dict[str, Any]:
    """Decode 10,000 descriptors (a mix cycling through the sample set)."""
    blobs = _mixed_descriptors()
    batch = [blobs[i % len(blobs)] for i in range(10_000)]
    took = stats_s(lambda: [decode_descriptor(b) for b in batch], runs)
    return _row("decode 10,000 descriptors", took, len(batch), "per_second")


def _row(op: str, took: Stats, amount: float, unit: str) -> dict[str, Any]:
    """Median seconds and ``amount`` per second (``unit``), each with its [min, max]."""
    rates = took.rates(amount)
    return {"op": op, "seconds": took.median, "seconds_range": [took.min, took.max],
            unit: rates["median"], f"{unit}_range": [rates["min"], rates["max"]]}


def bench_index(runs: int, tmp: Path) -> dict[str, Any]:
    """Open a .hrry file whose index is ~1 MB (CRC-32C check plus the whole index decode).

    Entries may not alias each other's bytes, so the file holds ~4,400 distinct empty tensors
    with 200-byte names (each takes one 4 KiB alignment slot): a ~1 MB index in an ~18 MB file.
    """
    empty = Tensor.from_numpy(np.zeros(0, dtype=np.float32))
    n = (1 << 20) // (34 + 200) + 1
    path = tmp / "big.hrry"
    save(path, {f"{i:08d}".ljust(200, "x"): empty for i in range(n)})
    data_len = path.stat().st_size
    with path.open("rb") as f:
        f.seek(data_len - 40)
        index_length = struct.unpack("<QQ", f.read(16))[1]

    def open_all() -> None:
        with open_file(path) as f:
            assert len(f) == n

    return _row(f"open .hrry with a {index_length / 1e6:.2f} MB index ({n} entries)",
                stats_s(open_all, runs), index_length / 1e6, "mb_per_s")


def _largest_blob() -> tuple[str, bytes]:
    """The largest golden VIR0 blob of a checkout; an installed package has no tests/, so its
    copy of this suite encodes vyre's BLAKE3 chunk program instead."""
    paths = sorted((GOLDEN / "vyre").glob("[kv]*.vir"), key=lambda p: p.stat().st_size)
    if paths:
        return paths[-1].name, paths[-1].read_bytes()
    from vyre.programs.blake3 import blake3_chunks_program

    return "BLAKE3 chunk program", vyre.to_wire(blake3_chunks_program())


def bench_vyre(runs: int) -> list[dict[str, Any]]:
    """VIR0 decode and encode throughput on the largest golden blob."""
    name, blob = _largest_blob()
    program = vyre.from_wire(blob)
    reps = 200
    rows = []
    for op, fn in (("decode", lambda: vyre.from_wire(blob)),
                   ("encode", lambda: vyre.to_wire(program))):
        took = stats_s(lambda fn=fn: [fn() for _ in range(reps)], runs)
        per_call = Stats(took.min / reps, took.median / reps, took.max / reps)
        rows.append(_row(f"vyre {op} {name} ({len(blob)} B)", per_call, len(blob) / 1e6,
                         "mb_per_s"))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run every codec benchmark, print the table and write JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "out" / "codec.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        rows = [bench_descriptors(args.runs), bench_index(args.runs, Path(tmp)),
                *bench_vyre(args.runs)]
    for row in rows:
        rate = (f"{row['per_second']:12,.0f} /s" if "per_second" in row
                else f"{row['mb_per_s']:10.2f} MB/s")
        print(f"{row['op']:60s} {row['seconds'] * 1e3:10.3f} ms  {rate}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
