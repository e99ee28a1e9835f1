"""ci/gpu_check.sh's plumbing, run here through its dry run (GPU_CHECK_DRY=1: every GPU step
replaced by its CPU equivalent): wheel install into a site folder, PYTHONPATH, exit codes
(pytest's 5 is a failure), the files in $OUT, the summary and the time budget.

CI has no wheelhouse (.whl/ is made for the GPU machine by ci/gpu_wheels.sh and never
committed), so the tests build a real, minimal pure-Python wheel and point the check at it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "ci" / "gpu_check.sh"
STEPS = ["wheels", "probe", "nvrtc", "gpu-tests", "backend", "transfer", "dequant", "kv"]
OUT_FILES = {"log.txt", "summary.md", "summary.json", "junit_gpu.xml", "junit_backend.xml",
             "transfer.json", "dequant.json", "kv_cache.json"}


def _wheel(folder: Path) -> Path:
    """gpu_check_probe 1.0 as a py3-none-any wheel: one module, its metadata and a RECORD
    with real hashes."""
    files = {
        "gpu_check_probe.py": "VALUE = 42\n",
        "gpu_check_probe-1.0.dist-info/METADATA":
            "Metadata-Version: 2.1\nName: gpu_check_probe\nVersion: 1.0\n",
        "gpu_check_probe-1.0.dist-info/WHEEL":
            "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    files["gpu_check_probe-1.0.dist-info/RECORD"] = "\n".join(
        [*record, "gpu_check_probe-1.0.dist-info/RECORD,,"]) + "\n"
    folder.mkdir()
    path = folder / "gpu_check_probe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as whl:
        for name, text in files.items():
            whl.writestr(name, text)
    return path


def _dry_run(tmp_path: Path, **env: str) -> tuple[int, dict[str, Any], Path]:
    """Run the dry check with the test wheel; returns (exit status, summary.json, $OUT)."""
    _wheel(tmp_path / "wheels")
    out = tmp_path / "out"
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("PYTEST_", "HYPOTHESIS", "GPU_CHECK", "HURRAY_GPU_"))}
    base.update(GPU_CHECK_DRY="1", OUT=str(out), GPU_CHECK_WHEELS=str(tmp_path / "wheels"),
                GPU_CHECK_SITE=str(tmp_path / "site"), PYTHON=sys.executable)
    base.update(env)
    done = subprocess.run(["bash", str(SCRIPT)], env=base, cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    summary = json.loads((out / "summary.json").read_text())
    # Everything the script printed also went to $OUT/log.txt.
    assert done.stdout.strip() and done.stdout == (out / "log.txt").read_text()
    return done.returncode, summary, out


def _verdicts(summary: dict[str, Any]) -> dict[str, str]:
    return {s["name"]: s["verdict"] for s in summary["steps"]}


def test_dry_run_passes_and_reports_every_step(tmp_path: Path) -> None:
    status, summary, out = _dry_run(tmp_path)
    log = (out / "log.txt").read_text()
    assert status == 0, log[-3000:]
    assert summary["mode"] == "dry" and summary["passed"] is True
    assert _verdicts(summary) == dict.fromkeys(STEPS, "pass")
    assert 0 < summary["elapsed_s"] < summary["budget_s"] == 480
    assert {p.name for p in out.iterdir()} == OUT_FILES and summary["files"] == 8
    # The wheel went into the site folder, and the probe imported it from there.
    site = (tmp_path / "site").resolve()
    assert (site / "gpu_check_probe.py").is_file()
    assert f"gpu_check_probe: {site / 'gpu_check_probe.py'}" in log
    for junit in ("junit_gpu.xml", "junit_backend.xml"):
        suite = ElementTree.parse(out / junit).getroot().find("testsuite")
        assert suite is not None and int(suite.get("tests", "0")) > 0
        assert suite.get("failures") == suite.get("errors") == "0", junit
    # The benches ran on cpu:0 against the device's own copy, and their ratios reached the
    # summary against the goals.
    rows = json.loads((out / "dequant.json").read_text())["rows"]
    ops = [r["op"] for r in rows]  # one row per operation: no peers in the GPU check
    assert len(ops) == len(set(ops)) >= 12 and all(r["device"] == "cpu:0" for r in rows)
    assert any(op.startswith("MXFP8") for op in ops) and any(op.startswith("NF4") for op in ops)
    assert all(r["roof_gbps"] > 0 and r["roof_fraction"] > 0 for r in rows)
    kv = json.loads((out / "kv_cache.json").read_text())["devices"]
    assert [r["device"] for r in kv] == ["cpu:0"] and kv[0]["gather_vs_roof"] > 0
    transfers = json.loads((out / "transfer.json").read_text())["results"]
    assert transfers and all(r["d2d_gbps"] > 0 and r["bit_exact"] for r in transfers)
    goals = summary["goals"]
    # one goal per dequant row (0.90 of the roof) and two for the KV cache (0.85)
    assert len(goals) == len(rows) + 2 and {g["goal"] for g in goals} == {0.90, 0.85}
    md = (out / "summary.md").read_text()
    assert md.startswith("# GPU check, dry run (cpu): PASS") and "KV bulk append on cpu:0" in md


def test_a_step_that_collects_no_test_fails_the_check(tmp_path: Path) -> None:
    status, summary, out = _dry_run(tmp_path, GPU_CHECK_ONLY="gpu-tests",
                                    GPU_CHECK_PYTEST_ARGS="-k no_test_is_named_this")
    assert status == 1 and summary["passed"] is False
    verdicts = _verdicts(summary)
    assert verdicts.pop("wheels") == verdicts.pop("probe") == "pass"
    assert verdicts.pop("gpu-tests") == "FAIL (exit 5: no tests collected)"
    assert set(verdicts.values()) == {"not run (GPU_CHECK_ONLY)"}
    assert (out / "summary.md").read_text().startswith("# GPU check, dry run (cpu): FAIL")


def test_a_missing_wheelhouse_fails_with_its_fix(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    status, summary, out = _dry_run(tmp_path, GPU_CHECK_ONLY="none",
                                    GPU_CHECK_WHEELS=str(tmp_path / "empty"))
    assert status == 1 and summary["passed"] is False
    verdicts = _verdicts(summary)
    assert verdicts.pop("wheels") == "FAIL (exit 1)"
    assert verdicts.pop("probe").startswith("FAIL")  # no package in the site folder
    assert set(verdicts.values()) == {"not run (GPU_CHECK_ONLY)"}
    assert "Fix: run 'bash ci/gpu_wheels.sh' on a machine with network" in \
        (out / "log.txt").read_text()


def test_a_step_past_the_budget_fails(tmp_path: Path) -> None:
    # One second for everything: the wheel install and the probe use it up, and the step
    # after them gets no time (or is stopped when what is left runs out).
    status, summary, _ = _dry_run(tmp_path, GPU_CHECK_ONLY="kv", GPU_CHECK_BUDGET_S="1")
    assert status == 1 and summary["budget_s"] == 1
    assert _verdicts(summary)["kv"] in ("FAIL (no time left in the 1 s budget)",
                                        "FAIL (timed out after 1 s)")


def test_step_limits_fit_the_budget_and_match_the_header() -> None:
    text = SCRIPT.read_text()
    calls = re.findall(r"^\s*step ([\w-]+) (\d+) (\d+) ", text, re.M)
    limits = {name: (int(gpu), int(dry)) for name, gpu, dry in calls}
    assert all(limits[name] == (int(gpu), int(dry)) for name, gpu, dry in calls)
    assert list(limits) == STEPS  # one limit per step (both modes run the same steps)
    assert sum(g for g, _ in limits.values()) < 480 > sum(d for _, d in limits.values())
    header = dict(re.findall(r"^#   ([\w-]+)\s+(\d+ \| \d+)\s", text, re.M))
    assert header == {name: f"{g} | {d}" for name, (g, d) in limits.items()}
    timeout_s = int(re.search(r"timeout_s: (\d+)", text).group(1))  # type: ignore[union-attr]
    assert 480 + 30 <= timeout_s <= 600
