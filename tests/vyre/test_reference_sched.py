"""Reference scheduling: round-robin lanes, atomics, barriers, workgroup memory, control flow."""

from __future__ import annotations

import numpy as np
import pytest

from vyre import builder as b
from vyre import reference
from vyre.ir import AtomicOp, MemoryOrdering

GID, LID, WID = b.invocation_id(0), b.local_id(0), b.workgroup_id(0)


def atomic_trace_program(op: AtomicOp, wg: int, n: int, value, expected=None):
    return b.program(
        [b.read_write("ctr", 0, b.U32, 1), b.output("trace", 1, b.U32, n)],
        [b.let("old", b.atomic(op, "ctr", 0, value, expected=expected)),
         b.store("trace", GID, b.var("old"))],
        workgroup_size=(wg, 1, 1))


def test_atomic_add_return_values_follow_lane_order_across_workgroups() -> None:
    prog = atomic_trace_program(AtomicOp.ADD, 4, 12, 1)
    out = reference.run(prog, {"ctr": np.array([100], np.uint32)}, grid=(3, 1, 1))
    assert out["trace"].tolist() == list(range(100, 112))
    assert out["ctr"].tolist() == [112]
    rev = reference.run(prog, {"ctr": np.array([0], np.uint32)}, grid=(3, 1, 1),
                        lane_order="reversed")
    assert rev["trace"].tolist() == [3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8]


def test_exchange_and_compare_exchange_under_contention() -> None:
    prog = atomic_trace_program(AtomicOp.EXCHANGE, 4, 4, b.add(GID, 1))
    out = reference.run(prog, {"ctr": np.array([42], np.uint32)}, grid=(1, 1, 1))
    assert out["trace"].tolist() == [42, 1, 2, 3] and out["ctr"].tolist() == [4]
    # CAS(expected=gid, desired=gid+1): each lane sees the previous lane's value and succeeds.
    prog = atomic_trace_program(AtomicOp.COMPARE_EXCHANGE, 4, 4, b.add(GID, 1), expected=GID)
    out = reference.run(prog, {"ctr": np.array([0], np.uint32)}, grid=(1, 1, 1))
    assert out["trace"].tolist() == [0, 1, 2, 3] and out["ctr"].tolist() == [4]
    prog = atomic_trace_program(AtomicOp.COMPARE_EXCHANGE, 4, 4, 9, expected=b.mul(GID, 2))
    out = reference.run(prog, {"ctr": np.array([2], np.uint32)}, grid=(1, 1, 1))
    assert out["trace"].tolist() == [2, 2, 9, 9] and out["ctr"].tolist() == [9]


SERIAL = [  # serial atomics (docs/vyre-semantics.md, Atomics)
    (AtomicOp.ADD, [1, 5, 0xFFFFFFFF, 3], 7, 15, [7, 8, 13, 12]),
    (AtomicOp.AND, [0xFF, 0xF0, 0x0F, 0x33], 0xFFFFFFFF, 0, [0xFFFFFFFF, 0xFF, 0xF0, 0]),
    (AtomicOp.OR, [1, 2, 4, 8], 0, 0xF, [0, 1, 3, 7]),
    (AtomicOp.XOR, [0xF0, 0x0F, 0xFF, 0x55], 0, 0x55, [0, 0xF0, 0xFF, 0]),
    (AtomicOp.MIN, [50, 20, 80, 10], 100, 10, [100, 50, 20, 20]),
    (AtomicOp.MAX, [50, 20, 80, 10], 0, 80, [0, 50, 50, 80]),
    (AtomicOp.LRU_UPDATE, [50, 20, 80, 10], 0, 80, [0, 50, 50, 80]),
    (AtomicOp.EXCHANGE, [100, 200, 300, 400], 42, 400, [42, 100, 200, 300]),
]


@pytest.mark.parametrize(("op", "values", "init", "final", "trace"), SERIAL,
                         ids=lambda v: getattr(v, "name", ""))
