"""Lowered programs keep the reference's semantics where targets differ: out-of-bounds
accesses, atomic return values, eager Select, half-open loops, traps, logical And/Or, store
encodings; constructs that cannot be given exactly are refused with UnsupportedOpError."""

from __future__ import annotations

import numpy as np
import pytest

from hurray_gpu.errors import UnsupportedOpError
from tests.vyre.lower_programs import assert_parity, kernel_devices
from vyre import builder as b
from vyre import ir, reference
from vyre.execute import run, run_bytes
from vyre.ir import AtomicOp, Scalar
from vyre.lower import TrapError, lower
from vyre.reference import ReferenceExecutionError
from vyre.validate import ValidationError

DEVICES = kernel_devices()
ON_DEVICES = pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
SERIAL = [  # serial atomics (docs/vyre-semantics.md, Atomics): op, values, initial state, final state, trace
    (AtomicOp.ADD, [1, 5, 0xFFFFFFFF, 3], 7, 15, [7, 8, 13, 12]),
    (AtomicOp.AND, [0xFF, 0xF0, 0x0F, 0x33], 0xFFFFFFFF, 0, [0xFFFFFFFF, 0xFF, 0xF0, 0]),
    (AtomicOp.OR, [1, 2, 4, 8], 0, 0xF, [0, 1, 3, 7]),
    (AtomicOp.XOR, [0xF0, 0x0F, 0xFF, 0x55], 0, 0x55, [0, 0xF0, 0xFF, 0]),
    (AtomicOp.MIN, [50, 20, 80, 10], 100, 10, [100, 50, 20, 20]),
    (AtomicOp.MAX, [50, 20, 80, 10], 0, 80, [0, 50, 50, 80]),
    (AtomicOp.EXCHANGE, [100, 200, 300, 400], 42, 400, [42, 100, 200, 300]),
    (AtomicOp.LRU_UPDATE, [50, 20, 80, 10], 0, 80, [0, 50, 50, 80]),
]


def _serial(op: AtomicOp) -> ir.Program:
    i = b.var("i")
    old = b.atomic(op, "state", 0, b.load("values", i))
    body = [b.if_(b.eq(b.invocation_id(0), 0), [
        b.loop("i", 0, b.buf_len("values"), [b.let("old", old), b.store("trace", i, b.var("old"))])
    ])]
    return b.program([b.read("values", 0, Scalar.U32), b.read_write("state", 1, Scalar.U32),
                      b.output("trace", 2, Scalar.U32, 4)], body)


@ON_DEVICES
@pytest.mark.parametrize("case", SERIAL, ids=[c[0].name for c in SERIAL])
def test_lower_atomic_serial_returns_old_values(case: tuple, device: object) -> None:
    op, values, state, final, trace = case
    out = run(_serial(op), {"values": np.array(values, np.uint32),
                            "state": np.array([state], np.uint32)}, grid=(1, 1, 1), device=device)
    assert out["state"].tolist() == [final]
    assert out["trace"].tolist() == trace


@ON_DEVICES
def test_lower_compare_exchange_and_oob_atomic(device: object) -> None:
    i = b.var("i")
    cas = ir.Atomic(AtomicOp.COMPARE_EXCHANGE, "state", b.lit_u32(0), b.load("expected", i),
                    b.load("desired", i))
    oob = b.atomic(AtomicOp.ADD, "state", 7, 1)  # index 7 is out of bounds: returns 0
    body = [b.if_(b.eq(b.invocation_id(0), 0), [b.loop("i", 0, 4, [
        b.store("trace", i, cas), b.store("trace", b.add(i, 4), oob)])])]
    prog = b.program([b.read("expected", 0, Scalar.U32), b.read("desired", 1, Scalar.U32),
                      b.read_write("state", 2, Scalar.U32), b.output("trace", 3, Scalar.U32, 8)],
                     body)
    inputs = {"expected": np.array([10, 99, 20, 30], np.uint32),
              "desired": np.array([11, 88, 21, 31], np.uint32), "state": np.array([10], np.uint32)}
    out = run(prog, inputs, grid=(1, 1, 1), device=device)
    assert out["state"].tolist() == [11]
    assert out["trace"].tolist() == [10, 11, 11, 11, 0, 0, 0, 0]


