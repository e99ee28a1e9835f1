"""``bench/dequant.py --quick`` end to end on cpu:0 with its peers: every scheme's row is measured
against the peer the bench names, with ordered min/median/max ranges (a crash at a peer, as
``bool()`` of a Tensor once caused, fails here rather than in the full bench)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._support import require_peer

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_run_measures_every_scheme_against_its_peer(tmp_path: Path) -> None:
    for module, package in (("bitsandbytes", "bitsandbytes"), ("gguf", "gguf"),
                            ("ml_dtypes", "ml_dtypes")):
        require_peer(module, package)
    out = tmp_path / "dequant.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HURRAY_GPU_PROGRESS": "0"}
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "dequant.py"), "--quick",
                           "--devices", "cpu:0", "--json", str(out)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(out.read_text())["rows"]
    ours = [r for r in rows if r["impl"] == "hurray_gpu"]
    peers = {r["op"]: r["impl"] for r in rows if r["impl"] != "hurray_gpu"}
    # MX block formats have no CPU peer; every other scheme is measured against one.
    assert {r["op"] for r in ours if not r["op"].startswith("MXFP")} == set(peers)
    assert len(ours) == 18 and set(peers.values()) == {
        "bitsandbytes", "gguf.quants.dequantize", "ml_dtypes astype"}
    assert peers["NF4 -> float32"] == "bitsandbytes"
    assert peers["Q4_0 (int4, f16 scale/32) -> float32"] == "gguf.quants.dequantize"
    for r in ours:
        assert r["device"] == "cpu:0" and r.get("peer") == peers.get(r["op"]), r
        for key in ("gbps", "roof_fraction") + (("vs_peer",) if r["op"] in peers else ()):
            low, high = r[key + "_range"]  # the median is computed apart: allow rounding
            assert 0 < low * (1 - 1e-9) <= r[key] <= high * (1 + 1e-9), (key, r)
