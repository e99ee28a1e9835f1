"""bench/_against.py: the before/after comparison of two checkouts runs end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_against_compares_every_case_between_two_trees(tmp_path: Path) -> None:
    out = tmp_path / "ab.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "_against.py"), "--against", str(ROOT),
                    "--rounds", "1", "--reps", "1", "--elements", "4096", "--side", "64",
                    "--json", str(out)], check=True, timeout=600, capture_output=True)
    stats = json.loads(out.read_text())
    assert sorted(stats) == sorted([
        "nf4 -> f32", "nf4 -> bf16", "int4 block -> f32", "int8 block -> f32", "mxfp8 -> bf16",
        "mxfp4 -> bf16", "mxfp6 -> bf16", "materialize tiled 32x32", "materialize col-major",
        "materialize morton", "kv decode step (64 seqs)"])
    for s in stats.values():  # a ratio of two positive times per round, summarised
        assert 0 < s["min"] <= s["median"] <= s["max"] < float("inf")
