"""Checkpoint conversion: `hg.convert` of synthetic GGUF files (MB/s of source per GGUF type)
and of bitsandbytes NF4 and compressed-tensors int4 safetensors, and the peak memory of
converting the largest file.

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
         ("Q5_1", ("Q5_1",), 0.25), ("Q4_K", ("Q4_K",), 0.25), ("Q5_K", ("Q5_K",), 0.25),
         ("MXFP4", ("MXFP4",), 0.25),
         ("bnb NF4 (safetensors)", ("bnb-nf4",), 0.25),
         ("CT int4 (safetensors)", ("ct-int4",), 0.25))

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
        if block > 1:  # f16 scale (and Q4_1/Q5_1/Q4_K/Q5_K offset) 0.01: finite and nonzero;
            # MXFP4's e8m0 byte 0x1F and three code bytes
            raw.reshape(-1, size)[:, :4] = np.frombuffer(np.float16([0.01, 0.01]).tobytes(),
                                                         np.uint8)
        elif qtype.name in ("F16", "BF16"):
            raw &= 0x3F  # finite values
        writer.write_tensor_data(raw)
    writer.close()
    return max(p[4] * p[5] for p in plan)


def _safetensors(path: Path, plan: list[tuple[str, str, tuple[int, ...], Any]]) -> None:
    """A safetensors file of ``(name, dtype, shape, make)`` tensors, each made (``make()``,
    bytes) and written one at a time."""
    header, at = {}, 0
    for name, dtype, shape, _ in plan:
        size = int(np.prod(shape)) * {"U8": 1, "F32": 4, "I32": 4, "I64": 8, "BF16": 2}[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + size]}
        at += size
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for *_, make in plan:
            f.write(make())


def write_nf4(path: Path, total_bytes: int, tensor_bytes: int = 128 << 20) -> int:
    """bitsandbytes NF4 weights of ``ROW`` columns (blocks of 64, double-quantized absmax, as
    QuantState.as_dict(packed=True) lays them out) with random codes; the largest packed
    weight's bytes."""
    from hurray_gpu.ops.plan import nf4_table

    rng, plan, left, rows = np.random.default_rng(22), [], total_bytes, 0
    while left > 0:
        rows = max(1, min(left, tensor_bytes) // (ROW // 2))
        blocks, w = rows * ROW // 64, f"blk.{len(plan) // 6}.weight"
        state = json.dumps({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16",
                            "shape": [rows, ROW], "nested_blocksize": 256,
                            "nested_dtype": "float32", "nested_offset": 0.5}).encode()
        plan += [(w, "U8", (rows * ROW // 2,), lambda n=rows * ROW // 2: rng.bytes(n)),
                 (w + ".absmax", "U8", (blocks,), lambda n=blocks: rng.bytes(n)),
                 (w + ".quant_map", "F32", (16,), lambda: nf4_table().tobytes()),
                 (w + ".nested_absmax", "F32", (-(-blocks // 256),),
                  lambda n=-(-blocks // 256): np.full(n, 0.25, np.float32).tobytes()),
                 (w + ".nested_quant_map", "F32", (256,),
                  lambda: np.linspace(0, 1, 256, dtype=np.float32).tobytes()),
                 (w + ".quant_state.bitsandbytes__nf4", "U8", (len(state),), lambda s=state: s)]
        left -= rows * ROW // 2
    _safetensors(path, plan)
    return max(p[2][0] for p in plan if p[1] == "U8")


def write_ct(path: Path, total_bytes: int, tensor_bytes: int = 128 << 20) -> int:
    """compressed-tensors pack-quantized int4 weights of ``ROW`` columns (symmetric, group
    128, bf16 scales) with random codes, and the config.json beside; the largest packed
    weight's bytes."""
    rng, plan, left = np.random.default_rng(22), [], total_bytes
    while left > 0:
        rows = max(1, min(left, tensor_bytes) // (ROW // 2))
        p = f"blk.{len(plan) // 3}"
        plan += [(p + ".weight_packed", "I32", (rows, ROW // 8),
                  lambda n=rows * ROW // 2: rng.bytes(n)),
                 (p + ".weight_scale", "BF16", (rows, ROW // 128),
                  lambda n=rows * ROW // 128: np.full(n, 0x3C23, np.uint16).tobytes()),
                 (p + ".weight_shape", "I64", (2,), lambda r=rows: np.int64([r, ROW]).tobytes())]
        left -= rows * ROW // 2
    _safetensors(path, plan)
    weights = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
               "group_size": 128, "actorder": None}
    (path.parent / "config.json").write_text(json.dumps({"quantization_config": {
        "format": "pack-quantized", "config_groups": {"group_0": {"weights": weights}}}}))
    return max(int(np.prod(p[2])) * 4 for p in plan if p[1] == "I32")


def _write(folder: Path, kinds: tuple[str, ...], total: int) -> tuple[Path, int]:
    """The case's source file and its largest tensor's bytes."""
    if kinds[0] == "bnb-nf4":
        return folder / "nf4.safetensors", write_nf4(folder / "nf4.safetensors", total)
    if kinds[0] == "ct-int4":
        return folder / "model.safetensors", write_ct(folder / "model.safetensors", total)
    return folder / f"{kinds[0]}.gguf", write_synthetic(folder / f"{kinds[0]}.gguf", kinds, total)


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
        src, largest = _write(folder, kinds, int(size_mib * share) << 20)
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
        for path in (src, out, copy, folder / "config.json"):
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