@ON_DEVICES
def test_lower_out_of_bounds_loads_zero_and_drops_stores(device: object) -> None:
    i = b.invocation_id(0)
    body = [b.store("out", b.mul(i, 3), b.load("a", b.add(i, 5))),
            b.store("fo", b.sub(i, 2), b.load("f", b.add(i, 1))),
            b.store("out", b.add(b.mul(i, 3), 1), b.buf_len("a"))]
    prog = b.program([b.read("a", 0, Scalar.U32), b.read("f", 1, Scalar.F32),
                      b.read_write("out", 2, Scalar.U32), b.read_write("fo", 3, Scalar.F32)],
                     body, workgroup_size=(4, 1, 1))
    inputs = {"a": np.arange(1, 8, dtype=np.uint32), "f": np.arange(5, dtype=np.float32) + 0.5,
              "out": np.full(20, 0xAAAAAAAA, np.uint32), "fo": np.full(6, -1.0, np.float32)}
    got = assert_parity(prog, inputs, device, grid=(2, 1, 1))
    assert np.frombuffer(got["out"], "<u4")[3 * 2] == 0  # a[7] is out of bounds: reads 0


@ON_DEVICES
def test_lower_select_is_eager_and_loops_are_half_open(device: object) -> None:
    n = b.var("n")
    body = [
        b.let("n", b.load("a", 0)),
        b.let("acc", 0),
        b.loop("j", b.load("a", 1), n, [b.assign("acc", b.add(b.var("acc"), b.var("j")))]),
        b.loop("k", n, 3, [b.assign("acc", b.add(b.var("acc"), 1000))]),
        b.store("out", 0, b.var("acc")),
        # Both arms run: each atomic bumps its own counter whatever the condition.
        b.store("out", 1, b.select(b.gt(n, 4), b.atomic_add("ctr", 0, 1),
                                   b.atomic_add("ctr", 1, 10))),
        b.store("out", 2, b.select(b.load("a", 2), 7, 9)),
        b.store("out", 3, b.cast(Scalar.U32, b.and_(b.load("a", 2), 2))),
        b.store("out", 4, b.cast(Scalar.U32, b.or_(0, b.load("a", 3)))),
        b.if_(b.lt(n, 100), [b.return_()]),
        b.store("out", 5, 123),
    ]
    prog = b.program([b.read("a", 0, Scalar.U32), b.read_write("ctr", 1, Scalar.U32),
                      b.read_write("out", 2, Scalar.U32)], body)
    for a in ([6, 2, 5, 0], [1, 9, 0, 4], [200, 0, 0, 0]):
        inputs = {"a": np.array(a, np.uint32), "ctr": np.zeros(2, np.uint32),
                  "out": np.zeros(6, np.uint32)}
        got = assert_parity(prog, inputs, device, grid=(1, 1, 1))
        assert np.frombuffer(got["ctr"], "<u4").tolist() == [1, 10]


def _i32_div(op: ir.BinOp) -> ir.Program:
    i = b.invocation_id(0)
    value = b.binop(op, b.load("a", i), b.load("d", i))
    return b.program([b.read("a", 0, Scalar.I32), b.read("d", 1, Scalar.I32),
                      b.output("out", 2, Scalar.I32, 8)], [b.store("out", i, value)],
                     workgroup_size=(8, 1, 1))


@ON_DEVICES
@pytest.mark.parametrize("op", [ir.BinOp.DIV, ir.BinOp.MOD])
def test_lower_i32_division_truncates_and_traps(op: ir.BinOp, device: object) -> None:
    prog = _i32_div(op)
    a = np.array([7, -7, 7, -7, -2**31, -2**31, 0, 2**31 - 1], np.int32)
    d = np.array([2, 2, -2, -2, 1, 2**31 - 1, 5, -3], np.int32)
    assert_parity(prog, {"a": a, "d": d}, device, grid=(1, 1, 1))
    for bad_a, bad_d in ((5, 0), (-2**31, -1)):
        a2, d2 = a.copy(), d.copy()
        a2[3], d2[3] = bad_a, bad_d
        with pytest.raises(ReferenceExecutionError):
            reference.run(prog, {"a": a2, "d": d2}, grid=(1, 1, 1))
        with pytest.raises(TrapError):
            run(prog, {"a": a2, "d": d2}, grid=(1, 1, 1), device=device)


@ON_DEVICES
def test_lower_trap_node_raises(device: object) -> None:
    prog = b.program([b.read_write("out", 0, Scalar.U32)],
                     [b.if_(b.eq(b.load("out", 0), 3), [ir.Trap(b.lit_u32(0), "boom")])])
    assert run(prog, {"out": np.array([2], np.uint32)}, grid=(1, 1, 1),
               device=device)["out"].tolist() == [2]
    with pytest.raises(TrapError):
        run(prog, {"out": np.array([3], np.uint32)}, grid=(1, 1, 1), device=device)


