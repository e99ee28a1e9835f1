"""``hurray-gpu demo`` end to end on the cpu, and ``hurray-gpu bench --quick``'s report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hurray_gpu.cli import main
from hurray_gpu.cli.bench_report import load_results, write_report
from hurray_gpu.cli.demo import run_demo
from hurray_gpu.cli.demo_steps import numpy_checksum


def test_demo_quick_on_cpu_passes_every_check(tmp_path: Path) -> None:
    rec = run_demo("cpu", quick=True, out_dir=str(tmp_path), progress=False)
    failed = [(s.step, s.check) for s in rec.steps if s.ok is False]
    assert not failed, failed
    steps = " | ".join(s.step for s in rec.steps)
    for part in ("quantize", "KV cache", "save .hrry", "inspect", "load", "dequantize",
                 "DLPack", "vyre checksum", "re-check"):
        assert part in steps
    dq = [s for s in rec.steps if s.step.startswith("dequantize")]
    assert len(dq) == 5 and all(s.where == "cpu:0" and "bit-exact" in s.check for s in dq)
    assert (tmp_path / "demo.hrry").stat().st_size > 0
    (vy,) = [s for s in rec.steps if s.step.startswith("vyre checksum")]
    assert vy.where == "cpu:0" and "reference interpreter 0x" in vy.check


def test_demo_json_output(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    code = main(["demo", "--quick", "--device", "cpu", "--json", "--out-dir", str(tmp_path)])
    report = json.loads(capsys.readouterr().out)
    assert code == (0 if report["ok"] else 1)
    assert {"step", "where", "seconds", "nbytes", "check", "ok", "gbps"} <= set(
        report["steps"][0])


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
