"""The soft-f64 operations (hurray_gpu/dialect/softf64.py, WGSL's f64) rendered through host C:
every operation bit-equal to NumPy's float64 (IEEE, round to nearest even) on every pair of
hostile values (zeros, subnormals, inf, NaN, the top binade, integers at 2^53) and a seeded
random sample built for ties, carries, cancellation, subnormal results and overflow. A larger
sample runs in ci/fuzz.sh (SOFTF64_N)."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import pytest

from tests._softf64 import SPECIAL, build, doubles, pairs, same
from tests._support import stable_rng

N = int(os.environ.get("SOFTF64_N", "60000"))
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
COMPARE = {"lt": np.less, "le": np.less_equal, "eq": np.equal}


@pytest.fixture(scope="module")
def call() -> Callable[..., np.ndarray]:
    return build()


@pytest.fixture(scope="module")
def operands() -> tuple[np.ndarray, np.ndarray]:
    return pairs(N, "ci")


def _check(got: np.ndarray, want: np.ndarray, *inputs: np.ndarray) -> None:
    bad = np.flatnonzero(~same(got, want))
    where = [
        tuple(float(x[i]).hex() for x in inputs) + (float(got[i]).hex(), float(want[i]).hex())
        for i in bad[:4]
    ]
    assert not bad.size, f"{bad.size} wrong of {got.size}: (inputs..., got, want) {where}"


@pytest.mark.parametrize("name", BINARY)
def test_arithmetic_is_ieee(
    call: Callable[..., np.ndarray], name: str, operands: tuple[np.ndarray, np.ndarray]
) -> None:
    a, b = operands
    with np.errstate(all="ignore"):
        want = BINARY[name](a, b)
    _check(call(name, a, b), want, a, b)


def test_sample_reaches_the_hard_cases(operands: tuple[np.ndarray, np.ndarray]) -> None:
    """The sample holds what the rounding must get right: subnormal and overflowing results,
    exact cancellations and exact ties of a sum (half an ulp of the larger operand)."""
    a, b = operands
    with np.errstate(all="ignore"):
        s = a + b
        p = a * b
    tiny = np.abs(p[np.isfinite(p) & (p != 0)]) < 2.0**-1022
    assert tiny.sum() > 100
    assert (np.isinf(p) & np.isfinite(a) & np.isfinite(b)).sum() > 100
    assert ((s == 0) & (a != 0)).sum() > 100


def test_square_root_and_negation(call: Callable[..., np.ndarray]) -> None:
    x = np.concatenate([SPECIAL, doubles(N, "sqrt")])
    with np.errstate(all="ignore"):
        _check(call("sqrt", x), np.sqrt(x), x)
    _check(call("neg", x), -x, x)


def test_conversions(call: Callable[..., np.ndarray]) -> None:
    rng = stable_rng("softf64", "conversions")
    words = np.concatenate(
        [
            np.array(
                [
                    0,
                    1,
                    0x7FFFFFFF,
                    0x80000000,
                    0xFFFFFFFF,
                    0x7F800000,
                    0xFF800000,
                    0x7FC00000,
                    0x807FFFFF,
                    0x00800000,
                ],
                np.uint32,
            ),
            rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32),
        ]
    )
    f = words.view(np.float32)
    _check(call("from_f32", f), f.astype(np.float64), f)
    assert np.array_equal(
        call("from_i32", words.view(np.int32)), words.view(np.int32).astype(np.float64)
    )
    assert np.array_equal(call("from_u32", words), words.astype(np.float64))
    x = np.concatenate([SPECIAL, doubles(N, "narrow")])
    with np.errstate(all="ignore"):
        _check(call("to_f32", x), x.astype(np.float32), x)
    k = np.arange(-1200, 1200, dtype=np.int32)
    with np.errstate(all="ignore"):
        _check(call("pow2", k), np.ldexp(1.0, k), k)


def test_to_i32_truncates_and_saturates(call: Callable[..., np.ndarray]) -> None:
    with np.errstate(all="ignore"):
        x = np.concatenate([SPECIAL, doubles(N, "int") * 1e-290, np.linspace(-3e9, 3e9, 20001)])
    inside = (np.abs(x) < 2.0**31) | (x == -(2.0**31))
    got = call("to_i32", x)
    assert np.array_equal(got[inside], np.trunc(x[inside]).astype(np.int32))
    assert np.all(got[~inside & (x > 0)] == 2**31 - 1)
    assert np.all(got[~inside & (x < 0)] == -(2**31))
    assert np.all(got[np.isnan(x)] == 0)


@pytest.mark.parametrize("name", COMPARE)
def test_comparisons(
    call: Callable[..., np.ndarray], name: str, operands: tuple[np.ndarray, np.ndarray]
) -> None:
    a, b = operands
    got = call(name, a, b).astype(bool)
    want = COMPARE[name](a, b)
    bad = np.flatnonzero(got != want)
    assert not bad.size, [(float(a[i]).hex(), float(b[i]).hex()) for i in bad[:4]]


def test_ties_to_even_are_checked(operands: tuple[np.ndarray, np.ndarray]) -> None:
    """The sample catches a rounding that sends ties away from zero (the break-check)."""
    a, b = operands
    broken = build(break_ties=True)
    with np.errstate(all="ignore"):
        wrong = (~same(broken("add", a, b), a + b)).sum()
        wrong_mul = (~same(broken("mul", a, b), a * b)).sum()
    assert wrong > 100 and wrong_mul > 10
