"""bench/_timing.py: interleaved rounds whose turn order rotates."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _timing import rounds  # noqa: E402


def test_rounds_rotate_the_turn_order_and_drop_the_warm_up_round() -> None:
    log: list[str] = []

    def call(name: str) -> object:
        def timed() -> float:
            log.append(name)
            return float(len(log))
        return timed

    samples = rounds({n: call(n) for n in "abc"}, 3)
    assert log == list("abc" "bca" "cab" "abc")  # round 0 is the untimed warm-up
    assert samples == {"a": [6.0, 8.0, 10.0], "b": [4.0, 9.0, 11.0], "c": [5.0, 7.0, 12.0]}
