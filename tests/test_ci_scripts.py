"""ci/test.sh and ci/fuzz.sh run what they promise: copies of the scripts run with PYTHON set
to a stand-in that records its arguments and environment instead of running anything."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Records "CI=<value> SOAK=<value> BOUNDS=<value> <args>" per call; answers fuzz.sh's harness
# listing; sleeps for $HANG seconds when set (a tier that hangs).
_STAND_IN = """#!/bin/sh
echo "CI=${CI:-unset} SOAK=${HURRAY_GPU_SOAK_OPS:-unset} BOUNDS=${HURRAY_GPU_DEBUG_BOUNDS:-unset} $*" >> "$CALLS"
case "$*" in *HARNESS_NAMES*) echo descriptor ;; esac
[ -n "${HANG:-}" ] && sleep "$HANG"
exit 0
"""


def _run_script(tmp_path: Path, script: str, *args: str, rc: int = 0, **env: str) -> list[str]:
    """Run a copy of ci/<script> from a scratch tree (nothing in the checkout is touched)."""
    (tmp_path / "ci").mkdir()
    for name in (script, "python.sh"):  # the scripts source ci/python.sh
        shutil.copy(ROOT / "ci" / name, tmp_path / "ci" / name)
    python = tmp_path / "python"
    python.write_text(_STAND_IN)
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    calls = tmp_path / "calls.log"
    base = {k: v for k, v in os.environ.items()
            if k not in ("CI", "HURRAY_GPU_SOAK_OPS", "HURRAY_GPU_DEBUG_BOUNDS")}
    done = subprocess.run(["bash", str(tmp_path / "ci" / script), *args],
                          env={**base, **env, "PYTHON": str(python), "CALLS": str(calls)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == rc, done.stderr
    if rc:
        assert "ran past 1 s and was ended" in done.stderr, done.stderr
    return calls.read_text().splitlines()


def test_test_sh_runs_both_tiers_with_ci_true(tmp_path: Path) -> None:
    calls = _run_script(tmp_path, "test.sh", "-k", "x", CI="false")
    assert calls == ["CI=true SOAK=unset BOUNDS=unset -m pytest -q -n 2 -m not gpu -k x",
                     "CI=true SOAK=unset BOUNDS=1 -m pytest -q -n 2 -m not gpu tests/backend"]


def test_test_sh_ends_a_tier_that_hangs(tmp_path: Path) -> None:
    calls = _run_script(tmp_path, "test.sh", rc=124, HANG="30", HURRAY_GPU_TIER_TIMEOUT="1")
    assert len(calls) == 2  # the canary tier still runs after the main tier is ended


def test_fuzz_sh_runs_the_soak_at_full_length_under_ci(tmp_path: Path) -> None:
    calls = _run_script(tmp_path, "fuzz.sh", "--minutes", "0")
    soaks = [c for c in calls if "test_kv_cache_soak.py" in c]
    assert soaks == ["CI=true SOAK=100000 BOUNDS=unset -m pytest -q -p no:cacheprovider "
                     "tests/backend/test_kv_cache_soak.py"]
