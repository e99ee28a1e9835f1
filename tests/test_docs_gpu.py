"""docs/gpu.md quotes the GPU check's summary as the check wrote it (docs/gpu_check/)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_quoted_gpu_summary_is_the_recorded_one() -> None:
    doc = (ROOT / "docs" / "gpu.md").read_text()
    begin, end = "<!-- gpu-summary:begin -->\n", "<!-- gpu-summary:end -->"
    assert doc.count(begin) == 1 and doc.count(end) == 1
    quoted = doc[doc.index(begin) + len(begin):doc.index(end)]
    assert quoted == (ROOT / "docs" / "gpu_check" / "summary.md").read_text()


def test_the_recorded_gpu_check_passed_on_a_gpu() -> None:
    summary = json.loads((ROOT / "docs" / "gpu_check" / "summary.json").read_text())
    assert summary["mode"] == "gpu" and summary["passed"] is True
    assert {s["name"] for s in summary["steps"]} >= {"gpu-tests", "backend", "dequant", "kv"}
    assert all(s["verdict"] == "pass" for s in summary["steps"])