def test_serial_atomics_table(op, values, init, final, trace) -> None:
    prog = b.program(
        [b.read("values", 0, b.U32), b.read_write("state", 1, b.U32, 1),
         b.output("trace", 2, b.U32, 4)],
        [b.if_(b.eq(GID, 0), [b.loop("i", 0, b.buf_len("values"), [
            b.let("old", b.atomic(op, "state", 0, b.load("values", b.var("i")))),
            b.store("trace", b.var("i"), b.var("old"))])])])
    out = reference.run(prog, [np.array(values, np.uint32), np.array([init], np.uint32)],
                        grid=(1, 1, 1))
    assert out["state"].tolist() == [final] and out["trace"].tolist() == trace


def test_out_of_bounds_atomic_returns_zero_and_stores_nothing() -> None:
    prog = atomic_trace_program(AtomicOp.ADD, 1, 1, 5)
    prog = b.program(prog.buffers, [b.let("old", b.atomic_add("ctr", 7, 5)),
                                    b.store("trace", 0, b.add(b.var("old"), 1))])
    out = reference.run(prog, {"ctr": np.array([3], np.uint32)}, grid=(1, 1, 1))
    assert out["trace"].tolist() == [1] and out["ctr"].tolist() == [3]


def test_divergent_branches_shift_atomic_order_by_statement_steps() -> None:
    # Even lanes: If, close empty branch, atomic. Odd lanes: If, Let, close branch, atomic.
    prog = b.program(
        [b.read_write("ctr", 0, b.U32, 1), b.output("trace", 1, b.U32, 4)],
        [b.if_(b.eq(b.mod(GID, 2), 1), [b.let("pad", 0)]),
         b.let("old", b.atomic_add("ctr", 0, 1)),
         b.store("trace", GID, b.var("old"))], workgroup_size=(4, 1, 1))
    out = reference.run(prog, {"ctr": np.zeros(1, np.uint32)}, grid=(1, 1, 1))
    assert out["trace"].tolist() == [0, 2, 1, 3]


def test_racy_store_last_stepped_lane_wins() -> None:
    prog = b.program([b.output("out", 0, b.U32, 1)], [b.store("out", 0, GID)],
                     workgroup_size=(8, 1, 1))
    assert reference.run(prog, grid=(2, 1, 1))["out"].tolist() == [15]
    assert reference.run(prog, grid=(2, 1, 1), lane_order="reversed")["out"].tolist() == [8]


def test_barrier_with_workgroup_memory_reverses_each_workgroup() -> None:
    prog = b.program(
        [b.read("inp", 0, b.U32), b.workgroup("sh", 4, b.U32), b.output("out", 1, b.U32, 8)],
        [b.store("sh", LID, b.load("inp", GID)), b.barrier(),
         b.store("out", GID, b.load("sh", b.sub(3, LID)))], workgroup_size=(4, 1, 1))
    out = reference.run(prog, {"inp": np.arange(10, 18, dtype=np.uint32)}, grid=(2, 1, 1))
    assert out["out"].tolist() == [13, 12, 11, 10, 17, 16, 15, 14]


def test_workgroup_memory_is_zero_filled_for_every_workgroup() -> None:
    prog = b.program(
        [b.workgroup("sh", 4, b.U32), b.output("out", 0, b.U32, 8)],
        [b.store("out", GID, b.add(b.load("sh", LID), b.load("sh", 9))), b.barrier(),
         b.store("sh", LID, 77)], workgroup_size=(4, 1, 1))
    assert reference.run(prog, grid=(2, 1, 1))["out"].tolist() == [0] * 8