@ON_DEVICES
def test_lower_store_encodings_and_bool_buffers(device: object) -> None:
    i = b.invocation_id(0)
    body = [b.store("u2", i, b.load("bi", i)),                 # Bool loads the raw word
            b.store("bo", i, b.lt(b.load("u2", i), 5)),          # bool stores 0/1
            b.store("f", i, b.mul(b.load("f2", i), 1.0))]         # f32 stores canonical bits
    prog = b.program([b.read("bi", 1, Scalar.BOOL), b.read("f2", 2, Scalar.F32),
                      b.read_write("f", 3, Scalar.F32), b.read_write("bo", 4, Scalar.BOOL),
                      b.read_write("u2", 5, Scalar.U32)], body, workgroup_size=(4, 1, 1))
    inputs = {"bi": np.array([5, 0, 1, 0xFFFFFFFF], np.uint32),
              "f2": np.array([0xFFC00001, 0x807FFFFF, 0x00000007, 0x7F800000], np.uint32),
              "f": np.zeros(4, np.uint32), "bo": np.zeros(4, np.uint32),
              "u2": np.zeros(4, np.uint32)}
    got = assert_parity(prog, inputs, device, grid=(1, 1, 1))
    # NaN payloads canonicalize; subnormal bit patterns flush to signed zero.
    assert np.frombuffer(got["f"], "<u4").tolist() == [0x7FC00000, 0x80000000, 0, 0x7F800000]
    assert np.frombuffer(got["u2"], "<u4").tolist() == [5, 0, 1, 0xFFFFFFFF]


@ON_DEVICES
def test_lower_inferred_grid_matches_reference(device: object) -> None:
    i = b.invocation_id(0)
    prog = b.program([b.read("a", 0, Scalar.U32), b.read_write("out", 1, Scalar.U32)],
                     [b.store("out", i, b.add(b.load("a", i), i))], workgroup_size=(4, 1, 1))
    inputs = {"a": np.arange(10, dtype=np.uint32), "out": np.zeros(10, np.uint32)}
    assert run_bytes(prog, inputs, device=device) == reference.run_bytes(prog, inputs)


@pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
def test_lower_fma_rounds_once(device: object) -> None:
    i = b.invocation_id(0)
    prog = b.program([b.read("a", 0, Scalar.F32), b.output("out", 1, Scalar.F32, 16)],
                     [b.store("out", i, b.fma(b.load("a", i), b.load("a", i), b.lit_f32(-1.0)))],
                     workgroup_size=(16, 1, 1))
    # (1 + 2^-12 k)^2 - 1: the exact product needs more than 24 bits, so a double rounding
    # (multiply, then add) differs from the single rounding in the last place.
    a = (1.0 + np.arange(1, 17, dtype=np.float64) * 2.0**-12 + 2.0**-23).astype(np.float32)
    assert_parity(prog, {"a": a}, device, grid=(1, 1, 1))


def test_lower_refuses_what_it_cannot_give_exactly() -> None:
    grid_sync = b.program([b.read_write("o", 0, Scalar.U32)],  # nested: not a segment split
                          [b.loop("k", 0, 2, [b.barrier(ir.MemoryOrdering.GRID_SYNC)])],
                          workgroup_size=(4, 1, 1))
    big = b.program([b.workgroup("s", 131073, Scalar.U32), b.read_write("o", 0, Scalar.U32)],
                    [b.store("o", 0, b.load("s", 0))], workgroup_size=(4, 1, 1))
    sub = b.program([b.read_write("o", 0, Scalar.U32)],  # divergent: needs a barrier
                    [b.if_(b.lt(b.invocation_id(0), 3),
                           [b.store("o", 0, b.subgroup_add(b.load("o", 0)))])],
                    workgroup_size=(8, 1, 1))
    packed = b.program([b.read("q", 0, Scalar.I4), b.read_write("o", 1, Scalar.U32)],
                       [b.store("o", 0, 1)])  # the reference indexes bytes, BufLen nibbles
    for prog in (grid_sync, big, sub, packed):
        with pytest.raises(UnsupportedOpError, match="Fix:"):
            lower(prog)


@pytest.mark.parametrize("case", SERIAL[:3], ids=[c[0].name for c in SERIAL[:3]])
def test_lower_reference_device_delegates(case: tuple) -> None:
    # Checked against the hand-derived SERIAL answers, not against vyre.reference: device
    # "reference" runs that interpreter, which must not be its own oracle.
    op, values, state, final, trace = case
    out = run(_serial(op), {"values": np.array(values, np.uint32),
                            "state": np.array([state], np.uint32)}, grid=(1, 1, 1),
              device="reference")
    assert out["state"].tolist() == [final] and out["trace"].tolist() == trace


