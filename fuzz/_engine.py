"""Shared fuzz machinery: the per-input guard (typed errors, time and memory bounds) and a
deterministic libFuzzer-style byte mutator used by the smoke loop and the hypothesis tests.
"""

from __future__ import annotations

import random
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# Values that sit on the edges of u8/u16/u32/u64 length, count and offset checks.
INTERESTING = (
    0, 1, 2, 3, 4, 7, 8, 15, 16, 20, 31, 32, 40, 63, 64, 65, 127, 128, 255, 256, 4095, 4096,
    0x7FFF, 0x8000, 0xFFFF, 0x10000, 1 << 20, 1 << 24, (64 << 20) - 1, 64 << 20,
    0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 64) - 1,
)
OPS = ("flip", "byte", "int", "delta", "insert", "delete", "dup", "truncate", "splice")
WIDTHS = (1, 2, 4, 8)
MAX_INPUT = 1 << 16  # inputs are cut to this many bytes (atheris runs use -max_len=65536)
# Time-bound multiplier: atheris's coverage instrumentation slows Python code ~3x.
SLOWDOWN = [1.0]
# Keep tracemalloc running once a measured input started it. Each start()/stop() cycle
# leaks a few KB of process memory in CPython 3.11 (measured: ~5 KB per cycle), which grows
# a long run measuring every input past libFuzzer's -rss_limit_mb; the atheris entry point
# (its own process, measuring every input) sets this, so tracing costs nothing extra there.
STICKY_TRACING = [False]

Op = tuple[str, int, int, int]  # (kind, position, value, extra)


class FuzzFailure(AssertionError):
    """A decoder broke a fuzz property (undocumented error, time, memory or round trip)."""


@dataclass(frozen=True)
class Bounds:
    """Per-harness resource bounds for one input.

    Attributes:
        seconds: wall-clock limit for decoding one input, plus ``seconds_per_byte`` per byte
            (the decoders are linear; 64 KiB of VIR0 decodes in ~0.3 s uninstrumented).
        mem_factor: allowed tracemalloc peak per input byte while decoding.
        mem_slack: constant allowance (bytes) on top of ``mem_factor * len(input)``.
    """

    seconds: float = 2.0
    mem_factor: int = 32
    mem_slack: int = 1 << 20
    seconds_per_byte: float = 20e-6

    def time_limit(self, size: int) -> float:
        """The longest decode allowed for an input of ``size`` bytes (times SLOWDOWN)."""
        return (self.seconds + self.seconds_per_byte * size) * SLOWDOWN[0]

    def memory_limit(self, size: int, extra: int = 0) -> int:
        """The largest tracemalloc peak allowed for an input of ``size`` bytes."""
        return self.mem_factor * size + self.mem_slack + extra


@dataclass
class Stats:
    """Counts gathered by a fuzz loop (``inputs``: those that reached the decoder)."""

    iterations: int = 0
    inputs: int = 0
    decoded: int = 0
    rejected: int = 0
    memory_checked: int = 0
    max_seconds: float = 0.0
    max_peak_ratio: float = 0.0
    notes: dict[str, int] = field(default_factory=dict)

    def note(self, key: str) -> None:
        """Count one occurrence of ``key``."""
        self.notes[key] = self.notes.get(key, 0) + 1


Allowed = type[BaseException] | tuple[type[BaseException], ...]


def guarded(decode: Callable[[], Any], allowed: Allowed, *, size: int, bounds: Bounds,
            measure_memory: bool, mem_extra: int = 0, stats: Stats | None = None) -> Any:
    """Run ``decode`` and enforce the decode-side properties.

    Args:
        decode: the decoding call, taking no arguments.
        allowed: the documented error type(s); they are swallowed (None is returned).
        size: input size in bytes (for the memory bound).
        bounds: time and memory bounds.
        measure_memory: trace allocations and check the peak (slower).
        mem_extra: an additional documented allowance in bytes (e.g. a bounded read-ahead).
        stats: counters to update.

    Returns:
        Whatever ``decode`` returned, or None when it raised an allowed error.

    Raises:
        FuzzFailure: an undocumented exception escaped, a documented one lacks a ``Fix:`` hint,
            the call ran too long, or it allocated past the bound.
    """
    started_tracing = measure_memory and not tracemalloc.is_tracing()
    if started_tracing:
        tracemalloc.start()
    if measure_memory:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    result: Any = None
    try:
        result = decode()
    except allowed as exc:
        if "Fix:" not in str(exc):
            raise FuzzFailure(f"{type(exc).__name__} without a Fix: hint: {exc}") from exc
        result = None
    except Exception as exc:  # any other type breaks the error contract
        raise FuzzFailure(f"undocumented {type(exc).__name__} escaped: {exc!r}") from exc
    finally:
        elapsed = time.perf_counter() - t0
        if measure_memory:
            peak = tracemalloc.get_traced_memory()[1] - base
            if started_tracing and not STICKY_TRACING[0]:
                tracemalloc.stop()
    if elapsed > bounds.time_limit(size):
        raise FuzzFailure(f"decoding a {size}-byte input took {elapsed:.3f} s "
                          f"(bound {bounds.time_limit(size):.3f} s)")
    if measure_memory:
        limit = bounds.memory_limit(size, mem_extra)
        if peak > limit:
            raise FuzzFailure(f"decoding a {size}-byte input peaked at {peak} traced bytes "
                              f"(bound {limit})")
    if stats is not None:
        stats.inputs += 1
        stats.max_seconds = max(stats.max_seconds, elapsed)
        if result is None:
            stats.rejected += 1
        else:
            stats.decoded += 1
        if measure_memory:
            stats.memory_checked += 1
            stats.max_peak_ratio = max(stats.max_peak_ratio, peak / max(size, 1))
    return result


