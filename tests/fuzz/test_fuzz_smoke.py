"""CI smoke: 20,000 mutated inputs per harness through its own one_input check.

An in-process, seeded mutation loop (fuzz._engine.smoke) rather than an atheris subprocess:
it runs the same property check as the atheris target, but is deterministic (the same inputs
on every run and machine, so a red CI is reproducible), has no instrumentation overhead, and
writes the failing input where a regression test can pick it up. Coverage-guided search is
ci/fuzz.sh's job; the last test here only proves the atheris entry point works.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fuzz import HARNESS_NAMES
from fuzz._engine import smoke
from fuzz.harnesses import get
from tests._support import require_peer

SMOKE_INPUTS = 20_000
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", HARNESS_NAMES)
def test_smoke_20000_inputs(name: str, tmp_path: Path) -> None:
    harness = get(name)
    failed: list[Path] = []

    def keep(data: bytes, exc: BaseException) -> None:
        path = tmp_path / f"{name}-failure"
        path.write_bytes(data)
        failed.append(path)

    t0 = time.perf_counter()
    stats = smoke(harness, SMOKE_INPUTS, seed=0, on_failure=keep)
    elapsed = time.perf_counter() - t0
    assert stats.iterations >= SMOKE_INPUTS
    # Mutants cut down to no bytes at all never reach the decoder; they are a few percent.
    assert stats.inputs >= SMOKE_INPUTS * 0.9
    assert stats.decoded > 200 and stats.rejected > 2000
    assert stats.memory_checked >= stats.inputs // 10
    assert not failed
    print(f"{name}: {stats.inputs} inputs in {elapsed:.1f} s, {stats.decoded} decoded")


@pytest.mark.parametrize("name", HARNESS_NAMES)
def test_every_seed_decodes(name: str) -> None:
    harness = get(name)
    seeds = harness.seeds()
    assert len(seeds) >= 7
    for data in seeds:
        assert harness.one_input(data, measure_memory=True), data[:64].hex()


def test_vir0_seeds_reencode_byte_identically() -> None:
    from fuzz import seeds, vir0
    from vyre import from_wire

    for data in seeds.vir0_seeds():
        program = from_wire(data[1:], preserve_unknown=bool(data[0] & 1))
        assert vir0.check_round_trip(program) == data[1:]


def test_smoke_is_deterministic() -> None:
    first = smoke(get("descriptor"), 300, seed=7)
    again = smoke(get("descriptor"), 300, seed=7)
    assert (first.decoded, first.rejected) == (again.decoded, again.rejected)


@pytest.mark.parametrize("name", HARNESS_NAMES)
def test_atheris_entry_point_runs(name: str, tmp_path: Path) -> None:
    require_peer("atheris")
    seeds = tmp_path / "seeds"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "fuzz", "seeds", name, str(seeds)], cwd=ROOT,
                   env=env, check=True, capture_output=True, timeout=120)
    # libFuzzer reads the peak RSS with getrusage, and Linux carries the parent's high-water
    # mark across fork and exec: a long-lived pytest worker would trip a fixed limit on its
    # first input. The child gets 2 GiB on top of what it inherits.
    inherited_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    run = subprocess.run(
        [sys.executable, "-m", "fuzz", "atheris", name, str(seeds), "-runs=300",
         "-max_len=65536", f"-rss_limit_mb={2048 + inherited_mb}", "-timeout=10",
         f"-artifact_prefix={tmp_path}/"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    # libFuzzer counts the seed corpus's executions too, and checks -runs between batches:
    # it stops at 300 runs or a little after, never before.
    done = re.search(r"Done (\d+) runs", run.stderr)
    assert done is not None and int(done.group(1)) >= 300, run.stderr[-3000:]
