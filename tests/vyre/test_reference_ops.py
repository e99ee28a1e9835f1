"""Reference interpreter BinOps on u32, i32, f32 and bool, checked against NumPy expressions."""

from __future__ import annotations

import numpy as np
import pytest

from vyre import builder as b
from vyre import reference
from vyre.ir import BinOp, Scalar

M = 0xFFFFFFFF
U_A = np.array([0, 1, 7, 0xFFFFFFFF, 0x80000000, 12345, 0xDEADBEEF, 100, 3, 0x7FFFFFFF,
                0xFFFF0000, 64, 5, 0xFFFFFFFE, 1 << 31, 9], dtype=np.uint64)
U_B = np.array([0, 0, 3, 1, 2, 0xFFFFFFFF, 33, 100, 40, 0x7FFFFFFF, 31, 0,
                0xFFFFFFFF, 2, 63, 32], dtype=np.uint64)


def run_binop(op: BinOp, elem: Scalar, a: np.ndarray, bb: np.ndarray,
              out_elem: Scalar | None = None) -> np.ndarray:
    """out[i] = op(a[i], b[i]) with one lane per element."""
    n = len(a)
    out_elem = out_elem or elem
    value = b.binop(op, b.load("a", b.invocation_id(0)), b.load("b", b.invocation_id(0)))
    prog = b.program(
        [b.read("a", 0, elem), b.read("b", 1, elem), b.output("out", 2, out_elem, n)],
        [b.store("out", b.invocation_id(0), value)], workgroup_size=(n, 1, 1))
    return reference.run(prog, {"a": a, "b": bb}, grid=(1, 1, 1))["out"]


