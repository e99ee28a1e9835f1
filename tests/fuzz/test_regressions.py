"""Replay every saved fuzz input (tests/fuzz/regressions/<harness>/*) through its harness.

ci/fuzz.sh copies each crash atheris finds here. Inputs that show a known, still-open decoder
bug are also replayed with every tolerance of their harness switched off (the module's
KNOWN_BUGS flags): those tests are strict xfails, so they start failing (XPASS) the moment the
decoder is fixed, which is the cue to drop the tolerance from the harness and the entry from
KNOWN_BUGS below. An input whose bug the harness does not tolerate at all (flag None) is only
replayed strictly.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from fuzz import HARNESS_NAMES
from fuzz.harnesses import get

HERE = Path(__file__).resolve().parent / "regressions"

# (harness, file) -> (the harness's tolerance flag for it, or None; the bug). Empty: the five
# reader memory bugs once listed here (stream descriptor/in-memory preallocation, stream and
# .hrry alignment padding, aliased .hrry index entries) are fixed, and their saved inputs now
# pass the harnesses strictly through test_saved_input_passes_the_harness.
KNOWN_BUGS: dict[tuple[str, str], tuple[str | None, str]] = {}


def _cases() -> list[tuple[str, Path]]:
    return [(name, path) for name in HARNESS_NAMES if (HERE / name).is_dir()
            for path in sorted((HERE / name).iterdir()) if path.is_file()]


CASES = _cases()


@pytest.mark.parametrize(("name", "path"), CASES, ids=[f"{n}/{p.name}" for n, p in CASES])
def test_saved_input_passes_the_harness(name: str, path: Path) -> None:
    known = KNOWN_BUGS.get((name, path.name))
    if known is not None and known[0] is None:
        pytest.skip("known bug the harness does not tolerate; replayed strictly below")
    assert get(name).one_input(path.read_bytes(), measure_memory=True) in (True, False)


def _known() -> list[object]:
    out = []
    for (name, file), (_, reason) in KNOWN_BUGS.items():
        mark = pytest.mark.xfail(strict=True, reason=reason)
        out.append(pytest.param(name, file, marks=mark, id=f"{name}/{file}"))
    return out


@pytest.mark.parametrize(("name", "file"), _known())
def test_known_bug_input_under_the_strict_bound(name: str, file: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module(f"fuzz.{name}")
    for flag in module.KNOWN_BUGS:
        monkeypatch.setitem(module.KNOWN_BUGS, flag, False)
    module.one_input((HERE / name / file).read_bytes(), measure_memory=True)


def test_every_known_bug_has_its_input_and_flag() -> None:
    for (name, file), (flag, _) in KNOWN_BUGS.items():
        assert (HERE / name / file).is_file()
        assert flag is None or flag in importlib.import_module(f"fuzz.{name}").KNOWN_BUGS
