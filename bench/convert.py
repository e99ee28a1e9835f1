"""Checkpoint conversion: `hg.convert` of synthetic GGUF files, MB/s of source per GGUF type,
and the peak memory of converting the largest file.

The limit it is compared with is the work a streaming converter cannot avoid: copying the same
file (read, write, fsync; `hg.convert` writes atomically and fsyncs too), timed in the same
rounds, turns alternating. Outputs are deleted before every timed call of either side (so
neither pays for unlinking the last one). Peak memory is measured in a fresh process
(the peak resident set, VmHWM, reset just before converting, minus the resident set then) and stated against the largest tensor.
Usage: python bench/convert.py [--size-mib 2048] [--runs 3] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import on_host, parse_args, ratio, rounds, spread  # noqa: E402

GOAL_MB_PER_S = 500.0  # issue 22: direct mappings at >= 500 MB/s of source on a dev machine
ROW = 4096  # elements per row of every synthetic tensor
# (name in the report, GGML types of the file's tensors, share of --size-mib)
CASES = (("direct (F32, F16, BF16)", ("F32", "F16", "BF16"), 1.0), ("Q8_0", ("Q8_0",), 0.25),
         ("Q4_0", ("Q4_0",), 0.25), ("Q5_0", ("Q5_0",), 0.25), ("Q4_1", ("Q4_1",), 0.25),
         ("Q5_1", ("Q5_1",), 0.25))

RSS_CHILD = r"""
import json, sys
import hurray_gpu as hg
import hurray_gpu.io.convert  # code and libraries are loaded before the baseline

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])