U32_EXPECT = {
    BinOp.ADD: lambda a, c: (a + c) & M,
    BinOp.WRAPPING_ADD: lambda a, c: (a + c) & M,
    BinOp.SUB: lambda a, c: (a - c) & M,
    BinOp.WRAPPING_SUB: lambda a, c: (a - c) & M,
    BinOp.MUL: lambda a, c: ((a & 0xFFFF) * c + (((a >> 16) * c & 0xFFFF) << 16)) & M,
    BinOp.DIV: lambda a, c: np.where(c == 0, M, a // np.maximum(c, 1)),
    BinOp.MOD: lambda a, c: np.where(c == 0, 0, a % np.maximum(c, 1)),
    BinOp.BIT_AND: np.bitwise_and, BinOp.BIT_OR: np.bitwise_or, BinOp.BIT_XOR: np.bitwise_xor,
    BinOp.SHL: lambda a, c: (a << (c % 32)) & M,
    BinOp.SHR: lambda a, c: a >> (c % 32),
    BinOp.ROTATE_LEFT: lambda a, c: ((a << (c % 32)) | (a >> ((32 - c % 32) % 32))) & M,
    BinOp.ROTATE_RIGHT: lambda a, c: ((a >> (c % 32)) | (a << ((32 - c % 32) % 32))) & M,
    BinOp.MIN: np.minimum, BinOp.MAX: np.maximum,
    BinOp.ABS_DIFF: lambda a, c: np.where(a > c, a - c, c - a),
    BinOp.SATURATING_ADD: lambda a, c: np.minimum(a + c, M),
    BinOp.SATURATING_SUB: lambda a, c: np.where(a > c, a - c, 0),
    BinOp.SATURATING_MUL: lambda a, c: np.array(
        [min(int(x) * int(y), M) for x, y in zip(a, c, strict=True)], dtype=np.uint64),
    BinOp.MUL_HIGH: lambda a, c: np.array(
        [(int(x) * int(y)) >> 32 for x, y in zip(a, c, strict=True)], dtype=np.uint64),
}


@pytest.mark.parametrize("op", list(U32_EXPECT), ids=lambda o: o.name)
def test_u32_binops(op: BinOp) -> None:
    got = run_binop(op, Scalar.U32, U_A.astype(np.uint32), U_B.astype(np.uint32))
    np.testing.assert_array_equal(got, U32_EXPECT[op](U_A, U_B).astype(np.uint32))


def test_u32_division_by_zero_and_shift_wrap_literal_values() -> None:
    a = np.array([17, 0, M, 5], dtype=np.uint32)
    z = np.zeros(4, dtype=np.uint32)
    assert run_binop(BinOp.DIV, Scalar.U32, a, z).tolist() == [M] * 4
    assert run_binop(BinOp.MOD, Scalar.U32, a, z).tolist() == [0] * 4
    sh = np.array([33, 32, 64 + 4, 31], dtype=np.uint32)
    assert run_binop(BinOp.SHL, Scalar.U32, np.full(4, 1, np.uint32), sh).tolist() == \
        [2, 1, 16, 0x80000000]
    assert run_binop(BinOp.ROTATE_RIGHT, Scalar.U32, np.full(4, 0x12345678, np.uint32),
                     sh).tolist() == [0x091A2B3C, 0x12345678, 0x81234567, 0x2468ACF0]


COMPARES = {BinOp.EQ: np.equal, BinOp.NE: np.not_equal, BinOp.LT: np.less,
            BinOp.GT: np.greater, BinOp.LE: np.less_equal, BinOp.GE: np.greater_equal}


@pytest.mark.parametrize("op", list(COMPARES), ids=lambda o: o.name)
def test_comparisons_u32_i32_f32(op: BinOp) -> None:
    got = run_binop(op, Scalar.U32, U_A.astype(np.uint32), U_B.astype(np.uint32), Scalar.BOOL)
    np.testing.assert_array_equal(got, COMPARES[op](U_A, U_B).astype(np.uint32))
    ia, ib = U_A.astype(np.uint32).view(np.int32), U_B.astype(np.uint32).view(np.int32)
    got = run_binop(op, Scalar.I32, ia, ib, Scalar.BOOL)
    np.testing.assert_array_equal(got, COMPARES[op](ia, ib).astype(np.uint32))
    fa = np.array([1.5, np.nan, -0.0, np.inf, 2.0, 1e-40, -3.0, 0.0], dtype=np.float32)
    fb = np.array([1.5, np.nan, 0.0, 1.0, -2.0, 0.0, np.nan, -1e-41], dtype=np.float32)
    got = run_binop(op, Scalar.F32, fa, fb, Scalar.BOOL)
    # Subnormals compare as (signed) zero after canonicalization.
    ca, cb = np.where(np.abs(fa) < 2 ** -126, 0, fa), np.where(np.abs(fb) < 2 ** -126, 0, fb)
    np.testing.assert_array_equal(got, COMPARES[op](ca, cb).astype(np.uint32))


def test_and_or_are_logical_on_u32_and_bool() -> None:
    a = np.array([0, 1, 2, 0xF0], dtype=np.uint32)
    c = np.array([0, 0, 4, 0x0F], dtype=np.uint32)
    assert run_binop(BinOp.AND, Scalar.U32, a, c, Scalar.BOOL).tolist() == [0, 0, 1, 1]
    assert run_binop(BinOp.OR, Scalar.U32, a, c, Scalar.BOOL).tolist() == [0, 1, 1, 1]
    prog = b.program([b.output("out", 0, b.BOOL, 4)], [
        b.store("out", 0, b.and_(True, False)), b.store("out", 1, b.or_(True, False)),
        b.store("out", 2, b.eq(False, False)), b.store("out", 3, b.ne(True, True))])
    assert reference.run(prog, grid=(1, 1, 1))["out"].tolist() == [0, 1, 1, 0]


def _wrap_i32(x: np.ndarray) -> np.ndarray:
    return ((x + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


I_A = np.array([5, -5, 7, -7, 2 ** 31 - 1, -2 ** 31, 0, 123456, -1, 100], dtype=np.int64)
I_B = np.array([3, 3, -2, -2, 1, 1, 9, -789, -1, 7], dtype=np.int64)
I32_EXPECT = {
    BinOp.ADD: lambda a, c: _wrap_i32(a + c),
    BinOp.SUB: lambda a, c: _wrap_i32(a - c),
    BinOp.MUL: lambda a, c: _wrap_i32(a * c),
    BinOp.DIV: lambda a, c: _wrap_i32(np.sign(a) * np.sign(c) * (np.abs(a) // np.abs(c))),
    BinOp.MOD: lambda a, c: _wrap_i32(np.sign(a) * (np.abs(a) % np.abs(c))),
    BinOp.BIT_AND: lambda a, c: _wrap_i32(a & c), BinOp.BIT_OR: lambda a, c: _wrap_i32(a | c),
    BinOp.BIT_XOR: lambda a, c: _wrap_i32(a ^ c),
    BinOp.MIN: lambda a, c: np.minimum(a, c).astype(np.int32),
    BinOp.MAX: lambda a, c: np.maximum(a, c).astype(np.int32),
}


@pytest.mark.parametrize("op", list(I32_EXPECT), ids=lambda o: o.name)
def test_i32_binops(op: BinOp) -> None:
    got = run_binop(op, Scalar.I32, I_A.astype(np.int32), I_B.astype(np.int32))
    np.testing.assert_array_equal(got, I32_EXPECT[op](I_A, I_B))


def _canon_bits(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32).copy()
    bits[np.isnan(x)] = 0x7FC00000
    sub = (np.abs(x) < 2 ** -126) & (x != 0)
    bits[sub] &= 0x80000000
    return bits


F_A = np.array([1.5, -2.25, 3e38, 1e-38, 0.1, np.inf, -np.inf, np.nan, 7.0, -0.0, 1.0, 5e-39],
               dtype=np.float32)
F_B = np.array([0.25, 4.0, 10.0, 0.25, 0.2, 1.0, np.inf, 2.0, 0.0, 3.0, 3.0, 1.0],
               dtype=np.float32)
F32_EXPECT = {BinOp.ADD: np.add, BinOp.SUB: np.subtract, BinOp.MUL: np.multiply,
              BinOp.DIV: np.divide, BinOp.MIN: np.fmin, BinOp.MAX: np.fmax}


@pytest.mark.parametrize("op", list(F32_EXPECT), ids=lambda o: o.name)
def test_f32_binops_are_ieee_then_canonicalized(op: BinOp) -> None:
    got = run_binop(op, Scalar.F32, F_A, F_B)
    ca = np.where(np.abs(F_A) < 2 ** -126, np.copysign(np.float32(0), F_A), F_A)
    with np.errstate(all="ignore"):
        want = F32_EXPECT[op](ca.astype(np.float32), F_B)
    np.testing.assert_array_equal(got.view(np.uint32), _canon_bits(want))


def test_f32_mod_and_mismatched_operands_are_runtime_errors() -> None:
    f = np.array([1.0], dtype=np.float32)
    with pytest.raises(reference.ReferenceExecutionError, match="Fix:"):
        prog = b.program([b.read("a", 0, b.F32), b.output("o", 1, b.F32, 1)],
                         [b.store("o", 0, b.mod(b.load("a", 0), b.load("a", 0)))])
        reference.run(prog, {"a": f}, grid=(1, 1, 1), validate=False)
    with pytest.raises(reference.ReferenceExecutionError, match="mismatched"):
        prog = b.program([b.output("o", 0, b.U32, 1)], [b.store("o", 0, b.add(1, b.lit_i32(1)))])
        reference.run(prog, grid=(1, 1, 1), validate=False)


@pytest.mark.parametrize(("a", "c"), [(1, 0), (-2 ** 31, -1)])
def test_i32_div_and_mod_undefined_cases_raise(a: int, c: int) -> None:
    for op in (BinOp.DIV, BinOp.MOD):
        with pytest.raises(reference.ReferenceExecutionError, match="undefined"):
            run_binop(op, Scalar.I32, np.array([a], np.int32), np.array([c], np.int32))
