"""Reference interpreter UnOps, casts, Select and Fma, checked against NumPy or by hand."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from vyre import builder as b
from vyre import reference
from vyre.ir import DataType, Scalar, UnOp

GID = b.invocation_id(0)


def run_map(expr_of, elem: Scalar, a: np.ndarray, out_elem: Scalar) -> np.ndarray:
    """out[i] = expr_of(a[i]) with one lane per element."""
    n = len(a)
    prog = b.program([b.read("a", 0, elem), b.output("out", 1, out_elem, n)],
                     [b.store("out", GID, expr_of(b.load("a", GID)))], workgroup_size=(n, 1, 1))
    return reference.run(prog, {"a": a}, grid=(1, 1, 1))["out"]


U = np.array([0, 1, 0x80000000, 0x00F00000, 0xFFFFFFFF, 0x12345678, 6, 0xF0F0F0F0],
             dtype=np.uint32)


def _bits(x: int) -> str:
    return format(int(x), "032b")


U32_UNOPS = {
    UnOp.NEGATE: lambda x: (-x.astype(np.int64)) % 2 ** 32,
    UnOp.BIT_NOT: np.invert,
    UnOp.POPCOUNT: lambda x: np.array([_bits(v).count("1") for v in x]),
    UnOp.CLZ: lambda x: np.array([len(_bits(v)) - len(_bits(v).lstrip("0")) for v in x]),
    UnOp.CTZ: lambda x: np.array([len(_bits(v)) - len(_bits(v).rstrip("0")) for v in x]),
    UnOp.REVERSE_BITS: lambda x: np.array([int(_bits(v)[::-1], 2) for v in x]),
    UnOp.UNPACK4_LOW: lambda x: x & 0xF,
    UnOp.UNPACK4_HIGH: lambda x: (x >> 4) & 0xF,
    UnOp.UNPACK8_LOW: lambda x: x & 0xFF,
    UnOp.UNPACK8_HIGH: lambda x: (x >> 24) & 0xFF,
}


@pytest.mark.parametrize("op", list(U32_UNOPS), ids=lambda o: o.name)
def test_u32_unops(op: UnOp) -> None:
    got = run_map(lambda v: b.unop(op, v), Scalar.U32, U, Scalar.U32)
    np.testing.assert_array_equal(got, U32_UNOPS[op](U).astype(np.uint32))


def test_clz_ctz_of_zero_are_32_and_logical_not_gives_bool() -> None:
    assert run_map(b.clz, Scalar.U32, U[:2], Scalar.U32).tolist() == [32, 31]
    assert run_map(b.ctz, Scalar.U32, U[:3], Scalar.U32).tolist() == [32, 0, 31]
    assert run_map(b.logical_not, Scalar.U32, U[:3], Scalar.BOOL).tolist() == [1, 0, 0]


@pytest.mark.parametrize("op", [UnOp.BIT_NOT, UnOp.POPCOUNT, UnOp.CLZ, UnOp.CTZ,
                                UnOp.REVERSE_BITS], ids=lambda o: o.name)
def test_i32_unops_use_the_bit_pattern(op: UnOp) -> None:
    got = run_map(lambda v: b.unop(op, v), Scalar.I32, U.view(np.int32), Scalar.I32)
    np.testing.assert_array_equal(got.view(np.uint32), U32_UNOPS[op](U).astype(np.uint32))


F = np.array([2.5, -2.5, 0.5, -0.4, 1.75, -0.0, 4.0, 1e-40, np.inf, -np.inf, np.nan, 16777215.0,
              -7.5, 0.1], dtype=np.float32)


def _canon(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32).copy()
    bits[np.isnan(x)] = 0x7FC00000
    bits[(np.abs(x) < 2 ** -126) & (x != 0)] &= 0x80000000
    return bits


F_IN = np.where(np.abs(F) < 2 ** -126, np.copysign(np.float32(0), F), F).astype(np.float32)
F32_EXACT = {
    UnOp.NEGATE: np.negative, UnOp.ABS: np.abs, UnOp.SQRT: np.sqrt,
    UnOp.FLOOR: np.floor, UnOp.CEIL: np.ceil, UnOp.TRUNC: np.trunc,
    UnOp.ROUND: lambda x: np.where(np.abs(x) < 2 ** 23,
                                   np.copysign(np.floor(np.abs(x.astype(np.float64)) + 0.5), x),
                                   x),
    UnOp.SIGN: lambda x: np.where(np.isnan(x), x, np.where(x > 0, 1, np.where(x < 0, -1, 0))),
    UnOp.RECIPROCAL: lambda x: np.float32(1) / x,
    UnOp.INVERSE_SQRT: lambda x: np.float32(1) / np.sqrt(x),
}


@pytest.mark.parametrize("op", list(F32_EXACT), ids=lambda o: o.name)
def test_f32_exact_unops(op: UnOp) -> None:
    got = run_map(lambda v: b.unop(op, v), Scalar.F32, F, Scalar.F32)
    with np.errstate(all="ignore"):
        want = F32_EXACT[op](F_IN).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), _canon(want))


def test_round_is_half_away_from_zero() -> None:
    got = run_map(lambda v: b.unop(UnOp.ROUND, v), Scalar.F32,
                  np.array([0.5, 1.5, 2.5, -2.5, -0.5, 2.4999998], np.float32), Scalar.F32)
    assert got.tolist() == [1.0, 2.0, 3.0, -3.0, -1.0, 2.0]


@pytest.mark.parametrize("op,fn", [(UnOp.EXP, np.exp), (UnOp.LOG, np.log), (UnOp.SIN, np.sin),
                                   (UnOp.COS, np.cos), (UnOp.TANH, np.tanh),
                                   (UnOp.EXP2, np.exp2), (UnOp.LOG2, np.log2),
                                   (UnOp.ATAN, np.arctan)], ids=lambda o: getattr(o, "name", ""))
def test_f32_transcendentals_within_two_ulp(op: UnOp, fn) -> None:
    x = np.array([0.5, 1.0, 2.0, 3.25, 10.0, 0.125], dtype=np.float32)
    got = run_map(lambda v: b.unop(op, v), Scalar.F32, x, Scalar.F32)
    want = fn(x.astype(np.float64)).astype(np.float32)
    ulp = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulp.max() <= 2


def test_f32_classification_unops() -> None:
    for op, fn in ((UnOp.IS_NAN, np.isnan), (UnOp.IS_INF, np.isinf),
                   (UnOp.IS_FINITE, np.isfinite)):
        got = run_map(lambda v, op=op: b.unop(op, v), Scalar.F32, F, Scalar.BOOL)
        np.testing.assert_array_equal(got, fn(F).astype(np.uint32))


def _cast_map(target: DataType, elem: Scalar, values, back: Scalar) -> list:
    out_elem = back
    return run_map(lambda v: b.cast(back, b.cast(target, v)) if back != target
                   else b.cast(target, v), elem, np.asarray(values), out_elem).tolist()


def test_float_to_int_casts_truncate_and_saturate() -> None:
    f = np.array([3.9, -3.9, 1e10, -1e10, np.nan, 4294967040.0, 0.0], np.float32)
    assert _cast_map(Scalar.U32, Scalar.F32, f, Scalar.U32) == \
        [3, 0, 0xFFFFFFFF, 0, 0, 4294967040, 0]
    assert _cast_map(Scalar.I32, Scalar.F32, f, Scalar.I32) == \
        [3, -3, 2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1, 0]


def test_int_to_float_casts_round_to_nearest_even() -> None:
    u = np.array([16777217, 0xFFFFFFFF, 16777219, 5], np.uint32)
    assert _cast_map(Scalar.F32, Scalar.U32, u, Scalar.F32) == \
        [16777216.0, 4294967296.0, 16777220.0, 5.0]
    i = np.array([-16777217, -1, 2 ** 31 - 1], np.int32)
    assert _cast_map(Scalar.F32, Scalar.I32, i, Scalar.F32) == [-16777216.0, -1.0, 2.0 ** 31]


def test_reinterpret_narrowing_and_bool_casts() -> None:
    u = np.array([0xFFFFFFFF, 0x1234, 200, 0], np.uint32)
    assert _cast_map(Scalar.I32, Scalar.U32, u, Scalar.I32) == [-1, 0x1234, 200, 0]
    assert _cast_map(Scalar.U8, Scalar.U32, u, Scalar.U32) == [0xFF, 0x34, 200, 0]
    assert _cast_map(Scalar.I8, Scalar.U32, u, Scalar.I32) == [-1, 0x34, -56, 0]
    assert _cast_map(Scalar.U16, Scalar.U32, u, Scalar.U32) == [0xFFFF, 0x1234, 200, 0]
    assert _cast_map(Scalar.BOOL, Scalar.U32, u, Scalar.U32) == [1, 1, 1, 0]
    f = np.array([np.nan, -0.0, 0.5, 1e-40], np.float32)
    assert _cast_map(Scalar.BOOL, Scalar.F32, f, Scalar.U32) == [1, 0, 1, 0]


def test_u8_buffer_loads_are_raw_bytes_zero_extended_by_casts() -> None:
    data = np.array([0xFF, 0x80, 7], np.uint8)
    assert run_map(lambda v: b.cast(b.I32, v), Scalar.U8, data, Scalar.I32).tolist() == \
        [255, 128, 7]
    assert run_map(lambda v: b.cast(b.U32, v), Scalar.I8, data, Scalar.U32).tolist() == \
        [255, 128, 7]


def test_u64_casts_sign_extend_and_refuse_to_narrow_large_values() -> None:
    i = np.array([-1, 5], np.int32)
    got = run_map(lambda v: b.cast(b.U64, v), Scalar.I32, i, Scalar.U64)
    assert got.tolist() == [2 ** 64 - 1, 5]
    assert run_map(lambda v: b.cast(b.U32, b.cast(b.U64, v)), Scalar.I32, i[1:],
                   Scalar.U32).tolist() == [5]
    with pytest.raises(reference.ReferenceExecutionError, match="cannot represent"):
        run_map(lambda v: b.cast(b.U32, b.cast(b.U64, v)), Scalar.I32, i[:1], Scalar.U32)


def test_half_casts_round_and_hold_f32() -> None:
    f = np.array([1.0009765625 + 2 ** -12, 65520.0, 1.00390625 + 2 ** -10], np.float32)
    got = _cast_map(Scalar.F16, Scalar.F32, f, Scalar.F32)
    assert got == [float(np.float16(f[0])), math.inf, float(np.float16(f[2]))]
    got = _cast_map(Scalar.BF16, Scalar.F32, np.array([1.00390625, 1.01171875], np.float32),
                    Scalar.F32)
    assert got == [1.0, 1.015625]  # ties to even on the bfloat16 grid


def test_select_is_eager_and_picks_by_truthiness() -> None:
    a = np.array([0, 3], np.uint32)
    # Both arms load; the OOB arm reads 0 (no error), the cond picks the result.
    got = run_map(lambda v: b.select(v, b.load("a", 1), b.load("a", 99)), Scalar.U32, a,
                  Scalar.U32)
    assert got.tolist() == [0, 3]


def test_fma_rounds_once() -> None:
    x = np.float32(1 + 2 ** -12)
    prog = b.program([b.read("a", 0, b.F32), b.output("out", 1, b.F32, 2)], [
        b.store("out", 0, b.fma(b.load("a", 0), b.load("a", 0), -1.0)),
        b.store("out", 1, b.sub(b.mul(b.load("a", 0), b.load("a", 0)), 1.0))])
    got = reference.run(prog, {"a": np.array([x], np.float32)}, grid=(1, 1, 1))["out"]
    exact = Fraction(float(x)) ** 2 - 1
    assert got[0] == np.float32(float(exact)) == np.float32(2 ** -11 + 2 ** -24)
    assert got[1] == np.float32(2 ** -11)  # double rounding loses the 2**-24 term
