"""The README's Performance tables: generated from the committed bench JSON (docs/bench/), and
the generator's rows, ranges and reports of what is missing."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hurray_gpu.cli import bench, main
from hurray_gpu.cli.bench_readme import BEGIN, END, SUITES, num, render, replace_block, span, three
from hurray_gpu.errors import HurrayGPUError

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "docs" / "bench"


def _block(text: str) -> str:
    return text.split(BEGIN, 1)[1].split(END, 1)[0]


def test_readme_tables_are_rendered_from_the_committed_json() -> None:
    names = {p.name for p in STORE.iterdir()}
    assert names <= {"run.json"} | {f"{suite}.json" for suite, _, _ in SUITES}, names
    assert "run.json" in names and len(names) > 2
    want, _ = render(STORE)
    assert _block((ROOT / "README.md").read_text(encoding="utf-8")) == "\n" + want, (
        "README.md's Performance tables differ from docs/bench/: run "
        "`hurray-gpu bench --readme docs/bench` (or regenerate from a new run, "
        "docs/benchmarks.md)")


def test_numbers_and_ranges() -> None:
    assert [num(v) for v in (0.3, 0.01234, 1.5, 9.999, 17.94, 99.96, 27485.4, 1e6)] == [
        "0.300", "0.0123", "1.50", "10.0", "17.9", "100", "27,500", "1,000,000"]
    assert span(2.53, 2.412, 2.6, "GB/s") == "2.53 (2.41-2.60) GB/s"
    assert three(0.53, 0.51, 0.557, "of copy") == "0.510 / 0.530 / 0.557 of copy"
    assert three(4.9, 4.1, 5.2) == "4.10 / 4.90 / 5.20"


RUN = {"machine": "Test CPU, 4 cores, Linux 6.1, Python 3.11.0", "date": "2030-01-02 03:04 UTC",
       "commit": "0123456789", "command": "hurray-gpu bench", "mode": "full",
       "devices": [{"spec": "cpu:0", "name": "x86_64", "emulated": False},
                   {"spec": "opencl:0", "name": "pocl cpu", "emulated": True}],
       "suites": {suite: {"returncode": 0, "args": []} for suite, _, _ in SUITES}}
NF4 = {"op": "NF4 -> float32", "impl": "hurray_gpu", "device": "cpu:0", "elements": 2048,
       "gelem_s": 2.5, "gbps": 12.5, "gbps_range": [12.0, 13.0], "roof_gbps": 25.0,
       "roof_fraction": 0.5, "roof_fraction_range": [0.48, 0.52], "vs_peer": 5.0,
       "vs_peer_range": [4.5, 5.5], "kernel_vs_peer": 6.0, "kernel_vs_peer_range": [5.8, 6.2],
       "peer": "bitsandbytes dequantize_4bit", "threads": 2}
MXFP4 = {**{k: v for k, v in NF4.items() if not k.startswith("kernel")},
         "op": "MXFP4 -> bfloat16", "vs_peer": None, "vs_peer_range": None, "peer": None}
LAYOUT = {"gbps": 4.0, "gbps_range": [3.5, 4.5], "copy_gbps": 10.0, "copy_gbps_range": [9, 11],
          "fraction_of_copy": 0.4, "fraction_of_copy_range": [0.35, 0.45]}
CSR = {"side": 256, "density": 0.05, "seconds": 0.002, "seconds_range": [0.0019, 0.0021],
       "fresh_seconds": 0.003, "fresh_seconds_range": [0.0028, 0.0032],
       "scipy_warm_seconds": 0.004, "scipy_warm_seconds_range": [0.0039, 0.0041],
       "scipy_fresh_seconds": 0.0045, "scipy_fresh_seconds_range": [0.0044, 0.0047],
       "speedup_vs_scipy_fresh": 1.5, "speedup_vs_scipy_fresh_range": [1.4, 1.6],
       "speedup_vs_scipy_warm": 2.0, "speedup_vs_scipy_warm_range": [1.9, 2.1],
       "speedup_vs_scipy": 1.5}
KV = {"device": "cpu:0", "tokens": 573, "decode_tokens_per_s": 27485.0,
      "decode_tokens_per_s_range": [25000.0, 30000.0], "gather_gb_per_s": 5.0,
      "gather_gb_per_s_range": [4.5, 5.5], "prefill_gb_per_s": 7.5,
      "prefill_gb_per_s_range": [7.0, 8.0], "roof_copy_gb_per_s": 12.0,
      "roof_copy_gb_per_s_range": [11.0, 13.0], "gather_vs_roof": 0.42,
      "gather_vs_roof_range": [0.4, 0.44], "prefill_vs_roof": 0.62,
      "prefill_vs_roof_range": [0.6, 0.64], "torch_device": "cpu",
      "torch_decode_tokens_per_s": 50000.0, "torch_decode_tokens_per_s_range": [48000, 52000],
      "torch_gather_gb_per_s": 9.0, "torch_gather_gb_per_s_range": [8.5, 9.5],
      "decode_vs_torch": 0.55, "decode_vs_torch_range": [0.5, 0.6], "gather_vs_torch": 0.56,
      "gather_vs_torch_range": [0.52, 0.6]}
TRANSFER = {"device": "opencl:0", "memory_class": "standard", "bit_exact": False,
            "h2d_gbps": 10.0, "h2d_gbps_range": [9.0, 11.0], "d2h_gbps": 8.0,
            "d2h_gbps_range": [7.5, 8.5], "numpy_copy_gbps": 12.0,
            "numpy_copy_gbps_range": [11.5, 12.5], "h2d_vs_copy": 0.83,
            "h2d_vs_copy_range": [0.8, 0.9], "d2h_vs_copy": 0.67, "d2h_vs_copy_range": [0.6, 0.7]}
TIMED = {"seconds": 0.002, "seconds_median": 0.0025, "seconds_range": [0.002, 0.003],
         "speedup_vs_reference": 500.0, "speedup_vs_reference_median": 400.0,
         "speedup_vs_reference_range": [333.0, 500.0]}


def fixture() -> dict[str, Any]:
    """A small run of every suite, in the JSON shapes the suites write (dequant: the schema
    with per-row ranges and peer names)."""
    return copy.deepcopy({
        "run": RUN,
        "dequant": {"elements": 2048, "runs": 5, "clock": "device", "threads": None, "rows": [
            {"op": "NF4 -> float32", "impl": "bitsandbytes dequantize_4bit", "device": "cpu",
             "elements": 2048, "gelem_s": 0.5}, NF4, MXFP4]},
        "layout": {"sides": [64, 256], "dtype": "float32", "runs": 3, "sizes": {
            "64": {"cpu:0": {"layouts": {"morton": LAYOUT}, "csr_to_dense": []}},
            "256": {"cpu:0": {"copy_roof_gbps": 10.0, "layouts": {"tiled_32x32": LAYOUT},
                              "csr_to_dense": [CSR]}}}},
        "small_calls": {"runs": 5, "calls": 2000, "rows": [
            {"op": "NF4 -> float32 (hg.dequantize)", "device": "cpu:0", "elements": 4096,
             "us_per_call": 25.0, "us_per_call_range": [22.0, 30.0],
             "peer": "bitsandbytes dequantize_4bit", "peer_us_per_call": 60.0,
             "peer_us_per_call_range": [55.0, 70.0], "vs_peer": 2.4,
             "vs_peer_range": [2.0, 2.8]}]},
        "kv_cache": {"config": {"seqs": 16, "max_len": 64, "layers": 1, "heads": 8,
                                "head_dim": 128, "runs": 3},
                     "devices": [KV, {k: v for k, v in KV.items()
                                      if not k.startswith(("torch", "decode_vs", "gather_vs_t"))}
                                 | {"device": "opencl:0"}],
                     "skipped": [{"device": "vulkan:0", "kv_dtype": None,
                                  "why": "a page beyond a binding range"}]},
        "transfer": {"bytes": 4 << 20, "runs": 3, "results": [TRANSFER]},
        "vyre_exec": {
            "matmul": {"n": 128, "reference_s": 1.0, "how": "4 of 64 workgroups, scaled x16",
                       "devices": {"cpu:0 plain": TIMED}},
            "blake3": {"mib": 1.0, "reference_s": 40.0, "reference_kib": 16, "devices": {
                "cpu:0": {**TIMED, "mib_per_s": 500.0, "mib_per_s_median": 400.0,
                          "mib_per_s_range": [333.0, 500.0]}}},
            "kernel_overhead": {"cpu:0": {"call_us": 13.0, "call_us_range": [12.0, 20.0],
                                          "overhead_us": 6.0, "overhead_us_range": [5.0, 8.0],
                                          "goal_us": 10.0}},
            "tiled_host_vs_opencl": {"n": 128, "rounds": 5, "cpu_ms": [4.0, 5.0, 6.0],
                                     "opencl_ms": [5.0, 6.0, 9.0], "ratio": [1.1, 1.2, 1.5],
                                     "cpu_time_ratio": [1.05, 1.15, 1.3]}},
        "vyre_loop_bound": {"rounds": 3, "rows": [
            {"device": "cpu:0", "program": "loop_sum", "bounded_ms": 2.5,
             "bounded_ms_range": [2.4, 2.6], "unbounded_ms": 2.0, "unbounded_ms_range": [1.9, 2.1],
             "bounded_over_unbounded": 1.25, "bounded_over_unbounded_range": [1.2, 1.3]}]},
        "crmath": {"n": 4096, "runs": 3, "clock": "cpu", "rows": [
            {"function": "SIN", "libm": "sinf", "domain": [-100, 100], "vs_peer": 0.5,
             "vs_peer_range": [0.4, 0.6], "ours_gelem_s": 0.1, "ours_gelem_s_range": [0.09, 0.11],
             "libm_gelem_s": 0.2, "libm_gelem_s_range": [0.19, 0.21], "same_as_libm": 0.99}]},
        "dlpack": {"hurray -> torch": 5.0, "rows": [
            {"path": "hurray -> torch", "peer": "torch -> torch", "us": 5.0,
             "us_range": [4.5, 6.0], "peer_us": 12.0, "peer_us_range": [11.0, 13.0],
             "vs_peer": 2.4, "vs_peer_range": [2.0, 2.6]}]},
        "transport": {"runs": 3, "flight_batch_bytes": 4 << 20, "kv_tokens": 4096,
                      "kv_geometry": [2, 8, 128, 514, 16], "rows": [
            {"case": "get 1 MiB from the in-memory registry", "metric": "GB/s", "ours": 1.5,
             "ours_range": [1.2, 1.6], "peer": "raw socket recv_into", "peer_value": 2.0,
             "peer_value_range": [1.9, 2.2], "ratio": 0.75, "ratio_range": [0.6, 0.8],
             "ratio_label": "of raw", "goal": ">= 0.9"},
            {"case": "get 1 MiB from the in-memory registry", "metric": "GB/s", "ours": 1.5,
             "ours_range": [1.2, 1.6], "peer": "Arrow Flight do_get", "peer_value": None,
             "peer_value_range": None, "ratio": None, "ratio_range": None,
             "ratio_label": "x Flight", "goal": ">= 2", "missing": "pyarrow is not installed"},
            {"case": "transcode int4 per-block -> bfloat16 (2 MiB out)", "metric": "GB/s",
             "ours": 0.5, "ours_range": [0.4, 0.6], "peer": "plain get of the result's bytes",
             "peer_value": 1.0, "peer_value_range": [0.9, 1.1], "ratio": 0.5,
             "ratio_range": [0.45, 0.55], "ratio_label": "of plain get", "goal": "-"},
            {"case": "disaggregated KV: PUT 4,096 tokens x 2 layers into a decode cache",
             "metric": "GB/s", "ours": 0.75, "ours_range": [0.7, 0.8],
             "peer": "raw socket sending the same bytes", "peer_value": 1.5,
             "peer_value_range": [1.4, 1.6], "ratio": 0.5, "ratio_range": [0.45, 0.55],
             "ratio_label": "of raw", "goal": "-", "tokens_per_s": 92000.0,
             "tokens_per_s_range": [90000.0, 95000.0], "bytes": 33554432}]},
        "codec": {"rows": [
            {"op": "decode 10,000 descriptors", "seconds": 0.5, "seconds_range": [0.4, 0.6],
             "per_second": 20000.0, "per_second_range": [16667.0, 25000.0]},
            {"op": "vyre decode x.vir (1112 B)", "seconds": 0.001, "seconds_range": [0.001, 0.002],
             "mb_per_s": 1.1, "mb_per_s_range": [0.556, 1.1]}]},
        "cold_start": {"runs": 3, "results": [
            {"what": "import hurray_gpu", "device": "-", "min_ms": 3.0, "median_ms": 4.0,
             "max_ms": 6.0, "goal_ms": 150.0, "median_over_goal_ratio": 4 / 150,
             "over_goal_ratio_range": [3 / 150, 6 / 150]},
            {"what": "first call, warm cache", "device": "cpu:0", "min_ms": 4.0,
             "median_ms": 4.5, "max_ms": 7.0, "steady_call_ms_median": 0.2,
             "steady_call_ms_range": [0.18, 0.25], "over_steady_ratio": 22.0,
             "over_steady_ratio_range": [20.0, 30.0], "goal_ms": 10.0,
             "median_over_goal_ratio": 0.45, "over_goal_ratio_range": [0.4, 0.7]}],
            "unavailable": [{"device": "vulkan:0", "error": "no Vulkan loader"}]},
        "convert": {"runs": 3, "results": [
            {"case": "direct (F32, F16, BF16)", "source_mib": 2048.0, "largest_tensor_mib": 128.0,
             "convert_mb_per_s": 900.0, "convert_mb_per_s_range": [800.0, 950.0],
             "copy_mb_per_s": 1200.0, "convert_over_copy_ratio": 0.75,
             "convert_over_copy_ratio_range": [0.7, 0.8], "goal_mb_per_s": 500.0,
             "rss_growth_mib": 2.5},
            {"case": "Q4_0", "source_mib": 512.0, "largest_tensor_mib": 128.0,
             "convert_mb_per_s": 300.0, "convert_mb_per_s_range": [250.0, 320.0],
             "copy_mb_per_s": 1500.0, "convert_over_copy_ratio": 0.2,
             "convert_over_copy_ratio_range": [0.15, 0.25], "goal_mb_per_s": None}]},
    })


def write(out: Path, data: dict[str, Any]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for name, value in data.items():
        (out / f"{name}.json").write_text(json.dumps(value))
    return out


# One expected row per suite kind: every cell from the fixture's fields.
ROWS = [
    "| NF4 -> float32, cpu:0 | 12.5 (12.0-13.0) GB/s; 2.50 Gelem/s | copy 25.0 GB/s; "
    "`bitsandbytes dequantize_4bit` 0.500 Gelem/s | 0.480 / 0.500 / 0.520 of copy; "
    "4.50 / 5.00 / 5.50 x peer; kernels alone 5.80 / 6.00 / 6.20 x peer |",
    "| MXFP4 -> bfloat16, cpu:0 | 12.5 (12.0-13.0) GB/s; 2.50 Gelem/s | copy 25.0 GB/s; "
    "no peer measured | 0.480 / 0.500 / 0.520 of copy |",
    "| tiled_32x32 -> row-major, cpu:0 | 4.00 (3.50-4.50) GB/s | copy 10.0 (9.00-11.0) GB/s | "
    "0.350 / 0.400 / 0.450 of copy |",
    "| CSR -> dense, 5% dense, cpu:0 | fresh 3.00 (2.80-3.20) ms; reused 2.00 (1.90-2.10) ms | "
    "scipy `toarray()` 4.50 (4.40-4.70) ms; `toarray(out=)` 4.00 (3.90-4.10) ms | "
    "fresh 1.40 / 1.50 / 1.60 x scipy; reused 1.90 / 2.00 / 2.10 x scipy |",
    "| NF4 -> float32 (hg.dequantize), 4,096 elements, cpu:0 | 25.0 (22.0-30.0) us | "
    "`bitsandbytes dequantize_4bit` 60.0 (55.0-70.0) us | 2.00 / 2.40 / 2.80 x peer |",
    "| decode step, cpu:0 | 27,500 (25,000-30,000) tokens/s | torch (cpu) 50,000 "
    "(48,000-52,000) tokens/s | 0.500 / 0.550 / 0.600 x torch |",
    "| gather, cpu:0 | 5.00 (4.50-5.50) GB/s | torch `index_select` 9.00 (8.50-9.50) GB/s; "
    "copy 12.0 (11.0-13.0) GB/s | 0.520 / 0.560 / 0.600 x torch; 0.400 / 0.420 / 0.440 of copy |",
    "| prefill (bulk append), cpu:0 | 7.50 (7.00-8.00) GB/s | the same copy, in the prefill's "
    "rounds | 0.600 / 0.620 / 0.640 of copy |",
    "| decode step, opencl:0 | 27,500 (25,000-30,000) tokens/s | torch not installed |  |",
    "| vulkan:0: skipped | a page beyond a binding range |  |  |",
    "| opencl:0 standard (NOT bit-exact) | H2D 10.0 (9.00-11.0); D2H 8.00 (7.50-8.50) GB/s | "
    "NumPy copy 12.0 (11.5-12.5) GB/s | H2D 0.800 / 0.830 / 0.900; D2H 0.600 / 0.670 / 0.700 "
    "of copy |",
    "| u32 matmul, cpu:0 plain | 2.50 (2.00-3.00) ms | reference ~1.00 s | "
    "333 / 400 / 500 x reference |",
    "| BLAKE3, cpu:0 | 400 (333-500) MiB/s | reference ~40.0 s | 333 / 400 / 500 x reference |",
    "| tiled u32 matmul, cpu:0 vs opencl:0 (5 interleaved rounds) | 5.00 (4.00-6.00) ms | "
    "opencl:0 6.00 (5.00-9.00) ms | 1.10 / 1.20 / 1.50 x opencl wall time; 1.05 / 1.15 / 1.30 "
    "x opencl CPU time |",
    "| `Kernel(...)` Python time outside the enqueue, cpu:0 | 6.00 (5.00-8.00) us of "
    "13.0 (12.0-20.0) us per call | goal 10.0 us | 0.500 / 0.600 / 0.800 of goal |",
    "| loop_sum, cpu:0 | 2.50 (2.40-2.60) ms | unbounded 2.00 (1.90-2.10) ms | "
    "1.20 / 1.25 / 1.30 x the unbounded time |",
    "| `hurray -> torch` | 5.00 (4.50-6.00) us | `torch -> torch` 12.0 (11.0-13.0) us | "
    "2.00 / 2.40 / 2.60 x peer |",
    "| get 1 MiB from the in-memory registry | 1.50 (1.20-1.60) GB/s | raw socket recv_into "
    "2.00 (1.90-2.20) GB/s | 0.600 / 0.750 / 0.800 of raw (goal >= 0.9) |",
    "| get 1 MiB from the in-memory registry | 1.50 (1.20-1.60) GB/s | Arrow Flight do_get: "
    "pyarrow is not installed |  |",
    "| transcode int4 per-block -> bfloat16 (2 MiB out) | 0.500 (0.400-0.600) GB/s | plain get "
    "of the result's bytes 1.00 (0.900-1.10) GB/s | 0.450 / 0.500 / 0.550 of plain get |",
    "| disaggregated KV: PUT 4,096 tokens x 2 layers into a decode cache | 0.750 (0.700-0.800) "
    "GB/s; 92,000 (90,000-95,000) tokens/s | raw socket sending the same bytes 1.50 "
    "(1.40-1.60) GB/s | 0.450 / 0.500 / 0.550 of raw |",
    "| decode 10,000 descriptors | 20,000 (16,700-25,000) /s | none (absolute numbers) |  |",
    "| vyre decode x.vir (1112 B) | 1.10 (0.556-1.10) MB/s | none (absolute numbers) |  |",
    "| import hurray_gpu | 4.00 (3.00-6.00) ms | goal 150 ms | 0.0200 / 0.0267 / 0.0400 of goal |",
    "| first call, warm cache, cpu:0 | 4.50 (4.00-7.00) ms | goal 10.0 ms; steady call 0.200 "
    "(0.180-0.250) ms | 0.400 / 0.450 / 0.700 of goal; 20.0 / 22.0 / 30.0 x the steady call's "
    "time |",
    "| vulkan:0: not measured | no Vulkan loader |  |  |",
    "| direct (F32, F16, BF16), 2,048 MiB of source | 900 (800-950) MB/s; peak RSS +2.50 MiB "
    "(largest tensor 128 MiB) | copying the same file 1,200 MB/s; goal 500 MB/s | "
    "0.700 / 0.750 / 0.800 of copy |",
    "| Q4_0, 512 MiB of source | 300 (250-320) MB/s | copying the same file 1,500 MB/s | "
    "0.150 / 0.200 / 0.250 of copy |",
    "| CR_SIN over [-100, 100], cpu:0 | 0.100 (0.0900-0.110) G/s | `sinf` 0.200 (0.190-0.210) "
    "G/s | 0.400 / 0.500 / 0.600 x libm |",
]


def test_a_row_per_suite_kind_from_the_json_fields(tmp_path: Path) -> None:
    block, problems = render(write(tmp_path, fixture()))
    assert problems == []
    lines = block.splitlines()
    for row in ROWS:
        assert row in lines, row
    for suite, title, _ in SUITES:  # every suite has its captioned table
        assert f"**{title}** (`bench/{suite}.py`: " in block
    assert "morton" not in block  # only the largest layout side is shown
    assert ("**Dequantization** (`bench/dequant.py`: 2,048 elements, 5 runs, device clock, "
            "2 threads;") in block
    assert ("16 sequences of 1..64 tokens (573 in all after decoding), layers: 1, 8 x 128 "
            "fp16, 10% forks per decode step, 1 decode steps per sample") in block
    assert ("Run of 2030-01-02 03:04 UTC, commit `0123456789`, `hurray-gpu bench`. Machine "
            "(detected): Test CPU, 4 cores, Linux 6.1, Python 3.11.0. **No GPU was measured** "
            "(no cuda or rocm device); emulated on the same CPU: opencl:0 = pocl cpu.") in block


def test_a_measured_gpu_is_not_called_missing(tmp_path: Path) -> None:
    data = fixture()
    data["transfer"]["results"][0]["device"] = "cuda:0"
    block, _ = render(write(tmp_path, data))
    assert "| cuda:0 standard (NOT bit-exact) |" in block and "No GPU" not in block


def test_missing_suites_and_fields_are_reported(tmp_path: Path) -> None:
    data = fixture()
    del data["dequant"], data["kv_cache"]
    data["run"]["suites"]["dequant"]["returncode"] = 1
    data["run"]["suites"]["layout"]["returncode"] = 2
    del data["transfer"]["results"][0]["h2d_vs_copy_range"]
    data["run"]["mode"] = "quick"
    block, problems = render(write(tmp_path, data))
    assert problems == [
        "dequant: no dequant.json in this run (the suite exited with code 1)",
        "layout: exited with code 2",
        "kv_cache: no kv_cache.json in this run",
        "transfer: transfer.json has no field 'h2d_vs_copy_range' (written by another version "
        "of its suite)"]
    assert ("**Dequantization** (`bench/dequant.py`): not shown: no dequant.json in this run "
            "(the suite exited with code 1).") in block
    assert "**Paged KV cache** (`bench/kv_cache.py`): not shown: no kv_cache.json" in block
    assert "; the suite exited with code 2, see its report)" in block
    assert "(quick sizes: fixed per-call costs dominate; indicative only)" in block
    assert ROWS[2] in block  # the layout rows are still shown
    (tmp_path / "run.json").unlink()
    block, problems = render(tmp_path)
    assert problems[0] == "run: no run.json (the run record)"
    assert "Machine, date and commit unknown: no run.json (the run record)." in block


def test_update_readme_replaces_the_json_and_the_block(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture) -> None:
    root = tmp_path / "repo"
    (root / "bench").mkdir(parents=True)
    store = write(root / "docs" / "bench", {"stale": {"rows": []}})
    readme = root / "README.md"
    readme.write_text(f"# x\n\n## Performance\n\nprose\n\n{BEGIN}\nold table\n{END}\n\nafter\n")
    src = write(tmp_path / "run", fixture())
    (src / "dequant.png").write_bytes(b"png")
    (src / "report.md").write_text("report")
    monkeypatch.setattr(bench, "find_bench_dir", lambda: root / "bench")
    assert main(["bench", "--readme", str(src)]) == 0
    assert sorted(p.name for p in store.iterdir()) == sorted(p.name for p in src.glob("*.json"))
    text = readme.read_text()
    assert text.startswith("# x\n\n## Performance\n\nprose\n\n" + BEGIN + "\n")
    assert text.endswith(END + "\n\nafter\n") and "old table" not in text
    assert _block(text) == "\n" + render(store)[0]
    (src / "codec.json").unlink()
    assert main(["bench", "--readme", str(src)]) == 1
    err = capsys.readouterr().err
    assert "not shown: codec: no codec.json in this run" in err and "Fix:" in err
    assert "**Codecs** (`bench/codec.py`): not shown" in readme.read_text()
    readme.write_text("no markers\n")
    with pytest.raises(HurrayGPUError, match="no <!-- bench:begin --> .*Fix: put the line"):
        replace_block(readme.read_text(), "table")


def test_run_record_is_detected(tmp_path: Path) -> None:
    records = [{"suite": "codec", "returncode": 0, "args": ["--runs", "3"]}]
    bench.write_run_record(tmp_path, records, quick=True)
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["machine"] == bench.machine_line() and run["mode"] == "quick"
    assert run["command"] == "hurray-gpu bench --quick"
    assert run["suites"] == {"codec": {"returncode": 0, "args": ["--runs", "3"]}}
    assert any(d["spec"] == "cpu:0" and d["emulated"] is False for d in run["devices"])
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=10", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert run["commit"].split()[0] == head
