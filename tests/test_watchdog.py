"""The suite's watchdog (tests/conftest.py) turns a hung test into a failure that names it.

A copy of the suite's conftest runs a scratch suite of one test that never ends and one that
passes, under pytest-xdist as ci/test.sh runs it, with a 2-second limit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_HANGS = """import threading
import time


def test_never_ends():
    threading.Event().wait()  # a wait that holds no lock: only the watchdog ends it


def test_passes():
    time.sleep(0.1)
    assert True
"""


def test_a_hung_test_fails_by_name_with_every_stack(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    for name in ("conftest.py", "_support.py"):
        shutil.copy(ROOT / "tests" / name, tests / name)
    (tests / "test_hangs.py").write_text(_HANGS)
    env = {**os.environ, "HURRAY_GPU_TEST_TIMEOUT": "2", "PYTHONPATH": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
         "tests/test_hangs.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "crashed while running 'tests/test_hangs.py::test_never_ends'" in out, out
    assert "1 failed, 1 passed" in out, out
    # faulthandler's dump: the stuck frame, in the real stderr (not a capture file).
    assert 'test_hangs.py", line 6 in test_never_ends' in run.stderr, out
