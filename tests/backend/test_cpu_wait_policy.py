"""The cpu backend defaults OMP_WAIT_POLICY to PASSIVE before libgomp loads (spinning OpenMP
workers made each tiny kernel launch cost milliseconds on a busy machine), keeping a user's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hurray_gpu import config

_PROBE = r"""
import json, os
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.registry import resolve_device as device
maps = lambda: open("/proc/self/maps").read()
before = os.environ.get("OMP_WAIT_POLICY"), "libgomp" in maps()
cpu = device("cpu")
buf = Buffer(cpu, 16)
cpu.run("fill_u32", buf, 7, 4, wait=True)
print(json.dumps({"before": before, "after": os.environ.get("OMP_WAIT_POLICY"),
                  "gomp": "libgomp" in maps(), "out": bytes(buf.copyout()).hex()}))
"""


def _probe(policy: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc (Linux)")
def test_passive_is_set_before_libgomp_loads() -> None:
    got = _probe(None)
    assert got["before"] == [None, False]  # nothing set and libgomp absent before a kernel
    assert got["after"] == "PASSIVE"
    assert got["out"] == "07000000" * 4


def test_a_user_policy_is_kept() -> None:
    assert _probe("ACTIVE")["after"] == "ACTIVE"


def test_config_accessor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert config.omp_wait_policy() is None
    assert config.omp_wait_policy(default="PASSIVE") == "PASSIVE"
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")
    assert config.omp_wait_policy(default="PASSIVE") == "active"
    assert config.omp_wait_policy() == "active"
