"""Property tests of the reference interpreter against vectorized NumPy expressions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vyre import builder as b
from vyre import reference
from vyre.ir import BinOp

GID = b.invocation_id(0)
M = 0xFFFFFFFF

NUMPY_U32 = {
    BinOp.ADD: lambda a, c: (a + c) & M,
    BinOp.SUB: lambda a, c: (a - c) & M,
    BinOp.BIT_XOR: np.bitwise_xor,
    BinOp.SHR: lambda a, c: a >> (c & 31),
    BinOp.ROTATE_LEFT: lambda a, c: ((a << (c & 31)) | (a >> ((32 - (c & 31)) & 31))) & M,
    BinOp.DIV: lambda a, c: np.where(c == 0, M, a // np.maximum(c, 1)),
    BinOp.MOD: lambda a, c: np.where(c == 0, 0, a % np.maximum(c, 1)),
    BinOp.MIN: np.minimum,
    BinOp.ABS_DIFF: lambda a, c: np.abs(a.astype(np.int64) - c.astype(np.int64)),
}

u32_arrays = st.integers(1, 24).flatmap(
    lambda n: st.tuples(*[st.lists(st.integers(0, M), min_size=n, max_size=n)] * 2))


@settings(max_examples=40, deadline=None)
@given(u32_arrays, st.sampled_from(list(NUMPY_U32)), st.sampled_from(list(NUMPY_U32)),
       st.sampled_from([1, 3, 8, 32]))
def test_elementwise_chain_matches_numpy(pair, op1, op2, wg) -> None:
    a, c = (np.array(x, dtype=np.uint64) for x in pair)
    n = len(a)
    inner = b.binop(op1, b.load("a", GID), b.load("b", GID))
    prog = b.program(
        [b.read("a", 0, b.U32), b.read("b", 1, b.U32), b.output("out", 2, b.U32, n)],
        [b.if_(b.lt(GID, n), [b.store("out", GID, b.binop(op2, inner, b.load("a", GID)))])],
        workgroup_size=(wg, 1, 1))
    inputs = {"a": a.astype(np.uint32), "b": c.astype(np.uint32)}
    out = reference.run(prog, inputs)["out"]
    want = NUMPY_U32[op2](NUMPY_U32[op1](a, c).astype(np.uint64), a).astype(np.uint32)
    np.testing.assert_array_equal(out, want)
    reversed_out = reference.run(prog, inputs, lane_order="reversed")["out"]
    np.testing.assert_array_equal(reversed_out, out)  # race-free: lane order is irrelevant


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 7), min_size=1, max_size=40), st.sampled_from([1, 4, 16]),
       st.booleans())
def test_atomic_histogram_and_unique_tickets(data, wg, reverse) -> None:
    n = len(data)
    prog = b.program(
        [b.read("data", 0, b.U32), b.read_write("hist", 1, b.U32, 8),
         b.read_write("ticket", 2, b.U32, 1), b.output("trace", 3, b.U32, n)],
        [b.if_(b.lt(GID, b.buf_len("data")), [
            b.let("h", b.atomic_add("hist", b.load("data", GID), 1)),
            b.store("trace", GID, b.atomic_add("ticket", 0, 1))])],
        workgroup_size=(wg, 1, 1))
    out = reference.run(prog, {"data": np.array(data, np.uint32),
                               "hist": np.zeros(8, np.uint32), "ticket": np.zeros(1, np.uint32)},
                        lane_order="reversed" if reverse else "forward")
    np.testing.assert_array_equal(out["hist"], np.bincount(data, minlength=8))
    # Tickets go to lanes in (workgroup, then lane-order) sequence.
    lanes = [list(range(s, min(s + wg, n))) for s in range(0, n, wg)]
    seq = [i for group in lanes for i in (group[::-1] if reverse else group)]
    want = np.empty(n, np.uint32)
    want[seq] = np.arange(n)
    np.testing.assert_array_equal(out["trace"], want)
