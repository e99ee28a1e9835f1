"""The fuzz guard itself: each kind of property violation is caught, clean inputs pass."""

from __future__ import annotations

import time

import numpy as np
import pytest

from fuzz._engine import Bounds, FuzzFailure, Stats, apply_op, guarded, mutate
from hurray_gpu.errors import HurrayFormatError

BOUNDS = Bounds(seconds=0.2, mem_factor=4, mem_slack=1 << 16, seconds_per_byte=0.0)


def _raise(exc: BaseException) -> None:
    raise exc


def test_documented_error_is_swallowed_and_counted() -> None:
    stats = Stats()
    err = HurrayFormatError("bad", field="x", offset=0, fix="send a good one.")
    assert guarded(lambda: _raise(err), HurrayFormatError, size=1, bounds=BOUNDS,
                   measure_memory=True, stats=stats) is None
    assert (stats.inputs, stats.rejected, stats.decoded, stats.memory_checked) == (1, 1, 0, 1)


@pytest.mark.parametrize("exc", [IndexError("i"), KeyError("k"), MemoryError(),
                                 RecursionError(), ValueError("v")])
def test_undocumented_error_fails(exc: BaseException) -> None:
    with pytest.raises(FuzzFailure, match="undocumented"):
        guarded(lambda: _raise(exc), HurrayFormatError, size=1, bounds=BOUNDS,
                measure_memory=False)


def test_documented_error_without_fix_hint_fails() -> None:
    class Plain(ValueError):
        pass

    with pytest.raises(FuzzFailure, match="Fix:"):
        guarded(lambda: _raise(Plain("no hint")), Plain, size=1, bounds=BOUNDS,
                measure_memory=False)


def test_slow_decode_fails() -> None:
    with pytest.raises(FuzzFailure, match="took"):
        guarded(lambda: time.sleep(0.3), HurrayFormatError, size=1, bounds=BOUNDS,
                measure_memory=False)


def test_memory_over_the_bound_fails_and_under_passes() -> None:
    with pytest.raises(FuzzFailure, match="peaked"):
        guarded(lambda: np.ones(1 << 20, np.uint8), HurrayFormatError, size=100,
                bounds=BOUNDS, measure_memory=True)
    out = guarded(lambda: np.ones(1 << 10, np.uint8), HurrayFormatError, size=100,
                  bounds=BOUNDS, measure_memory=True)
    assert out.sum() == 1 << 10
    extra = guarded(lambda: np.ones(1 << 20, np.uint8), HurrayFormatError, size=100,
                    bounds=BOUNDS, measure_memory=True, mem_extra=2 << 20)
    assert extra.size == 1 << 20


def test_mutations_are_deterministic_and_bounded() -> None:
    seed = bytes(range(40))
    ops = [("int", 6, 34, 2), ("delete", 3, 0, 1), ("insert", 0, 0xABCD, 1)]
    assert mutate(seed, ops, [seed]) == mutate(seed, ops, [seed])
    data = bytearray(seed)
    apply_op(data, ("int", 6, 34, 2), [])  # INTERESTING[34] = 2**63 - 1, cut to u32
    assert data[6:10] == b"\xff\xff\xff\xff"
    big = bytearray(1 << 16)
    apply_op(big, ("dup", 0, 5, 63), [])
    assert len(big) == 1 << 16
    empty = bytearray()
    apply_op(empty, ("flip", 5, 1, 0), [])
    assert len(empty) == 1


def test_sticky_tracing_keeps_tracemalloc_running(monkeypatch: pytest.MonkeyPatch) -> None:
    # start()/stop() per input leaks process memory; atheris runs keep tracing on instead.
    import tracemalloc

    from fuzz import _engine

    assert not tracemalloc.is_tracing()
    guarded(lambda: None, HurrayFormatError, size=1, bounds=BOUNDS, measure_memory=True)
    assert not tracemalloc.is_tracing()
    monkeypatch.setattr(_engine, "STICKY_TRACING", [True])
    try:
        guarded(lambda: None, HurrayFormatError, size=1, bounds=BOUNDS, measure_memory=True)
        assert tracemalloc.is_tracing()
        out = guarded(lambda: np.ones(1 << 20, np.uint8), HurrayFormatError, size=100,
                      bounds=BOUNDS, measure_memory=True, mem_extra=2 << 20)
        assert out.size == 1 << 20 and tracemalloc.is_tracing()
    finally:
        tracemalloc.stop()
