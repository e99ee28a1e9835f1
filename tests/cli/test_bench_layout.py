"""bench/layout.py: every device's layout rows share their rounds, and devices after the first
report their kernel's time over the first device's, round by round."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import layout  # noqa: E402


def test_the_second_device_is_timed_against_the_first_round_by_round() -> None:
    # Round by round webgpu/vulkan is 0.5, 4.0, 0.5 (median 0.5); the ratio of sorted samples
    # (rounds mismatched), of the inverse, or of another call would differ.
    took = {"numpy_gather_gbps": [1.0, 1.0, 1.0],
            "vulkan gbps": [4.0, 1.0, 2.0], "vulkan gbps_end_to_end": [5.0, 5.0, 5.0],
            "vulkan copy_gbps": [1.0, 1.0, 1.0],
            "webgpu gbps": [2.0, 4.0, 1.0], "webgpu gbps_end_to_end": [9.0, 9.0, 9.0],
            "webgpu copy_gbps": [2.0, 2.0, 2.0]}
    rows = layout.pair_rows({"vulkan": "vulkan:0", "webgpu": "webgpu:0"}, took, 1000,
                            {"vulkan": 2000, "webgpu": 2000})
    assert not any(k.startswith("time_vs_") for k in rows["vulkan"])
    assert rows["webgpu"]["time_vs_vulkan:0"] == pytest.approx(0.5)
    assert rows["webgpu"]["time_vs_vulkan:0_range"] == pytest.approx([0.5, 4.0])
    # Each device's own figures come from its own calls.
    assert rows["webgpu"]["gbps"] == pytest.approx(2000 / 2.0 / 1e9)
    assert rows["vulkan"]["fraction_of_copy"] == pytest.approx(0.5)
    assert rows["webgpu"]["fraction_of_copy"] == pytest.approx(1.0)


def test_the_json_rows_carry_the_pair(tmp_path: Path) -> None:
    out = tmp_path / "layout.json"
    assert layout.main(["--side", "64", "--runs", "3", "--devices", "cpu,cpu:0",
                        "--densities", "0.05", "--clock", "cpu", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["clock"] == "cpu"
    rows = report["rows"]
    assert {r["device"] for r in rows} == {"cpu", "cpu:0"}
    assert len(rows) == 2 * len(report["sizes"]["64"]["cpu"]["layouts"])
    for r in rows:
        lay = report["sizes"]["64"][r["device"]]["layouts"][r["layout"]]
        if r["device"] == "cpu":
            assert "time_vs_cpu:0" not in r
            continue
        low, high = lay["time_vs_cpu:0_range"]
        assert 0 < low <= r["time_vs_cpu:0"] == lay["time_vs_cpu:0"] <= high
