"""The shared test helpers (tests/_support.py): seeds that are the same in every process, and
peers that skip on a developer's machine but fail under CI=true."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests._support import in_ci, require_peer, skip_or_fail, stable_rng, stable_seed

ROOT = Path(__file__).resolve().parents[1]
_PROBE = """
from tests._support import stable_rng, stable_seed
print(stable_seed("kernel", ("int4", 3)), stable_rng("case", "float16").integers(0, 2**32, 4),
      hash("kernel"))
"""


def _probe(hash_seed: str) -> tuple[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout.strip()
    seeds, _, salted = out.rpartition(" ")
    return seeds, salted


def test_seeds_are_the_same_under_different_hash_salts() -> None:
    (first, salted_1), (second, salted_2) = _probe("1"), _probe("2")
    # The two processes really salt str hashes differently (what hash()-derived seeds broke).
    assert salted_1 != salted_2
    assert first == second
    assert first.split(" ", 1)[0] == str(stable_seed("kernel", ("int4", 3)))


def test_seeds_tell_their_parts_apart() -> None:
    assert stable_seed("a", 1) != stable_seed("a", 2) != stable_seed(("a", 2))
    assert 0 <= stable_seed("x") < 2**32
    assert (stable_rng("a").integers(0, 2**32, 8) == stable_rng("a").integers(0, 2**32, 8)).all()


def test_no_test_seeds_its_data_from_hash() -> None:
    seeded_from_hash = re.compile(r"(rng|seed)\w*\(.*\bhash\(")
    offenders = [f"{path.relative_to(ROOT)}:{n}"
                 for path in sorted((ROOT / "tests").rglob("*.py"))
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if seeded_from_hash.search(line)]
    assert not offenders, f"seeds from the per-process salted hash(): {offenders}"


@pytest.mark.parametrize(("value", "want"), [("true", True), ("TRUE", True), ("1", True),
                                             ("yes", True), ("false", False), ("", False)])
def test_in_ci(monkeypatch: pytest.MonkeyPatch, value: str, want: bool) -> None:
    monkeypatch.setenv("CI", value)
    assert in_ci() is want


def test_missing_peer_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"CI=true but the peer hurray_no_such_peer"
                                                    r"\.sub .*Fix: pip install hurray_no_such"):
        require_peer("hurray_no_such_peer.sub")
    with pytest.raises(pytest.fail.Exception, match="Fix: install it"):
        skip_or_fail("the toolchain is missing", "install it")


def test_missing_peer_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="hurray_no_such_peer"):
        require_peer("hurray_no_such_peer")


def test_present_peer_is_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert require_peer("json.decoder").__name__ == "json.decoder"
