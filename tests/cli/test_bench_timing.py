"""bench/_timing.py: interleaved rounds in a balanced turn order."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _timing import rounds, turn_orders  # noqa: E402


def test_rounds_take_turns_in_balanced_orders_and_drop_the_warm_up_round() -> None:
    log: list[str] = []

    def call(name: str) -> object:
        def timed() -> float:
            log.append(name)
            return float(len(log))
        return timed

    samples = rounds({n: call(n) for n in "abc"}, 3)
    assert log == list("abc" "bca" "cab" "cba")  # round 0 is the untimed warm-up
    assert samples == {"a": [6.0, 8.0, 12.0], "b": [4.0, 9.0, 11.0], "c": [5.0, 7.0, 10.0]}


@pytest.mark.parametrize("k", range(1, 10))
def test_every_call_follows_every_other_equally_often(k: int) -> None:
    orders = turn_orders(k)
    assert len(orders) == (k if k % 2 == 0 else 2 * k) and all(
        sorted(o) == list(range(k)) for o in orders)
    follows = [[0] * k for _ in range(k)]
    for o in orders:
        for a, b in zip(o, o[1:], strict=False):
            follows[a][b] += 1
    per_pair = 1 if k % 2 == 0 else 2
    assert all(follows[a][b] == (0 if a == b else per_pair) for a in range(k) for b in range(k))
