"""The one timing rule every benchmark suite uses: a warm-up call, then the median wall time."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

__all__ = ["median_s"]


def median_s(fn: Callable[[], Any], runs: int) -> float:
    """Median wall seconds of ``fn`` over ``runs`` calls, after one warm-up call.

    The warm-up absorbs compiles, first-touch page faults and lazy driver allocation, so the
    samples measure the steady state.
    """
    fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