def test_barrier_releases_when_all_live_lanes_wait_even_after_returns() -> None:
    prog = b.program(
        [b.workgroup("sh", 4, b.U32), b.output("out", 0, b.U32, 4)],
        [b.store("sh", LID, b.add(LID, 1)),
         b.if_(b.ge(LID, 2), [b.return_()]),
         b.barrier(),
         b.store("out", LID, b.load("sh", b.add(LID, 2)))], workgroup_size=(4, 1, 1))
    out = reference.run(prog, grid=(1, 1, 1), validate=False)
    assert out["out"].tolist() == [3, 4, 0, 0]


def test_barrier_under_non_uniform_if_is_an_error() -> None:
    prog = b.program([b.output("out", 0, b.U32, 4)],
                     [b.if_(b.lt(LID, 2), [b.barrier()]), b.store("out", LID, 1)],
                     workgroup_size=(4, 1, 1))
    with pytest.raises(reference.ReferenceExecutionError, match="uniform"):
        reference.run(prog, grid=(1, 1, 1), validate=False)


def test_subgroups_simulate_32_lanes() -> None:
    n = 40  # one full subgroup of 32 lanes and a partial one of 8
    prog = b.program(
        [b.output("out", 0, b.U32, 4 * n)],
        [b.let("v", b.mul(LID, 3)),
         b.store("out", LID, b.subgroup_ballot(b.eq(b.mod(LID, 3), 0))),
         b.store("out", b.add(LID, n), b.subgroup_add(b.var("v"))),
         b.store("out", b.add(LID, 2 * n),
                 b.subgroup_shuffle(b.var("v"), b.mod(b.add(LID, 1), 9))),
         b.store("out", b.add(LID, 3 * n),
                 b.add(b.mul(b.ir.SubgroupSize(), 1000), b.ir.SubgroupLocalId()))],
        workgroup_size=(n, 1, 1))
    flat = reference.run(prog, grid=(1, 1, 1))["out"]
    out = {k: flat[i * n:(i + 1) * n] for i, k in enumerate(("ballot", "total", "shuf", "sgid"))}
    lanes = np.arange(n)
    first = sum(1 << k for k in range(32) if k % 3 == 0)
    second = sum(1 << k for k in range(8) if (32 + k) % 3 == 0)
    assert out["ballot"].tolist() == [first] * 32 + [second] * 8
    assert out["total"].tolist() == [3 * sum(range(32))] * 32 + [3 * sum(range(32, 40))] * 8
    src = (lanes + 1) % 9  # lane index within the slice; beyond the slice reads 0
    want = [3 * (32 * (i // 32) + s) if s < (32 if i < 32 else 8) else 0
            for i, s in zip(lanes, src, strict=True)]
    assert out["shuf"].tolist() == want
    assert out["sgid"].tolist() == [32000 + (i % 32) for i in lanes]


def test_subgroup_reduce_ops_and_f32_sum() -> None:
    ops = list(b.ir.SubgroupReduceOp)
    prog = b.program(
        [b.read("x", 0, b.U32), b.read("f", 1, b.F32), b.output("out", 2, b.U32, len(ops)),
         b.read_write("fs", 3, b.F32, 1)],
        [*[b.store("out", i, b.subgroup_reduce(op, b.load("x", LID))) for i, op in
           enumerate(ops)],
         b.store("fs", 0, b.subgroup_add(b.load("f", LID)))], workgroup_size=(4, 1, 1))
    x = np.array([6, 3, 0xFFFFFFFF, 12], np.uint32)
    f = np.array([1e8, 1.0, -1e8, 1.0], np.float32)
    out = reference.run(prog, {"x": x, "f": f, "fs": np.zeros(1, np.float32)}, grid=(1, 1, 1))
    p = 1
    for v in x.tolist():
        p = (p * v) % 2 ** 32
    assert out["out"].tolist() == [(6 + 3 + 0xFFFFFFFF + 12) % 2 ** 32, p, 3, 0xFFFFFFFF,
                                   6 & 3 & 12, 6 | 3 | 0xFFFFFFFF | 12, 6 ^ 3 ^ 0xFFFFFFFF ^ 12]
    assert out["fs"].tolist() == [1.0]  # sequential f32 fold: ((1e8 + 1) - 1e8) + 1


def test_loops_are_half_open_and_may_be_empty() -> None:
    prog = b.program([b.output("out", 0, b.U32, 4)], [
        b.let("s", 0), b.loop("i", 2, 5, [b.assign("s", b.add(b.var("s"), b.var("i")))]),
        b.store("out", 0, b.var("s")),
        b.let("e", 0), b.loop("j", 5, 5, [b.assign("e", 1)]), b.loop("k", 7, 3, [b.assign("e", 2)]),
        b.store("out", 1, b.var("e")),
        b.let("t", 0), b.loop("a", 0, 3, [b.loop("c", b.var("a"), 3, [
            b.let("tmp", b.mul(b.var("a"), b.var("c"))),
            b.assign("t", b.add(b.var("t"), b.var("tmp")))])]),
        b.store("out", 2, b.var("t"))])
    out = reference.run(prog, grid=(1, 1, 1))["out"].tolist()
    assert out[:3] == [2 + 3 + 4, 0, sum(a * c for a in range(3) for c in range(a, 3))]


def test_early_return_and_nested_ifs() -> None:
    prog = b.program([b.output("out", 0, b.U32, 8)], [
        b.if_(b.ge(GID, 6), [b.return_()]),
        b.if_(b.lt(GID, 4),
              [b.if_(b.eq(b.mod(GID, 2), 0), [b.store("out", GID, 10)],
                     [b.loop("i", 0, 10, [b.if_(b.eq(b.var("i"), 2), [b.return_()]),
                                          b.store("out", GID, b.var("i"))])])],
              [b.store("out", GID, 20)]),
        b.store("out", b.add(GID, 0), b.add(b.load("out", GID), 100))],
        workgroup_size=(8, 1, 1))
    assert reference.run(prog, grid=(1, 1, 1))["out"].tolist() == \
        [110, 1, 110, 1, 120, 120, 0, 0]


def test_grid_sync_splits_the_dispatch_into_segments() -> None:
    prog = b.program([b.output("out", 0, b.U32, 4)], [
        b.store("out", GID, b.add(GID, 1)),
        b.barrier(MemoryOrdering.GRID_SYNC),
        b.if_(b.eq(GID, 0), [b.store("out", 0, b.load("out", 3))])], workgroup_size=(2, 1, 1))
    assert reference.run(prog, grid=(2, 1, 1))["out"].tolist() == [4, 2, 3, 4]


def test_multi_dimensional_ids_and_workgroup_order() -> None:
    # Workgroups run z, then y, then x fastest; lanes in linear local index order.
    wg, grid = (2, 3, 1), (2, 1, 2)
    gx = b.add(b.invocation_id(0), b.mul(b.invocation_id(1), 4))
    flat = b.add(gx, b.mul(b.invocation_id(2), 12))
    prog = b.program(
        [b.read_write("ctr", 0, b.U32, 1), b.output("out", 1, b.U32, 24 * 2)],
        [b.store("out", b.mul(flat, 2), b.atomic_add("ctr", 0, 1)),
         b.store("out", b.add(b.mul(flat, 2), 1),
                 b.add(b.mul(b.workgroup_id(0), 100),
                       b.add(b.mul(b.local_id(1), 10), b.local_id(0))))],
        workgroup_size=wg)
    out = reference.run(prog, {"ctr": np.zeros(1, np.uint32)}, grid=grid)["out"]
    tickets, ids = out[0::2].reshape(2, 3, 4), out[1::2].reshape(2, 3, 4)
    order = 0
    for wz in range(2):
        for wx in range(2):
            for ly in range(3):
                for lx in range(2):
                    assert tickets[wz, ly, wx * 2 + lx] == order
                    assert ids[wz, ly, wx * 2 + lx] == wx * 100 + ly * 10 + lx
                    order += 1
