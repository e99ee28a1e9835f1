"""Property: random well-typed expression programs give the reference's bytes on every device.

Trees mix u32 ops with i32 and f32 round trips through casts, selects and comparisons.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.vyre.lower_programs import assert_parity, kernel_devices
from vyre import builder as b
from vyre import ir
from vyre.ir import BinOp, Scalar, UnOp
from vyre.reference import REFERENCE_OPTIONS
from vyre.validate import validate

DEVICES = kernel_devices()
LANES = 16
U32_OPS = [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.MOD, BinOp.BIT_AND, BinOp.BIT_OR,
           BinOp.BIT_XOR, BinOp.SHL, BinOp.SHR, BinOp.ABS_DIFF, BinOp.MIN, BinOp.MAX,
           BinOp.SATURATING_ADD, BinOp.SATURATING_SUB, BinOp.SATURATING_MUL,
           BinOp.ROTATE_LEFT, BinOp.ROTATE_RIGHT, BinOp.MUL_HIGH]
I32_OPS = [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.BIT_AND, BinOp.BIT_XOR, BinOp.MIN,
           BinOp.MAX]
F32_OPS = [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.MIN, BinOp.MAX]
CMP_OPS = [BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.GT, BinOp.LE, BinOp.GE]
U32_UNOPS = [UnOp.NEGATE, UnOp.BIT_NOT, UnOp.POPCOUNT, UnOp.CLZ, UnOp.CTZ, UnOp.REVERSE_BITS,
             UnOp.UNPACK8_HIGH]
F32_UNOPS = [UnOp.NEGATE, UnOp.ABS, UnOp.SQRT, UnOp.FLOOR, UnOp.ROUND, UnOp.TRUNC]

LEAVES = st.one_of(
    st.sampled_from([b.var("x"), b.var("y"), b.invocation_id(0)]),
    st.sampled_from([0, 1, 2, 31, 32, 0x80000000, 0xFFFFFFFF]).map(b.lit_u32),
)


def _extend(children: st.SearchStrategy[ir.Expr]) -> st.SearchStrategy[ir.Expr]:
    u32 = Scalar.U32
    return st.one_of(
        st.builds(b.binop, st.sampled_from(U32_OPS), children, children),
        st.builds(b.unop, st.sampled_from(U32_UNOPS), children),
        st.builds(lambda op, c, x, y: b.select(b.binop(op, c, x), y, c),
                  st.sampled_from(CMP_OPS), children, children, children),
        st.builds(lambda op, x, y: b.cast(u32, b.binop(op, b.cast(Scalar.I32, x),
                                                       b.cast(Scalar.I32, y))),
                  st.sampled_from(I32_OPS), children, children),
        st.builds(lambda op, x, y: b.cast(u32, b.binop(op, b.cast(Scalar.F32, x),
                                                       b.cast(Scalar.F32, y))),
                  st.sampled_from(F32_OPS), children, children),
        st.builds(lambda op, x: b.cast(u32, b.unop(op, b.cast(Scalar.F32, b.cast(Scalar.I32, x)))),
                  st.sampled_from(F32_UNOPS), children),
        st.builds(lambda x, y: b.cast(u32, b.and_(x, y)), children, children),
        # Fma rounds once on every device (GLSL: integer emulation).
        st.builds(lambda x, y, z: b.cast(u32, b.fma(*(b.cast(Scalar.F32, b.cast(Scalar.I32, v))
                                                      for v in (x, y, z)))),
                  children, children, children),
    )


EXPRS = st.recursive(LEAVES, _extend, max_leaves=8)


def _program(expr: ir.Expr) -> ir.Program:
    i = b.invocation_id(0)
    body = [b.let("x", b.load("a", i)), b.let("y", b.load("b", i)), b.store("out", i, expr)]
    return b.program([b.read("a", 0, Scalar.U32), b.read("b", 1, Scalar.U32),
                      b.output("out", 2, Scalar.U32, LANES)], body, workgroup_size=(8, 1, 1))


@pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(expr=EXPRS, seed=st.integers(0, 2**32 - 1))
def test_lower_random_programs_match_reference(device: object, expr: ir.Expr, seed: int) -> None:
    program = _program(expr)
    # Drop draws the validator rejects (a literal-zero divisor, V044): the reference would too.
    assume(not any(d.is_error for d in validate(program, options=REFERENCE_OPTIONS)))
    rng = np.random.default_rng(seed)
    words = [0, 1, 7, 31, 32, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]
    a = rng.choice(np.array(words + list(rng.integers(0, 2**32, 8)), np.uint64), LANES)
    bb = rng.choice(np.array(words + list(rng.integers(0, 2**32, 8)), np.uint64), LANES)
    assert_parity(program, {"a": a.astype(np.uint32), "b": bb.astype(np.uint32)},
                  device, grid=(LANES // 8, 1, 1))
