"""The vectorized fast path gives exactly the scalar interpreter's bytes, or steps aside."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from vyre import ValidationError, from_wire, reference
from vyre import builder as b
from vyre.ir import BinOp, Scalar, UnOp
from vyre.reference.vector import eligible

GID = b.invocation_id(0)
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "vyre"


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.kat.json")), ids=lambda p: p.name[:3])
def test_kats_agree_between_fast_and_scalar_paths(path: Path) -> None:
    kat = json.loads(path.read_text())
    program = from_wire((GOLDEN / kat["program"]).read_bytes())
    inputs = {i["buffer"]: bytes.fromhex(i["hex"]) for i in kat["inputs"]}
    grid = tuple(kat["grid_workgroups"])
    fast = reference.run_bytes(program, inputs, grid=grid)
    slow = reference.run_bytes(program, inputs, grid=grid, fast=False)
    assert fast == slow
    assert eligible(program) == ("atomic" not in path.name)


def test_fast_path_steps_aside_for_races_errors_and_read_after_write() -> None:
    racy = b.program([b.output("o", 0, b.U32, 2)], [b.store("o", b.mod(GID, 2), GID)],
                     workgroup_size=(8, 1, 1))
    assert eligible(racy)
    assert reference.run(racy, grid=(2, 1, 1))["o"].tolist() == [14, 15]
    assert reference.run(racy, grid=(2, 1, 1), lane_order="reversed")["o"].tolist() == [8, 9]
    div = b.program([b.read("a", 0, b.I32), b.output("o", 1, b.I32, 4)],
                    [b.store("o", GID, b.div(b.lit_i32(7), b.load("a", GID)))],
                    workgroup_size=(4, 1, 1))
    with pytest.raises(reference.ReferenceExecutionError, match="undefined"):
        reference.run(div, [np.array([1, 2, 0, 3], np.int32)], grid=(1, 1, 1))
    rw = b.program([b.read_write("o", 0, b.U32, 4)],
                   [b.store("o", GID, b.add(b.load("o", GID), 1))], workgroup_size=(4, 1, 1))
    assert not eligible(rw)


U32_BIN = [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.MOD, BinOp.BIT_AND, BinOp.BIT_OR,
           BinOp.BIT_XOR, BinOp.SHL, BinOp.SHR, BinOp.ROTATE_LEFT, BinOp.ROTATE_RIGHT,
           BinOp.MIN, BinOp.MAX, BinOp.ABS_DIFF, BinOp.SATURATING_ADD, BinOp.SATURATING_SUB,
           BinOp.SATURATING_MUL, BinOp.MUL_HIGH]
I32_BIN = [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.MOD, BinOp.BIT_AND, BinOp.BIT_XOR,
           BinOp.MIN, BinOp.MAX]
F32_BIN = [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.MIN, BinOp.MAX]
UN = {"u32": [UnOp.NEGATE, UnOp.BIT_NOT, UnOp.POPCOUNT, UnOp.CLZ, UnOp.CTZ, UnOp.REVERSE_BITS,
              UnOp.UNPACK8_HIGH, UnOp.UNPACK4_HIGH],
      "i32": [UnOp.BIT_NOT, UnOp.POPCOUNT, UnOp.CLZ, UnOp.CTZ, UnOp.REVERSE_BITS],
      "f32": [UnOp.NEGATE, UnOp.ABS, UnOp.SQRT, UnOp.FLOOR, UnOp.CEIL, UnOp.ROUND, UnOp.SIGN,
              UnOp.TRUNC, UnOp.RECIPROCAL, UnOp.INVERSE_SQRT]}
BIN = {"u32": U32_BIN, "i32": I32_BIN, "f32": F32_BIN}
SCALAR = {"u32": Scalar.U32, "i32": Scalar.I32, "f32": Scalar.F32}
FLOATS = st.sampled_from([0.5, -2.0, 3.25, 1e-39, -0.0, 1e30, float("inf"), float("nan"), 7.0])


@st.composite
def expr_of(draw, ty: str, depth: int):
    choice = draw(st.integers(0, 5 if depth > 0 else 1))
    if choice == 0:
        return b.load(f"in_{ty}", b.bit_and(b.add(GID, draw(st.integers(0, 3))), 15))
    if choice == 1:
        if ty == "u32":
            return b.lit_u32(draw(st.integers(1, 0xFFFFFFFF)))
        if ty == "i32":
            return b.lit_i32(draw(st.integers(-2 ** 31, 2 ** 31 - 1).filter(bool)))
        return b.lit_f32(draw(FLOATS))
    if choice == 2:
        return b.binop(draw(st.sampled_from(BIN[ty])), draw(expr_of(ty, depth - 1)),
                       draw(expr_of(ty, depth - 1)))
    if choice == 3:
        return b.unop(draw(st.sampled_from(UN[ty])), draw(expr_of(ty, depth - 1)))
    if choice == 4:
        src = draw(st.sampled_from(["u32", "i32", "f32"]))
        return b.cast(SCALAR[ty], draw(expr_of(src, depth - 1)))
    return b.select(draw(cond_of(depth - 1)), draw(expr_of(ty, depth - 1)),
                    draw(expr_of(ty, depth - 1)))


@st.composite
def cond_of(draw, depth: int):
    ty = draw(st.sampled_from(["u32", "i32", "f32"]))
    op = draw(st.sampled_from([BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.GT, BinOp.LE, BinOp.GE]))
    return b.binop(op, draw(expr_of(ty, depth)), draw(expr_of(ty, depth)))


@st.composite
def programs(draw):
    v, n = b.var, 16
    body = [b.let("u", draw(expr_of("u32", 3))), b.let("f", draw(expr_of("f32", 3))),
            b.let("z", draw(expr_of("i32", 2))), b.let("acc", b.var("u")),
            b.loop("i", 0, b.bit_and(b.load("in_u32", b.bit_and(GID, 15)), 3), [
                b.assign("acc", b.bit_xor(b.rotate_left(v("acc"), 5), v("i")))]),
            b.if_(draw(cond_of(2)), [b.store("out", GID, v("acc"))],
                  [b.store("out", GID, b.cast(b.U32, v("z"))),
                   b.if_(b.eq(b.mod(GID, 3), 0), [b.return_()])]),
            b.store("outf", GID, v("f"))]
    return b.program([b.read("in_u32", 0, b.U32), b.read("in_i32", 1, b.I32),
                      b.read("in_f32", 2, b.F32), b.output("out", 3, b.U32, n),
                      b.read_write("outf", 4, b.F32, n)], body,
                     workgroup_size=(draw(st.sampled_from([1, 4, 5])), 1, 1))


INPUTS = {
    "in_u32": np.array([0, 1, 2, 3, 7, 0xFFFFFFFF, 0x80000000, 31, 32, 33, 100, 5, 6, 9, 12, 40],
                       np.uint32),
    "in_i32": np.array([0, -1, 2, -3, 7, -2 ** 31, 2 ** 31 - 1, 31, -32, 33, 100, 5, -6, 9, 1,
                        -40], np.int32),
    "in_f32": np.array([0.0, -0.0, 1.5, -2.5, 1e-40, np.inf, -np.inf, np.nan, 3e38, 0.1, 2.0,
                        -7.25, 16777217.0, 0.5, -0.5, 1.0], np.float32),
    "outf": np.zeros(16, np.float32),
}


def _outcome(prog, fast: bool):
    try:
        return reference.run_bytes(prog, INPUTS, grid=(5, 1, 1), fast=fast)
    except reference.VyreReferenceError as exc:
        return type(exc).__name__


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_agree_between_fast_and_scalar_paths(prog) -> None:
    try:
        reference.reference_grid(prog, INPUTS)
    except ValidationError:
        assume(False)
    assert _outcome(prog, True) == _outcome(prog, False)
