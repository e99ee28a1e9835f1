"""Workgroup memory, barriers and id geometry in lowered programs (docs/vyre-semantics.md,
Workgroup memory, Barriers and GridSync): byte-identical to the reference on every device (host
C runs barriers by splitting the body into loops over the group's items)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre.reference as vyre_reference
from hurray_gpu.errors import UnsupportedOpError
from tests.vyre.lower_programs import assert_parity, kernel_devices
from vyre import builder as b
from vyre import ir
from vyre.execute import run
from vyre.ir import Scalar
from vyre.lower import lower

DEVICES = kernel_devices()
ON_GROUPS = pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])


def prefix_scan(n: int) -> ir.Program:
    """Hillis-Steele inclusive scan in workgroup memory (vyre-primitives prefix_scan)."""
    lanes = 1 << max(0, (n - 1).bit_length())
    lane = b.var("lane")
    body: list[ir.Node] = [
        b.let("lane", b.invocation_id(0)), b.store("a", lane, 0),
        b.if_(b.lt(lane, n), [b.store("a", lane, b.load("inp", lane))]), b.barrier()]
    stride = 1
    while stride < lanes:
        back = b.load("a", b.add(lane, 0xFFFFFFFF - (stride - 1)))  # lane - stride, wrapping
        body += [b.store("bb", lane, b.load("a", lane)),
                 b.if_(b.lt(stride - 1, lane),
                       [b.store("bb", lane, b.add(b.load("a", lane), back))]),
                 b.barrier(), b.store("a", lane, b.load("bb", lane)), b.barrier()]
        stride *= 2
    body.append(b.if_(b.lt(lane, n), [b.store("out", lane, b.load("a", lane))]))
    return b.program([b.read("inp", 0, Scalar.U32), b.output("out", 1, Scalar.U32, n),
                      b.workgroup("a", lanes, Scalar.U32), b.workgroup("bb", lanes, Scalar.U32)],
                     body, workgroup_size=(lanes, 1, 1))


def tiled_dot() -> ir.Program:
    """Strided accumulate plus a workgroup tree reduction (vyre-libs linalg/dot.rs)."""
    local = b.var("local")
    first = b.eq(b.workgroup_id(0), 0)
    n = b.buf_len("lhs")
    idx = b.var("idx")
    acc = b.add(b.var("acc"), b.mul(b.load("lhs", idx), b.load("rhs", idx)))
    body: list[ir.Node] = [
        b.let("local", b.local_id(0)),
        b.if_(first, [b.let("acc", 0),
                      b.loop("chunk", 0, b.div(b.add(n, 255), 256), [
                          b.let("idx", b.add(b.mul(b.var("chunk"), 256), local)),
                          b.if_(b.lt(idx, n), [b.assign("acc", acc)])]),
                      b.store("scratch", local, b.var("acc"))]),
        b.barrier()]
    stride = 128
    while stride >= 1:
        pair = b.add(b.load("scratch", local), b.load("scratch", b.add(local, stride)))
        body += [b.if_(b.and_(first, b.lt(local, stride)), [
            b.if_(b.lt(b.add(local, stride), 256), [b.store("scratch", local, pair)])]),
            b.barrier()]
        stride //= 2
    body.append(b.if_(b.and_(first, b.eq(local, 0)), [b.store("out", 0, b.load("scratch", 0))]))
    return b.program([b.read("lhs", 0, Scalar.U32), b.read("rhs", 1, Scalar.U32),
                      b.workgroup("scratch", 256, Scalar.U32), b.output("out", 2, Scalar.U32, 1)],
                     body, workgroup_size=(256, 1, 1))


@ON_GROUPS
@pytest.mark.parametrize(("values", "want"), [([1, 2, 3, 4], [1, 3, 6, 10]),
                                              ([0xFFFFFFFF, 1, 1], [0xFFFFFFFF, 0, 1])])
def test_lower_prefix_scan(values: list[int], want: list[int], device: object) -> None:
    out = run(prefix_scan(len(values)), {"inp": np.array(values, np.uint32)}, grid=(1, 1, 1),
              device=device)
    assert out["out"].tolist() == want


@ON_GROUPS
def test_lower_prefix_scan_random(device: object) -> None:
    values = np.random.default_rng(3).integers(0, 2**32, 200).astype(np.uint32)
    assert_parity(prefix_scan(200), {"inp": values}, device, grid=(1, 1, 1))


@ON_GROUPS
def test_lower_tiled_dot_multi_workgroup(device: object) -> None:
    i = np.arange(777, dtype=np.uint64)
    lhs = ((17 * i + 3) & 0xFFFFFFFF).astype(np.uint32)
    rhs = ((29 * i + 11) & 0xFFFFFFFF).astype(np.uint32)
    out = run(tiled_dot(), {"lhs": lhs, "rhs": rhs}, device=device)  # inferred: 4 workgroups
    assert out["out"].tolist() == [0xEEE1CD0D]


@ON_GROUPS
def test_lower_workgroup_memory_is_zeroed_per_workgroup(device: object) -> None:
    # Lane 0 of each group reads s[1] before anyone writes it, then every lane dirties s.
    local = b.local_id(0)
    body = [b.if_(b.eq(local, 0), [b.store("out", b.workgroup_id(0), b.load("s", 1))]),
            b.barrier(), b.store("s", local, 0xDEAD), b.store("s", b.add(local, 4), 7)]
    prog = b.program([b.workgroup("s", 8, Scalar.U32), b.read_write("out", 0, Scalar.U32)],
                     body, workgroup_size=(4, 1, 1))
    out = run(prog, {"out": np.full(3, 5, np.uint32)}, grid=(3, 1, 1), device=device)
    assert out["out"].tolist() == [0, 0, 0]


@ON_GROUPS
def test_lower_ids_in_3d_workgroups(device: object) -> None:
    x, y, z = (b.invocation_id(a) for a in range(3))
    flat = b.add(x, b.mul(6, b.add(y, b.mul(4, z))))
    fields = [b.local_id(0), b.local_id(1), b.local_id(2), b.workgroup_id(0),
              b.workgroup_id(1), b.workgroup_id(2), ir.SubgroupLocalId(), ir.SubgroupSize()]
    body = [b.store("out", b.add(b.mul(flat, 8), k), f) for k, f in enumerate(fields)]
    prog = b.program([b.read_write("out", 0, Scalar.U32)], body, workgroup_size=(3, 2, 2))
    inputs = {"out": np.zeros(6 * 4 * 2 * 8, np.uint32)}
    assert_parity(prog, inputs, device, grid=(2, 2, 1))


def test_lower_return_with_barrier_refused() -> None:
    prog = b.program([b.read_write("o", 0, Scalar.U32)],
                     [b.if_(b.eq(b.workgroup_id(0), 5), [b.return_()]), b.barrier()],
                     workgroup_size=(4, 1, 1))
    with pytest.raises(UnsupportedOpError, match="Return"):
        lower(prog)


@pytest.mark.parametrize("device", DEVICES, ids=[d.spec for d in DEVICES])
def test_lower_grid_sync_runs_segments_in_order(device: object) -> None:
    # Segment 1 writes tmp; segment 2 (fresh locals) reads other workgroups' tmp entries.
    i, j = b.invocation_id(0), b.var("j")
    n = b.buf_len("a")
    mirror = b.load("tmp", b.sub(b.sub(n, 1), j))
    prog = b.program(
        [b.read("a", 0, Scalar.U32), b.read_write("tmp", 1, Scalar.U32),
         b.read_write("out", 2, Scalar.U32)],
        [b.if_(b.lt(i, n), [b.store("tmp", i, b.mul(b.load("a", i), 2))]),
         b.barrier(ir.MemoryOrdering.GRID_SYNC),
         b.let("j", b.invocation_id(0)),
         b.if_(b.lt(j, n), [b.store("out", j, b.add(b.load("tmp", j), mirror))])],
        workgroup_size=(4, 1, 1))
    lowered = lower(prog)
    assert len(lowered.kernels) == 2
    a = np.arange(16, dtype=np.uint32) * 3
    inputs = {"a": a, "tmp": np.zeros(16, np.uint32), "out": np.zeros(16, np.uint32)}
    got = assert_parity(prog, inputs, device, grid=(4, 1, 1))
    assert np.frombuffer(got["out"], "<u4").tolist() == [90] * 16


def subgroup_program(width: int) -> ir.Program:
    """Every subgroup reduce (u32 and f32), ballot and shuffle (in and out of the slice)."""
    i, x, f = b.invocation_id(0), b.var("x"), b.var("f")
    lid = ir.SubgroupLocalId()
    exprs: list[tuple[str, ir.Expr]] = [("o", b.subgroup_reduce(op, x))
                                        for op in ir.SubgroupReduceOp]
    exprs += [("fo", b.subgroup_reduce(op, f)) for op in (ir.SubgroupReduceOp.ADD,
              ir.SubgroupReduceOp.MUL, ir.SubgroupReduceOp.MIN, ir.SubgroupReduceOp.MAX)]
    exprs += [("o", b.subgroup_ballot(b.gt(x, 0x80000000))),
              ("o", b.subgroup_shuffle(x, b.bit_and(b.add(lid, 5), 63))),
              ("fo", b.subgroup_shuffle(f, b.sub(31, lid)))]
    body: list[ir.Node] = [b.let("x", b.load("a", i)), b.let("f", b.load("fa", i))]
    body += [b.store(buf, b.add(b.mul(i, len(exprs)), k), e) for k, (buf, e) in enumerate(exprs)]
    return b.program([b.read("a", 0, Scalar.U32), b.read("fa", 1, Scalar.F32),
                      b.read_write("o", 2, Scalar.U32), b.read_write("fo", 3, Scalar.F32)],
                     body, workgroup_size=(width, 1, 1))


@ON_GROUPS
@pytest.mark.parametrize("width", [48, 8])
def test_lower_subgroups_emulate_the_reference(width: int, device: object) -> None:
    prog = subgroup_program(width)
    rng = np.random.default_rng(width)
    n, k = 2 * width, 15
    inputs = {"a": rng.integers(0, 2**32, n).astype(np.uint32) | 1,
              "fa": (rng.standard_normal(n) * 3).astype(np.float32),
              "o": np.zeros(n * k, np.uint32), "fo": np.zeros(n * k, np.float32)}
    assert_parity(prog, inputs, device, grid=(2, 1, 1))


def test_lower_subgroup_in_divergent_flow_refused() -> None:
    prog = b.program([b.read_write("o", 0, Scalar.U32)],
                     [b.let("v", b.load("o", b.local_id(0))),
                      b.if_(b.lt(b.var("v"), 3), [b.store("o", 0, b.subgroup_add(1))])],
                     workgroup_size=(8, 1, 1))
    with pytest.raises(UnsupportedOpError, match="uniform"):
        lower(prog)


@ON_GROUPS
def test_inferred_grid_covers_every_invocation_with_workgroup_memory(device: object) -> None:
    """With workgroup memory (and no atomics) the inferred grid is the full grid, as the
    reference infers it: trimming it to the output's size would skip invocation 63 here."""
    gid = b.invocation_id(0)
    prog = b.program([b.read("a", 0, Scalar.U32), b.workgroup("s", 1, Scalar.U32),
                      b.output("o", 1, Scalar.U32, 1)],
                     [b.store("s", 0, 1),
                      b.if_(b.eq(gid, 63), [b.store("o", 0, b.load("s", 0))])],
                     workgroup_size=(1, 1, 1))  # 64 one-invocation workgroups
    inputs = {"a": np.zeros(64, np.uint32).tobytes()}
    want = np.frombuffer(bytes(vyre_reference.run(prog, inputs)["o"]), np.uint32)
    got = np.asarray(run(prog, inputs, device=device)["o"]).view(np.uint32)
    assert want.tolist() == [1] and got.tolist() == [1]
