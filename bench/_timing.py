"""The timing rules every benchmark suite shares, and the device's own copy as the roof.

Every measurement is warm (a first, untimed call absorbs compiles, first-touch page faults and
lazy driver allocation). Calls that are compared take turns in every round (``interleaved``):
on a shared machine the load changes from second to second, and alternating exposes all of
them to the same conditions, so their ratio stays meaningful. Work on a device is timed on
that device's clock where it has one (``on_device``: CUDA events, OpenCL profiling, Vulkan
timestamp queries; on the cpu, the host clock after its work ended), so a GPU kernel's time
does not include the host's launch and wait.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.stream import Event

__all__ = ["CLOCKS", "Stats", "Timed", "copy_roof", "interleaved", "median_s", "on_device",
           "on_host", "parse_args", "ratio", "rounds", "spread", "stats_s", "time_vs",
           "turn_orders"]

# A timed call: runs the work once and returns the seconds it took.
Timed = Callable[[], float]
# Host clocks a suite's --clock picks: ``cpu`` counts the CPU time of every thread of the
# process (an emulated device's worker threads included), fairer than wall time on a loaded host.
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def median_s(fn: Callable[[], Any], runs: int) -> float:
    """Median wall seconds of ``fn`` over ``runs`` calls, after one warm-up call."""
    return stats_s(fn, runs).median


def stats_s(fn: Callable[[], Any], runs: int) -> Stats:
    """Wall seconds of ``fn`` over ``runs`` calls, after one warm-up call."""
    return Stats.of(rounds({"fn": on_host(fn)}, runs)["fn"])


def spread(values: list[float]) -> tuple[float, list[float]]:
    """(median, [min, max]) of ``values``: how every JSON report states a measured quantity."""
    return statistics.median(values), [min(values), max(values)]


def ratio(num: list[float], den: list[float], scale: float = 1.0) -> tuple[float, list[float]]:
    """``scale * num[i] / den[i]`` per round, as :func:`spread`: the ratio of two calls timed in
    the same rounds (pass the peer's seconds as ``num`` and ours as ``den`` for our speed over
    the peer's)."""
    return spread([scale * a / b for a, b in zip(num, den, strict=True)])


def time_vs(first: str, seconds: list[float], first_seconds: list[float]) -> dict[str, Any]:
    """``time_vs_<first>`` and its ``_range``: the same work's ``seconds`` on one device over
    ``first_seconds`` on the device named ``first``, round by round (both timed in the same
    rounds; above 1: slower than on ``first``)."""
    mid, span = ratio(seconds, first_seconds)
    return {f"time_vs_{first}": mid, f"time_vs_{first}_range": span}


@dataclass(frozen=True)
class Stats:
    """Seconds of the timed runs of one call: the fastest, the median and the slowest."""

    min: float
    median: float
    max: float
    samples: tuple[float, ...] = ()  # one per round, in round order

    @classmethod
    def of(cls, samples: list[float]) -> Stats:
        """The statistics of ``samples`` (at least one)."""
        return cls(min(samples), statistics.median(samples), max(samples), tuple(samples))

    def rates(self, amount: float) -> dict[str, float]:
        """``amount`` per second at the max, median and min time (``amount / 1e9``: G/s)."""
        return {"min": amount / self.max, "median": amount / self.median,
                "max": amount / self.min}


def interleaved(calls: dict[str, Timed], runs: int) -> dict[str, Stats]:
    """Each timed call's seconds over ``runs`` rounds in which the calls take turns, after one
    untimed warm-up round."""
    return {name: Stats.of(got) for name, got in rounds(calls, runs).items()}


def turn_orders(k: int) -> list[list[int]]:
    """Orders of ``k`` calls in which every call runs right after every other one equally
    often (a Williams design: ``k`` orders for an even ``k``, ``2k`` for an odd one). A plain
    rotation of one order would not do that: it keeps each call's successor the same but for
    the round's wrap."""
    first, lo, hi = [0], 1, k - 1
    while len(first) < k:
        first.append(lo)
        lo += 1
        if len(first) < k:
            first.append(hi)
            hi -= 1
    orders = [[(x + i) % k for x in first] for i in range(k)]
    return orders + [o[::-1] for o in orders] if k % 2 else orders


def rounds(calls: dict[str, Timed], runs: int) -> dict[str, list[float]]:
    """Each timed call's seconds in each of ``runs`` rounds in which the calls take turns (after
    one untimed warm-up round): sample ``i`` of every call comes from the same round. The turn
    order changes from round to round (:func:`turn_orders`), so every call runs right after
    every other one as often (a peer that leaves work behind, such as freeing a large result
    or a client library's threads still busy, does not tax one neighbour more)."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    orders = turn_orders(len(names)) if names else [[]]
    for round_ in range(runs + 1):
        for i in orders[round_ % len(orders)]:
            took = calls[names[i]]()
            if round_:
                samples[names[i]].append(took)
    return samples


def on_host(fn: Callable[[], Any], sync: Callable[[], Any] | None = None,
            clock: Callable[[], float] = time.perf_counter) -> Timed:
    """``fn`` (then ``sync``, which waits for its device work) timed on a host ``clock``."""

    def timed() -> float:
        start = clock()
        fn()
        if sync is not None:
            sync()
        return clock() - start

    return timed


def on_device(dev: Any, fn: Callable[[], Any]) -> Timed:
    """``fn`` timed between two timing events recorded on ``dev``'s current stream, where
    ``fn`` queues its work (every hurray_gpu launch and device copy does)."""
    start, end = Event(dev), Event(dev)

    def timed() -> float:
        start.record()
        fn()
        end.record()
        return start.elapsed_ms(end) / 1e3

    return timed


def copy_roof(dev: Any, moved: int) -> tuple[Callable[[], Any], Timed, int]:
    """The bandwidth roof of work that moves ``moved`` bytes (read + written) on ``dev``: a
    device-side copy of half as many bytes between two Buffers of ``dev`` (the allocator's own
    copy: cudaMemcpyAsync, clEnqueueCopyBuffer, vkCmdCopyBuffer, memmove).

    Returns:
        (the copy, the copy timed on the device's clock, the bytes it reads and writes).
    """
    nbytes = max(4, moved // 8 * 4)
    src, dst = Buffer(dev, nbytes), Buffer(dev, nbytes)
    # Written once, on the device (no host array of that size): never-touched host pages all
    # map the kernel's one zero page, which a copy then reads from cache.
    dev.run("fill_u32", src, value=1, n=nbytes // 4)

    def copy() -> None:
        dst.copy_from(src, progress=False)

    if dev.kind not in ("cuda", "rocm"):
        return copy, on_device(dev, copy), 2 * nbytes
    # copy_from also waits on the host before it returns: an end event recorded after that
    # wait would add the host's wake-up to the copy (a lower roof, flattering every fraction).
    # So the same driver copy is queued alone between two events, as launch(wait=True) times
    # a kernel.
    cuda = dev.cupy.cuda
    start, end = cuda.Event(), cuda.Event()

    def timed() -> float:
        with dev.context():
            stream = cuda.get_current_stream()
            start.record(stream)
            cuda.runtime.memcpyAsync(dst.allocation.raw.ptr, src.allocation.raw.ptr, nbytes,
                                     cuda.runtime.memcpyDefault, stream.ptr)
            end.record(stream)
            end.synchronize()
        return float(cuda.get_elapsed_time(start, end)) / 1e3

    return copy, timed, 2 * nbytes


def parse_args(parser: argparse.ArgumentParser, quick: dict[str, Any],
               argv: list[str] | None = None) -> argparse.Namespace:
    """``parser``'s arguments plus ``--quick``, whose ``quick`` values replace the defaults
    (flags given explicitly still win): sizes that finish in seconds on a CPU."""
    parser.add_argument("--quick", action="store_true",
                        help="small sizes: " + ", ".join(f"{k}={v}" for k, v in quick.items()))
    if "--quick" in (sys.argv[1:] if argv is None else argv):
        parser.set_defaults(**quick)
    return parser.parse_args(argv)
