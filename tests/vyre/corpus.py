"""Hand-built vyre programs that together use every tag, op, DataType and buffer field."""

from __future__ import annotations

import pathlib

from vyre import builder as b
from vyre import ir, to_wire

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden" / "vyre"
OUT = b.output("out", 0, b.U32, 8)


def every_expr() -> list[ir.Expr]:
    """One expression per wire expression tag."""
    i = b.var("i")
    return [
        b.lit_u32(7), b.lit_i32(-7), b.lit_bool(True), b.lit_f32(1.25), i, b.load("out", i),
        b.buf_len("out"), b.invocation_id(1), b.workgroup_id(2), b.local_id(0), b.add(i, 1),
        b.negate(i), b.call("call::all_variants", i, 2), b.select(True, 1, 0),
        b.cast(b.F64, i), b.atomic(ir.AtomicOp.COMPARE_EXCHANGE, "out", 0, 1, expected=0),
        b.fma(1.0, 2.0, 3.0), b.subgroup_add(1), b.subgroup_shuffle(i, 0),
        b.subgroup_ballot(True), ir.SubgroupLocalId(), ir.SubgroupSize(), b.buffer_ref("out"),
        ir.OpaqueExpr("test.wire.expr", bytes.fromhex("DEADBEEF")),
    ]


def every_node() -> list[ir.Node]:
    """One statement per wire node tag."""
    e = b.lit_u32(1)
    return [
        b.let("x", e), b.assign("x", e), b.store("out", 0, e), b.if_(True, [b.return_()]),
        b.loop("i", 0, 4, [b.barrier()]), b.return_(), b.block(b.let("y", 2)),
        b.barrier(ir.MemoryOrdering.ACQ_REL), ir.IndirectDispatch("counts", 8),
        ir.AsyncLoad("in", "scratch", e, e, "t"), ir.AsyncWait("t"),
        b.region("gen", [b.return_()], source="src"), ir.AsyncStore("scratch", "out", e, e, "s"),
        ir.Trap(e, "trap"), ir.Resume("trap"), ir.AllReduce("out", ir.CollectiveOp.SUM),
        ir.AllGather("in", "out", 0), ir.ReduceScatter("in", "out", ir.CollectiveOp.MAX, 3),
        ir.Broadcast("out", 1, 3), ir.OpaqueNode("test.wire.node", bytes.fromhex("00FFC0AF80")),
    ]


def every_tag_program() -> ir.Program:
    """A program using every expression and node tag (Opaque kinds are unregistered)."""
    body = [b.let(f"e{k}", e) for k, e in enumerate(every_expr())] + every_node()
    return b.program(
        [OUT, b.read("in", 1, b.U32, 8), b.workgroup("scratch", 4, b.U32)], body
    )


ALL_DTYPES: list[ir.DataType] = [
    *ir.Scalar, ir.Array(16), ir.Handle(0x13572468), ir.Vec(ir.Scalar.U16, 3),
    ir.TensorShaped(ir.Scalar.F32, (2, 3, 5, 7)), ir.SparseCsr(ir.Scalar.F32),
    ir.SparseCoo(ir.Scalar.I32), ir.SparseBsr(ir.Scalar.BF16, 4, 8), ir.DeviceMesh((2, 4)),
    ir.Quantized(ir.Scalar.I4, ir.QuantScale(ir.QuantScaleKind.PER_GROUP, 128)),
    ir.Quantized(ir.Scalar.NF4, ir.QuantScale(ir.QuantScaleKind.PER_CHANNEL, 1),
                 ir.ZeroPoint(ir.ZeroPointKind.PER_GROUP, 64)),
    ir.OpaqueType(0x80000001),
]

DENSE_ELEMENTS: list[ir.DataType] = [
    *ir.Scalar, ir.Array(12), ir.Handle(9), ir.OpaqueType(0x80000005),
    ir.Quantized(ir.Scalar.U8, ir.QuantScale(ir.QuantScaleKind.PER_CHANNEL, 1),
                 ir.ZeroPoint(ir.ZeroPointKind.PER_TENSOR)),
]


def cast_program() -> ir.Program:
    """One Cast per DataType variant."""
    return b.program([OUT], [b.let(f"c{k}", b.cast(t, k)) for k, t in enumerate(ALL_DTYPES)])


def buffer_fields_program() -> ir.Program:
    """Buffers covering every access, memory kind, dense element and optional field."""
    decls = []
    combos = zip(list(ir.BufferAccess) * 6, list(ir.MemoryKind) * 5, DENSE_ELEMENTS, strict=False)
    for k, (access, kind, element) in enumerate(combos):
        pred: ir.ShapePredicate = (
            ir.PredicateAnd(ir.AtLeast(1), ir.PredicateNot(ir.ModEquals(4, 1))) if k % 2
            else ir.AffineRange(-3, -17, -(1 << 63), (1 << 63) - 1)
        )
        hints = ir.MemoryHints(k % 3 if k % 2 else None, 16 * k, ir.CacheLocality(k % 3))
        byte_range = (0, 2) if k % 2 and ir.size_bytes(element) else None
        decls.append(ir.BufferDecl(
            f"buf{k}", k, access, kind, element, 4 + k, k % 2 == 0, k % 3 == 0, byte_range,
            hints, k % 2 == 1, ir.LinearType(k % 4), pred,
        ))
    return ir.Program(tuple(decls), (), (8, 4, 2), "parser.stateful", True)


def corpus_blobs() -> list[bytes]:
    """Golden valid blobs plus the hand-built programs above, encoded."""
    blobs = [p.read_bytes() for p in sorted(GOLDEN.glob("[kv]*.vir"))]
    blobs += [to_wire(p) for p in (every_tag_program(), cast_program(), buffer_fields_program())]
    return blobs