# Reset the peak (VmHWM) to the current RSS: the import's own transient peak would hide the
# conversion's (Linux >= 4.0).
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = status("VmRSS")
result = hg.convert(sys.argv[1], sys.argv[2])
print(json.dumps({"before_kib": before, "peak_kib": status("VmHWM"), "tensors": result.tensors}))
"""

def write_synthetic(path: Path, kinds: tuple[str, ...], total_bytes: int,
                    tensor_bytes: int = 128 << 20) -> int:
    """Write a GGUF file of about ``total_bytes`` of tensors (types cycling through ``kinds``,
    at most ``tensor_bytes`` each) one tensor at a time with gguf-py; quantized blocks get a
    finite nonzero scale and random codes. Returns the largest tensor's byte count."""
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    plan, left, rng = [], total_bytes, np.random.default_rng(22)
    while left > 0:
        kind = kinds[len(plan) % len(kinds)]
        qtype = getattr(gguf.GGMLQuantizationType, kind)
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        row_bytes = ROW // block * size
        rows = max(1, min(left, tensor_bytes) // row_bytes)
        plan.append((f"blk.{len(plan)}.weight", qtype, block, size, rows, row_bytes))
        writer.add_tensor_info(plan[-1][0], (rows, row_bytes), np.dtype(np.uint8),
                               rows * row_bytes, raw_dtype=qtype)
        left -= rows * row_bytes
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, qtype, block, size, rows, row_bytes in plan:
        raw = rng.integers(0, 256, (rows, row_bytes), dtype=np.uint8)
        if block > 1:  # f16 scale (and Q4_1/Q5_1 offset) 0.01: finite and nonzero
            raw.reshape(-1, size)[:, :4] = np.frombuffer(np.float16([0.01, 0.01]).tobytes(),
                                                         np.uint8)
        elif qtype.name in ("F16", "BF16"):
            raw &= 0x3F  # finite values
        writer.write_tensor_data(raw)
    writer.close()
    return max(p[4] * p[5] for p in plan)


def peak_rss(src: Path, dst: Path) -> dict[str, Any]:
    """Convert ``src`` in a fresh process: its RSS before (KiB) and its peak while converting."""
    done = subprocess.run([sys.executable, "-c", RSS_CHILD, str(src), str(dst)],
                          capture_output=True, text=True, timeout=1800, check=True,
                          env={**os.environ, "HURRAY_GPU_PROGRESS": "0"})
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _copy(src: Path, dst: Path) -> None:
    shutil.copyfile(src, dst)
    fd = os.open(dst, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fresh(dst: Path, work: Any) -> Any:
    """``work`` timed after ``dst`` is removed (untimed)."""
    timed = on_host(work)

    def call() -> float:
        dst.unlink(missing_ok=True)
        return timed()

    return call


def measure(folder: Path, size_mib: int, runs: int) -> list[dict[str, Any]]:
    """One row per case: convert and copy MB/s over interleaved rounds, and their ratio."""
    import hurray_gpu as hg

    rows = []
    for name, kinds, share in CASES:
        src = folder / f"{kinds[0]}.gguf"
        largest = write_synthetic(src, kinds, int(size_mib * share) << 20)
        out, copy = folder / "out.hrry", folder / "copy.bin"
        calls = {"convert": _fresh(out, lambda s=src, o=out: hg.convert(s, o, progress=False)),
                 "copy": _fresh(copy, lambda s=src, c=copy: _copy(s, c))}
        got = rounds(calls, runs)
        mb = sum(e.nbytes for e in _entries(src)) / 1e6
        conv = [mb / s for s in got["convert"]]
        rows.append({"case": name, "source_mib": round(os.path.getsize(src) / 2**20, 1),
                     "largest_tensor_mib": round(largest / 2**20, 1),
                     "convert_mb_per_s": spread(conv)[0], "convert_mb_per_s_range": spread(conv)[1],
                     "copy_mb_per_s": spread([mb / s for s in got["copy"]])[0],
                     "convert_over_copy_ratio": ratio(got["copy"], got["convert"])[0],
                     "convert_over_copy_ratio_range": ratio(got["copy"], got["convert"])[1],
                     "goal_mb_per_s": GOAL_MB_PER_S if share == 1.0 else None})
        if share == 1.0:
            rss = peak_rss(src, out)
            grown = max(rss["peak_kib"] - rss["before_kib"], 0) / 1024
            rows[-1].update(peak_rss_mib=round(rss["peak_kib"] / 1024, 1),
                            rss_growth_mib=round(grown, 1),
                            rss_growth_over_largest_tensor=round(grown * 2**20 / largest, 2))
        for path in (src, out, copy):
            path.unlink(missing_ok=True)
    return rows


def _entries(src: Path) -> list[Any]:
    from hurray_gpu.io.convert import open_source

    with open_source(src) as source:
        return list(source.entries)


def main(argv: list[str] | None = None) -> int:
    """Run the cases and write the JSON report (default bench/out/convert.json)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mib", type=int, default=2048,
                        help="size of the direct-types file (the quantized ones: a quarter)")
    parser.add_argument("--runs", type=int, default=3, help="rounds (>= 3)")
    parser.add_argument("--dir", type=Path, default=None, help="where the files go (a temp dir)")
    parser.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "convert.json")
    args = parse_args(parser, {"size_mib": 128, "runs": 3}, argv)
    with tempfile.TemporaryDirectory(prefix="hurray_gpu_convert_", dir=args.dir) as tmp:
        rows = measure(Path(tmp), args.size_mib, max(3, args.runs))
    for r in rows:
        print(f"{r['case']:<24} {r['source_mib']:8.1f} MiB  convert {r['convert_mb_per_s']:7.0f}"
              f" MB/s  copy {r['copy_mb_per_s']:7.0f} MB/s  convert/copy "
              f"{r['convert_over_copy_ratio']:.2f} {r['convert_over_copy_ratio_range']}"
              + (f"  peak RSS +{r['rss_growth_mib']} MiB (largest tensor "
                 f"{r['largest_tensor_mib']} MiB)" if "rss_growth_mib" in r else ""))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"runs": args.runs, "results": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