@ON_DEVICES
def test_lower_inlines_calls_like_the_reference(device: object) -> None:
    callee = b.program([b.read("x", 0, Scalar.U32), b.output("r", 1, Scalar.U32, 1)],
                       [b.store("r", 0, b.add(b.mul(b.load("x", 0), 3), 1))])
    i = b.invocation_id(0)
    prog = b.program([b.read("a", 0, Scalar.U32), b.output("out", 1, Scalar.U32, 8)],
                     [b.store("out", i, b.call("test.triple_plus_one", b.load("a", i)))],
                     workgroup_size=(8, 1, 1))
    callees = {"test.triple_plus_one": callee}
    inputs = {"a": np.arange(8, dtype=np.uint32) * 5}
    want = reference.run(prog, inputs, grid=(1, 1, 1), callees=callees)
    got = run(prog, inputs, grid=(1, 1, 1), device=device, callees=callees)
    assert got["out"].tolist() == want["out"].tolist() == [15 * k + 1 for k in range(8)]
    with pytest.raises(ValidationError, match="V016"):  # unresolved, as in the reference
        run(prog, inputs, grid=(1, 1, 1), device=device)


@ON_DEVICES
def test_lower_narrow_buffers_load_raw_bytes(device: object) -> None:
    # 8/16-bit loads are raw bytes (zero-extended, even from I8); stores keep the low bytes.
    i = b.invocation_id(0)
    x, y, z = b.var("x"), b.var("y"), b.var("z")
    body = [b.let("x", b.load("u8", i)), b.let("y", b.load("i8", i)), b.let("z", b.load("i16", i)),
            b.store("o8", i, b.cast(Scalar.U8, b.add(b.cast(Scalar.U32, x),
                                                     b.cast(Scalar.U32, y)))),
            b.store("o16", i, b.cast(Scalar.I16, b.sub(b.cast(Scalar.I32, z),
                                                       b.cast(Scalar.I32, b.cast(Scalar.I8, y))))),
            b.store("o32", i, b.cast(Scalar.I32, y)),
            b.store("o32", b.add(i, 16), b.cast(Scalar.U32, b.cast(Scalar.BOOL, x))),
            b.store("o8", b.add(i, 16), b.cast(Scalar.U8, z))]
    prog = b.program([b.read("u8", 0, Scalar.U8), b.read("i8", 1, Scalar.I8),
                      b.read("i16", 2, Scalar.I16), b.read_write("o8", 3, Scalar.U8),
                      b.read_write("o16", 4, Scalar.I16), b.read_write("o32", 5, Scalar.U32)],
                     body, workgroup_size=(8, 1, 1))
    rng = np.random.default_rng(1)
    inputs = {"u8": rng.integers(0, 256, 13).astype(np.uint8),  # lanes 13..15 read 0 (OOB)
              "i8": rng.integers(-128, 128, 16).astype(np.int8),
              "i16": rng.integers(-2**15, 2**15, 16).astype(np.int16),
              "o8": np.full(32, 9, np.uint8), "o16": np.zeros(16, np.int16),
              "o32": np.zeros(32, np.uint32)}
    got = assert_parity(prog, inputs, device, grid=(2, 1, 1))
    assert np.frombuffer(got["o32"], "<u4")[:16].tolist() == inputs["i8"].view(np.uint8).tolist()


@pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
def test_lower_f32_division_by_a_constant_zero(device: object) -> None:
    # x / 0.0 with a divisor the shader compiler can fold (lavapipe folded it to 0): the lowered
    # code must still give IEEE +-inf, and the canonical NaN for 0/0.
    i = b.invocation_id(0)
    zero = b.cast(Scalar.F32, b.unop(ir.UnOp.NEGATE, b.lit_u32(0)))
    quotient = b.binop(ir.BinOp.DIV, b.cast(Scalar.F32, b.cast(Scalar.I32, b.var("x"))), zero)
    program = b.program(
        [b.read("a", 0, Scalar.U32), b.output("out", 1, Scalar.F32, 8)],
        [b.let("x", b.load("a", i)), b.store("out", i, quotient)],
        workgroup_size=(8, 1, 1))
    a = np.array([1, 7, 0, 0xFFFFFFFF, 100, 0x80000000, 0, 2], np.uint32)
    out = assert_parity(program, {"a": a}, device, grid=(1, 1, 1))
    assert [hex(v) for v in np.frombuffer(out["out"], "<u4")[:4]] == [
        "0x7f800000", "0x7f800000", "0x7fc00000", "0xff800000"]
