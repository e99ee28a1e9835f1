"""Builder-made programs round-trip; coverage of every tag, op, DataType and buffer field."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from vyre import (
    EncodeError,
    VersionMismatchError,
    WireValidationError,
    fingerprint,
    from_wire,
    ir,
    to_wire,
)
from vyre import builder as b
from vyre.wire import DataTypeTag, ExprTag, NodeTag

import corpus
from strategies import data_types, programs

OUT = corpus.OUT


def _rt(program: ir.Program, *, preserve: bool = True) -> ir.Program:
    blob = to_wire(program)
    decoded = from_wire(blob, preserve_unknown=preserve)
    assert to_wire(decoded) == blob
    return decoded


def test_every_expression_and_node_tag_round_trips() -> None:
    exprs, nodes = corpus.every_expr(), corpus.every_node()
    assert {e.TAG for e in exprs} == {int(t) for t in ExprTag}
    assert {n.TAG for n in nodes} == {int(t) for t in NodeTag}
    program = corpus.every_tag_program()
    assert _rt(program) == program


@pytest.mark.parametrize("op", [*ir.BinOp, ir.OpaqueOp(0x80000101)])
def test_every_binop(op: object) -> None:
    program = b.program([OUT], [b.store("out", 0, b.binop(op, 3, 4))])
    decoded = _rt(program)
    assert decoded.entry[0].body[0].value.op == op


@pytest.mark.parametrize("op", [*ir.UnOp, ir.OpaqueOp(0x80000202)])
def test_every_unop(op: object) -> None:
    program = b.program([OUT], [b.store("out", 0, b.unop(op, 3))])
    assert _rt(program) == program


@pytest.mark.parametrize("op", [*ir.AtomicOp, ir.OpaqueOp(0x80000303)])
def test_every_atomic_op(op: object) -> None:
    compare = op in (ir.AtomicOp.COMPARE_EXCHANGE, ir.AtomicOp.COMPARE_EXCHANGE_WEAK)
    atomic = b.atomic(op, "out", 0, 1, expected=5 if compare else None,
                      ordering=ir.MemoryOrdering.RELAXED)
    program = b.program([OUT], [b.let("r", atomic)])
    blob = to_wire(program)
    assert bytes([14, int(op) if not isinstance(op, ir.OpaqueOp) else 0x80]) in blob
    assert _rt(program) == program


def test_every_data_type_in_a_cast() -> None:
    composite_tags = {0x08, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x1E, 0x1F, 0x80}
    scalar_tags = {int(t) for t in DataTypeTag} - composite_tags
    assert scalar_tags == {int(s) for s in ir.Scalar}
    program = corpus.cast_program()
    assert _rt(program) == program


def test_every_buffer_field_round_trips() -> None:
    program = corpus.buffer_fields_program()
    decoded = _rt(program)
    assert decoded == program
    assert decoded.output_buffer_indices == program.output_buffer_indices
    assert {b.access for b in program.buffers} == set(ir.BufferAccess)
    assert {b.kind for b in program.buffers} == set(ir.MemoryKind)


@pytest.mark.parametrize("version", [4, 5])
def test_old_versions_encode_and_decode(version: int) -> None:
    program = b.program([OUT, b.read("in", 1, b.U32, 2)], [b.store("out", 0, 1)])
    blob = to_wire(program, version=version)
    assert blob[4] == version
    decoded = from_wire(blob)
    assert decoded.wire_version == version
    assert decoded == program
    assert to_wire(decoded, version=decoded.wire_version) == blob
    assert len(to_wire(decoded)) == len(blob) + 3 * 2


def test_old_version_refuses_rev6_fields() -> None:
    program = b.program([OUT.with_(linear_type=ir.LinearType.AFFINE)], [])
    with pytest.raises(EncodeError, match="rev-6 fields"):
        to_wire(program, version=5)


def test_rev6_body_relabelled_old_is_rejected() -> None:
    import blake3

    blob = bytearray(to_wire(b.program([OUT], [])))
    blob[4] = 5
    with pytest.raises(WireValidationError) as info:
        from_wire(bytes(blob))
    assert info.value.detail.startswith("TruncatedPayload: metadata payload has trailing bytes")
    blob[4] = 3
    with pytest.raises(VersionMismatchError, match="found 3"):
        from_wire(bytes(blob))
    empty = bytearray(to_wire(b.program([], [])))
    empty[4] = 4
    empty[8:40] = blake3.blake3(bytes(empty[40:])).digest()
    assert from_wire(bytes(empty)).wire_version == 4


def test_f32_canonicalization() -> None:
    bits = [0x80000000, 0x00000001, 0x807FFFFF, 0x7F800001, 0xFFC00001, 0x7F800000, 0xBF800000]
    program = b.program([], [b.let(f"f{k}", b.lit_f32_bits(v)) for k, v in enumerate(bits)])
    decoded = from_wire(to_wire(program))
    assert [n.value.bits for n in decoded.entry[0].body] == [
        0, 0, 0, 0x7FC00000, 0x7FC00000, 0x7F800000, 0xBF800000,
    ]
    pos = b.program([], [b.let("z", b.lit_f32(0.0))])
    neg = b.program([], [b.let("z", b.lit_f32(-0.0))])
    assert to_wire(pos) == to_wire(neg)
    assert fingerprint(pos) == fingerprint(neg)


@settings(max_examples=300, deadline=None)
@given(programs(canonical_f32=True))
def test_random_programs_round_trip_structurally(program: ir.Program) -> None:
    blob = to_wire(program)
    decoded = from_wire(blob, preserve_unknown=True)
    assert decoded == program
    assert to_wire(decoded) == blob


@settings(max_examples=300, deadline=None)
@given(programs())
def test_random_programs_reencode_idempotently(program: ir.Program) -> None:
    blob = to_wire(program)
    assert to_wire(from_wire(blob, preserve_unknown=True)) == blob
    assert to_wire(program) == blob


@settings(max_examples=300, deadline=None)
@given(data_types())
def test_random_data_types_round_trip(dtype: ir.DataType) -> None:
    program = b.program([], [b.let("c", b.cast(dtype, 0))])
    assert _rt(program) == program
