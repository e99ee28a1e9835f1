"""bench/ipc.py's Ray row: ray.put/ray.get of a Tensor and of a NumPy array timed in the same
rounds, and a missing Ray reported in the JSON (a failed run under CI=true, not outside)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._support import require_peer

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def test_ray_row_times_tensor_and_numpy_in_the_same_rounds() -> None:
    require_peer("ray")
    # Ray's driver state is per process: after another test's ray.init/ray.shutdown in this
    # process (the docs' Ray example), a new actor was cancelled before it ran. A process of
    # its own, as `python bench/ipc.py` has; its workers import this checkout.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
    size = 3 << 20
    code = (f"import json, sys; sys.path.insert(0, {str(BENCH)!r}); import ipc; "
            f"print(json.dumps(ipc.measure_ray({size}, 3)))")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    row = json.loads(done.stdout.strip().splitlines()[-1])
    assert row["bytes"] == size and "missing" not in row
    for name in ("tensor", "numpy"):
        median, (low, high) = row[f"ray_{name}_s"]
        assert 0 < low <= median <= high < 60
        assert row[f"ray_{name}_GBps"][0] == pytest.approx(size / median / 1e9)
    ratio, (low, high) = row["vs_ray_numpy"]
    assert 0 < low <= ratio <= high


@pytest.mark.parametrize("ci", ["", "true"])
def test_missing_ray_is_reported_and_fails_only_under_ci(tmp_path: Path, ci: str) -> None:
    out = tmp_path / "ipc.json"
    # A `ray` module first on the path that fails to import, as an environment without Ray.
    (tmp_path / "ray.py").write_text("raise ImportError('blocked by the test')\n")
    env = dict(os.environ, CI=ci, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    done = subprocess.run([sys.executable, "bench/ipc.py", "--sizes", "4096", "--runs", "3",
                           "--ray-size", "4096", "--json", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == (1 if ci else 0), done.stderr
    rows = json.loads(out.read_text())["rows"]
    assert rows[0]["bytes"] == 4096 and rows[0]["hurray_s"][0] > 0  # the other rows still ran
    assert rows[-1]["path"] == "ray" and "ray is not installed" in rows[-1]["missing"]
    assert "peer missing" in done.stderr
    assert ("CI=true but a peer is missing" in done.stderr) == bool(ci)
