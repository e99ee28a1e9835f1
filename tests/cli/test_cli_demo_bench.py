"""``hurray-gpu demo`` end to end on the cpu, and ``hurray-gpu bench --quick``'s report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hurray_gpu.cli import main
from hurray_gpu.cli.bench import load_results, write_report
from hurray_gpu.cli.demo import HOST, numpy_checksum, run_demo

PARTS = ("quantize", "KV cache", "save .hrry", "inspect", "load", "dequantize", "materialize",
         "DLPack", "vyre checksum", "re-check")


def _check_steps(steps: list[dict], out_dir: Path) -> None:
    """Every demo step ran and really checked something; the numbers it reports agree."""
    names = " | ".join(s["step"] for s in steps)
    assert all(part in names for part in PARTS), names
    for s in steps:
        assert s["check"], s
        # Only the host-side preparation steps (quantize, build, save) have nothing to verify.
        assert s["ok"] is True or (s["ok"] is None and s["where"] == HOST), s
    dq = [s for s in steps if s["step"].startswith(("dequantize", "materialize"))]
    assert len(dq) == 7
    assert all(s["where"] == "cpu:0" and s["check"].startswith("bit-exact vs NumPy") and
               s["nbytes"] > 0 for s in dq)
    (save,) = [s for s in steps if s["step"].startswith("save .hrry")]
    size = (out_dir / "demo.hrry").stat().st_size
    assert size > 0 and save["nbytes"] == size and f"{size:,} bytes" in save["check"]
    (handoff,) = [s for s in steps if s["step"].startswith("DLPack")]
    ptrs = re.fullmatch(r"torch (0x[0-9a-f]+) == buffer (0x[0-9a-f]+)", handoff["check"])
    assert ptrs is not None and ptrs[1] == ptrs[2], handoff["check"]
    (vy,) = [s for s in steps if s["step"].startswith("vyre checksum")]
    sums = re.fullmatch(r"(0x[0-9a-f]+) == NumPy (0x[0-9a-f]+), reference interpreter "
                        r"(0x[0-9a-f]+)", vy["check"])
    assert vy["where"] == "cpu:0" and sums is not None and sums[1] == sums[2] == sums[3]


def test_demo_quick_on_cpu_passes_every_check(tmp_path: Path) -> None:
    rec = run_demo("cpu", quick=True, out_dir=str(tmp_path), progress=False)
    assert rec.all_ok, [(s.step, s.check) for s in rec.steps if s.ok is False]
    _check_steps([vars(s) for s in rec.steps], tmp_path)


def test_demo_json_output(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    code = main(["demo", "--quick", "--device", "cpu", "--json", "--out-dir", str(tmp_path)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["ok"] is True, report
    assert {"step", "where", "seconds", "nbytes", "check", "ok", "gbps"} <= set(
        report["steps"][0])
    assert report["notes"][0].startswith("device: cpu:0")
    _check_steps(report["steps"], tmp_path)


def test_numpy_checksum_matches_a_direct_loop() -> None:
    import numpy as np

    words = np.array([1, 0x80000000, 3, 0xFFFFFFFF] * 10, np.uint32)
    want = 0
    for i, w in enumerate(int(x) for x in words):
        r = i % 32
        want = (want + (((w << r) | (w >> (32 - r))) & 0xFFFFFFFF if r else w)) % (1 << 32)
    assert numpy_checksum(words) == want


def test_report_from_recorded_results(tmp_path: Path) -> None:
    transfer = tmp_path / "transfer.json"
    transfer.write_text(json.dumps({"numpy_copy_gbps": 10.0, "results": [
        {"device": "cpu:0", "memory_class": "standard", "h2d_gbps": 5.0, "d2h_gbps": 20.0,
         "bit_exact": True}]}))
    records = [{"suite": "transfer", "returncode": 0, "text": "", "seconds": 1.0,
                "json": transfer},
               {"suite": "broken", "returncode": 1, "text": "Traceback\nboom", "seconds": 0.1,
                "json": tmp_path / "missing.json"}]
    summary = write_report(tmp_path, load_results(records), quick=True)
    report = (tmp_path / "report.md").read_text()
    assert "| cpu:0 | standard | 5.000 | 20.000 | 10.000 | 0.500 | 2.000 | True |" in report
    assert "![transfer](transfer.png)" in report and (tmp_path / "transfer.png").stat().st_size
    assert "broken: FAILED (exit 1)" in summary and "boom" in report


@pytest.mark.slow
def test_bench_quick_writes_report_and_plots(tmp_path: Path,
                                             capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "report"
    assert main(["bench", "--quick", "--out", str(out), "--suite", "transfer",
                 "--suite", "codec"]) == 0
    printed = capsys.readouterr().out
    assert "machine:" in printed and "transfer: " in printed
    report = (out / "report.md").read_text()
    assert "## transfer" in report and "## codec" in report and "H2D / limit" in report
    assert (out / "transfer.png").stat().st_size > 1000
    assert (out / "codec.png").stat().st_size > 1000
    run = json.loads((out / "run.json").read_text())
    assert set(run["suites"]) == {"transfer", "codec"} and run["mode"] == "quick"
    assert run["suites"]["codec"] == {"returncode": 0, "args": ["--runs", "3"]}


def test_demo_on_the_reference_device(tmp_path: Path) -> None:
    # Was: the vyre step refused the reference Device object ("Fix: pass device='reference'",
    # which is what `demo --device reference` had done).
    rec = run_demo("reference", quick=True, out_dir=str(tmp_path), progress=False)
    assert rec.all_ok, [(s.step, s.check) for s in rec.steps if s.ok is False]
    (vy,) = [s for s in rec.steps if s.step.startswith("vyre checksum")]
    assert vy.where == "reference" and vy.ok