def _put_int(buf: bytearray, pos: int, value: int, width: int) -> None:
    if not buf:
        return
    pos %= len(buf)
    raw = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
    buf[pos:pos + width] = raw[: len(buf) - pos] if pos + width > len(buf) else raw


def apply_op(data: bytearray, op: Op, pool: Sequence[bytes]) -> None:
    """Apply one mutation in place.

    Args:
        data: the input being mutated.
        op: ``(kind, position, value, extra)``; positions wrap modulo the length.
        pool: other inputs for ``splice``.
    """
    kind, pos, value, extra = op
    n = len(data)
    if kind == "insert" or n == 0:
        at = pos % (n + 1)
        data[at:at] = value.to_bytes(8, "little")[: 1 + extra % 8]
    elif kind == "flip":
        data[pos % n] ^= 1 << (value % 8)
    elif kind == "byte":
        data[pos % n] = value & 0xFF
    elif kind == "int":
        _put_int(data, pos, INTERESTING[value % len(INTERESTING)], WIDTHS[extra % 4])
    elif kind == "delta":
        at, width = pos % n, WIDTHS[extra % 4]
        old = int.from_bytes(data[at:at + width], "little")
        _put_int(data, at, old + (value % 33) - 16, width)
    elif kind == "delete":
        at = pos % n
        del data[at:at + 1 + extra % 16]
    elif kind == "dup":
        at = pos % n
        chunk = data[at:at + 1 + extra % 64]
        dest = value % (n + 1)
        data[dest:dest] = chunk
    elif kind == "truncate":
        del data[pos % n:]
    elif kind == "splice" and pool:
        other = pool[value % len(pool)]
        if other:
            start = extra % len(other)
            data[pos % n:] = other[start:start + 1 + (value >> 8) % 512]
    if len(data) > MAX_INPUT:
        del data[MAX_INPUT:]


def mutate(seed: bytes, ops: Sequence[Op], pool: Sequence[bytes]) -> bytes:
    """Apply ``ops`` to a copy of ``seed``; byte 0 (the harness control byte) is mutated too."""
    data = bytearray(seed)
    for op in ops:
        apply_op(data, op, pool)
    return bytes(data)


def random_ops(rng: random.Random) -> list[Op]:
    """One to six random mutations, biased toward integer fields (lengths, counts, offsets)."""
    ops = []
    for _ in range(rng.choice((1, 1, 2, 2, 3, 4, 6))):
        kind = rng.choice(OPS + ("int", "int", "byte"))
        ops.append((kind, rng.getrandbits(20), rng.getrandbits(24), rng.getrandbits(8)))
    return ops


@dataclass
class Harness:
    """One decoder's fuzz target.

    Attributes:
        name: short name (also the regression folder name).
        seeds: returns the seed inputs (control byte first).
        one_input: the property check for one input (True when it decoded); raises
            FuzzFailure on a violation.
    """

    name: str
    seeds: Callable[[], list[bytes]]
    one_input: Callable[..., bool]


def smoke(harness: Harness, inputs: int, *, seed: int = 0, memory_every: int = 8,
          on_failure: Callable[[bytes, BaseException], None] | None = None) -> Stats:
    """Deterministic mutation loop: every seed once, then ``inputs`` mutants.

    Inputs that decode are fed back into the pool, so mutations can stack deeper than one
    round. The same ``seed`` gives the same inputs on every machine.

    Args:
        harness: the target.
        inputs: how many mutated inputs to run (seeds are run in addition).
        seed: PRNG seed.
        memory_every: trace memory on every n-th input (tracing costs ~2x).
        on_failure: called with the failing input before the failure is re-raised.

    Returns:
        The loop's Stats.

    Raises:
        FuzzFailure: the first property violation.
    """
    rng = random.Random(seed)
    base = harness.seeds()
    pool = list(base)
    stats = Stats()
    for i, data in enumerate(_inputs(base, pool, rng, inputs)):
        stats.iterations += 1
        try:
            ok = harness.one_input(data, measure_memory=i % memory_every == 0, stats=stats)
        except BaseException as exc:
            if on_failure is not None:
                on_failure(data, exc)
            raise
        if ok and len(pool) < 4 * len(base) + 256 and rng.random() < 0.25:
            pool.append(data)
    return stats


def _inputs(base: list[bytes], pool: list[bytes], rng: random.Random, count: int):
    yield from base
    for _ in range(count):
        yield mutate(rng.choice(pool), random_ops(rng), pool)
