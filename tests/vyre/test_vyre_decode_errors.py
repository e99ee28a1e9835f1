"""Hostile-input checks: every decoder limit and check, with vyre 0.7.2's message text."""

from __future__ import annotations

import struct

import blake3
import pytest

from vyre import (
    UnknownExtensionError,
    WireValidationError,
    from_wire,
    ir,
    to_wire,
)
from vyre import builder as b
from vyre.wire import MAX_DECODE_DEPTH, MAX_PROGRAM_BYTES

HEADER6 = b"VYRE\x06\x00\x04\x00"
META = b"\x15vyre.program.metadata"


def blob_of(body: bytes, version: int = 6) -> bytes:
    """A blob with a correct header around ``body``."""
    return b"VYRE" + struct.pack("<HH", version, 4) + blake3.blake3(body).digest() + body


def rehash(blob: bytes | bytearray) -> bytes:
    """``blob`` with its digest fixed up."""
    return blob_of(bytes(blob[40:]), blob[4] | blob[5] << 8)


def detail_of(blob: bytes, **kwargs: object) -> str:
    with pytest.raises(WireValidationError) as info:
        from_wire(blob, **kwargs)  # type: ignore[arg-type]
    assert info.value.vyre_text.endswith(
        ". Fix: recompile the frontend program set and ensure the compiler only emits valid "
        "instructions."
    )
    assert str(info.value).count("Fix:") == 1
    return info.value.detail


def patch(program: ir.Program, old: bytes, new: bytes, *, in_meta: bool = False) -> bytes:
    """Replace the first ``old`` with ``new``; ``in_meta`` fixes the metadata payload length."""
    blob = to_wire(program)
    assert blob.count(old) >= 1, old
    out = bytearray(blob.replace(old, new, 1))
    if in_meta:
        out[out.index(b"VYRE-META") - 1] += len(new) - len(old)
    return rehash(out)


def empty_meta(buffers: bytes = b"\x00") -> bytes:
    payload = b"VYRE-META\x00" + struct.pack("<3I", 1, 1, 1) + b"\x00" + buffers
    return META + bytes([len(payload)]) + payload + b"\x00"


def test_header_errors() -> None:
    assert detail_of(b"VYRE\x06") == (
        "IR wire-format truncated before schema version. Fix: serialize Program with "
        "Program::to_wire()."
    )
    assert detail_of(b"VIR0" + bytes(60)).startswith("invalid IR wire-format header.")
    big = b"VYRE" + bytes(MAX_PROGRAM_BYTES - 3)
    assert detail_of(big) == (
        f"Fix: wire blob is {MAX_PROGRAM_BYTES + 1} bytes, exceeding the 67108864-byte IR "
        "framing cap. Reject this untrusted input or split the program before serialization."
    )
    flags_sealed = bytearray(to_wire(b.program([], [])))
    flags_sealed[6] = 6
    assert detail_of(bytes(flags_sealed)).startswith("InvalidDiscriminant: field flags has value 6")
    flags_reserved = bytearray(flags_sealed)
    flags_reserved[6], flags_reserved[7] = 4, 1
    assert detail_of(bytes(flags_reserved)).startswith("InvalidDiscriminant: field flags has value 260")


@pytest.mark.parametrize(("body", "expected"), [
    (b"\x00", "TruncatedPayload: missing metadata node. Fix: serialize Program with "
              "Program::to_wire()."),
    (b"\xc1\x84\x3d", "TruncatedPayload: node count 1000001 exceeds limit 1000000. Fix: split "
                      "the Program or reject this untrusted payload."),
    (b"\x80" * 11, "TruncatedPayload: LEB128 integer exceeds u64. Fix: reject malformed wire "
                   "bytes."),
    (b"\x01\x03abc\x00\x00", "UnknownOp: op_id `abc`. Fix: the first VYRE node must be "
                             "`vyre.program.metadata` metadata from Program::to_wire()."),
    (b"\x01\x01\xff", "TruncatedPayload: invalid UTF-8 in string (invalid utf-8 sequence of 1 "
                      "bytes from index 0). Fix: serialize valid UTF-8 operation identifiers."),
    (b"\x01" + META + b"\x81\x80\x80\x02", "TruncatedPayload: node payload length 4194305 "
     "exceeds limit 4194304. Fix: split the Program or reject this untrusted payload."),
    (b"\x01" + META + b"\x00\x01\x00", "TruncatedPayload: operand id 0 is not a prior node for "
     "node 0. Fix: topologically order operands and reject forward/self references."),
    (b"\x01" + META + b"\x00\x00", "truncated IR wire format. Fix: provide the complete Program "
     "bytes."),
    (b"\x01" + META + b"\x09VYRE-METX\x00", "InvalidDiscriminant: metadata payload marker is "
     "invalid. Fix: serialize Program with Program::to_wire()."),
])
def test_body_framing_errors(body: bytes, expected: str) -> None:
    assert detail_of(blob_of(body)) == expected


def test_metadata_field_errors() -> None:
    program = b.program([b.output("out", 0, b.U32, 1)], [b.return_()])
    meta = b"VYRE-META\x00\x01\x00\x00\x00"
    cases = {
        b"VYRE-META\x02": "InvalidDiscriminant: field entry_op_id tag has value 2",
        meta + b"\x00\x00\x00\x00": "InvalidDiscriminant: workgroup_size[1] is 0",
        meta + b"\x01\x00\x00\x00\x01\x00\x00\x00\x02": (
            "InvalidDiscriminant: field non_composable_with_self has value 2"
        ),
    }
    for new, expected in cases.items():
        assert detail_of(_patch_meta(program, new)).startswith(expected)


def _patch_meta(program: ir.Program, replacement: bytes) -> bytes:
    blob = bytearray(to_wire(program))
    start = blob.index(b"VYRE-META")
    blob[start:start + len(replacement)] = replacement
    return rehash(blob)


def test_buffer_record_errors() -> None:
    prog = b.program([b.output("out", 0, b.U32, 1)], [])
    rec = b"\x03\x00\x00\x00out\x00\x00\x00\x00\x01\x00\x00\x00\x01\x01"
    assert rec in to_wire(prog)
    zero = rec.replace(b"\x01\x00\x00\x00\x01\x01", b"\x00\x00\x00\x00\x01\x01")
    assert detail_of(patch(prog, rec, zero)) == (
        "InvalidDiscriminant: output buffer `out` has count 0. Fix: output buffers need a "
        "concrete positive element count before serialization."
    )
    tail = b"\x00\x00\x00\x00\x00\x00\x01\x03\x00\x00"
    cases = {
        b"\x02" + tail[1:]: "InvalidDiscriminant: field output range tag has value 2",
        b"\x00\x02" + tail[2:]: "InvalidDiscriminant: field coalesce_axis tag has value 2",
        tail[:6] + b"\x03" + tail[7:]: "InvalidDiscriminant: field cache_locality has value 3",
        tail[:7] + b"\x04\x00\x00": "InvalidDiscriminant: field linear_type has tag 4",
        tail[:8] + b"\x02\x00": "InvalidDiscriminant: field bytes_extraction has value 2",
        tail[:8] + b"\x00\x0a": "InvalidDiscriminant: field shape_predicate has tag 10",
        tail[:8] + b"\x00\x09\x00": (
            "InvalidDiscriminant: shape predicate connective has an absent operand"
        ),
    }
    for new, expected in cases.items():
        blob = patch(prog, rec + tail, rec + new, in_meta=True)
        assert detail_of(blob).startswith(expected), expected
    rng = b"\x01\x05\x03"
    assert detail_of(patch(prog, rec + b"\x00", rec + rng, in_meta=True)).startswith(
        "InvalidDiscriminant: output range start 5 exceeds end 3"
    )


def test_shape_predicate_depth_limit() -> None:
    pred: ir.ShapePredicate = ir.AtLeast(1)
    for _ in range(31):
        pred = ir.PredicateNot(pred)
    ok = b.program([b.read("a", 0, b.U32, 4).with_(shape_predicate=pred)], [])
    assert from_wire(to_wire(ok)) == ok
    deep = ok.with_(buffers=(ok.buffers[0].with_(shape_predicate=ir.PredicateNot(pred)),))
    from vyre import EncodeError

    with pytest.raises(EncodeError, match="nests deeper than the wire limit"):
        to_wire(deep)
    blob = to_wire(ok).replace(b"\x09" * 31 + b"\x01", b"\x09" * 32 + b"\x01")
    grown = bytearray(blob)
    meta_len_at = grown.index(b"VYRE-META") - 1
    grown[meta_len_at] += 1
    assert detail_of(rehash(grown)) == (
        "Fix: shape predicate exceeds maximum nesting depth 32; reject this untrusted blob or "
        "flatten the And/Or/Not tree."
    )


def _nested_blocks(levels: int) -> ir.Program:
    node: ir.Node = b.return_()
    for _ in range(levels):
        node = ir.Block((node,))
    return b.program([], [node])


def _nested_unary(levels: int) -> ir.Program:
    expr: ir.Expr = b.lit_u32(1)
    for _ in range(levels):
        expr = b.bit_not(expr)
    return b.program([], [b.let("x", expr)])


def _unchecked_wire(program: ir.Program) -> bytes:
    """The blob to_wire would write without refusing what from_wire refuses."""
    from vyre.extensions import DEFAULT_REGISTRY
    from vyre.wire import FLAG_OPAQUE_ENDIAN_FIXED, MAGIC
    from vyre.wire.encode import encode_body

    body = encode_body(program, 6, DEFAULT_REGISTRY)
    header = MAGIC + struct.pack("<HH", 6, FLAG_OPAQUE_ENDIAN_FIXED)
    return header + blake3.blake3(body).digest() + body


def test_shared_depth_limit() -> None:
    # Region(1) + blocks + Return: 62 blocks reach exactly 64 levels.
    assert from_wire(to_wire(_nested_blocks(62))) == _nested_blocks(62)
    assert _unchecked_wire(_nested_blocks(62)) == to_wire(_nested_blocks(62))
    assert detail_of(_unchecked_wire(_nested_blocks(63))) == (
        f"Fix: IR wire format exceeds maximum decode depth {MAX_DECODE_DEPTH}; flatten deeply "
        "nested Block/If/Loop structures or reject this untrusted blob."
    )
    # Region(1) + Let(2) + 61 UnOps + literal = 64 levels.
    assert from_wire(to_wire(_nested_unary(61))) == _nested_unary(61)
    assert "flatten deeply nested Expr trees" in detail_of(_unchecked_wire(_nested_unary(62)))
    dtype: ir.DataType = ir.Scalar.U8
    for _ in range(62):
        dtype = ir.Vec(dtype, 2)
    cast = b.program([], [b.let("c", b.cast(dtype, 1))])
    assert "flatten deeply nested DataType trees" in detail_of(_unchecked_wire(cast))


def test_node_and_expression_payload_errors() -> None:
    prog = b.program([b.read_write("out", 0, b.U32, 1)], [b.store("out", 0, b.add(1, 2))])
    store = b"\x02\x03\x00\x00\x00out"
    cases = [
        (b"\x09\x01", b"\x09\x00", "Fix: unknown binary op tag 0; use a compatible IR serializer."),
        (b"\x09\x01", b"\x09\x22", "Fix: unknown binary op tag 34; use a compatible IR serializer."),
        (store, b"\x63" + store[1:], "Fix: unknown IR node tag 99; use a Program serializer compatible with "
         "this vyre version."),
        (b"\x09\x01\x00", b"\x09\x01\x17", "Fix: unknown IR expression tag 23; use a Program "
         "serializer compatible with this vyre version."),
        (b"\x03\x00\x00\x00out", b"\x03\x00\x00\x00ou\xc3", "invalid UTF-8 in IR wire-format string: incomplete utf-8 "
         "byte sequence from index 2. Fix: serialize valid Rust String values."),
    ]
    for old, new, expected in cases:
        assert detail_of(patch(prog, old, new)) == expected, expected
    opaque = b.program([], [b.let("x", b.binop(ir.OpaqueOp(0x80000001), 1, 2))])
    assert detail_of(patch(opaque, b"\x80\x01\x00\x00\x80", b"\x80\x01\x00\x00\x00")) == (
        "InvalidDiscriminant: BinOp opaque id 0x00000001 collides with core IR. Fix: dialect "
        "extensions must use ids in 0x8000_0000..=0xffff_ffff."
    )


def test_small_enum_errors() -> None:
    prog = b.program([b.read_write("a", 0, b.U32, 1)], [
        ir.Barrier(ir.MemoryOrdering.SEQ_CST), ir.AllReduce("a", ir.CollectiveOp.SUM),
        b.let("s", b.subgroup_reduce(ir.SubgroupReduceOp.XOR, 1)),
    ])
    assert detail_of(patch(prog, b"\x07\x04", b"\x07\x06")) == (
        "InvalidDiscriminant: memory ordering tag 6 is unknown. Fix: reserialize with a "
        "compatible VYRE wire schema."
    )
    assert detail_of(patch(prog, b"a\x01\x00\x00\x00\x00", b"a\x07\x00\x00\x00\x00")) == (
        "Fix: unknown CollectiveOp tag 7; use a Program serializer compatible with this vyre "
        "version."
    )
    assert detail_of(patch(prog, b"\x11\x07", b"\x11\x00")) == (
        "Fix: unknown SubgroupReduceOp tag 0; use a Program serializer compatible with this "
        "vyre version."
    )


def test_collection_limits() -> None:
    call = b.program([], [b.let("c", b.call("f", *range(3)))])
    assert detail_of(patch(call, b"f\x03\x00\x00\x00", b"f\x01\x10\x00\x00")) == (
        "Fix: call argument count 4097 exceeds IR wire-format limit 4096; split the Program or "
        "reject this untrusted blob."
    )
    tensor = b.program([], [b.let("c", b.cast(ir.TensorShaped(ir.Scalar.F32, ()), 1))])
    assert "tensor rank 4097 exceeds IR wire-format limit 4096" in detail_of(
        patch(tensor, b"\x15\x0b\x00\x00\x00\x00", b"\x15\x0b\x01\x10\x00\x00")
    )
    opaque_dt = b.program([], [b.let("c", b.cast(ir.OpaqueType(0x80000001), 1))])
    assert detail_of(patch(opaque_dt, b"\x01\x00\x00\x80", b"\x01\x00\x00\x00")).startswith(
        "InvalidDiscriminant: DataType opaque id 0x00000001 collides with core IR."
    )


def test_region_and_record_consistency() -> None:
    prog = b.program([b.read_write("out", 0, b.U32, 2)], [])
    region = b"\x00\x00\x01\x01\x00\x01\x02\x06"
    assert region in to_wire(prog)
    cases = [
        (b"\x00\x07\x01\x01\x00\x01\x02\x06", "InvalidDiscriminant: field kind has value 7"),
        (b"\x00\x00\x05\x01\x00\x01\x02\x06", "Fix: unknown buffer access tag 5"),
        (b"\x00\x00\x01\x01\x01\x01\x02\x06", "InvalidDiscriminant: field shape_tag has value 1"),
        (b"\x00\x00\x01\x01\x00\x01\x03\x06", "InvalidDiscriminant: memory-region count 3 does "
         "not match metadata count 2 for buffer `out`"),
        (b"\x00\x00\x01\x14\x00\x01\x02\x06", "InvalidDiscriminant: Vec element tag is not valid"),
        (b"\x00\x00\x01\x20\x00\x01\x02\x06", "InvalidDiscriminant: field element has value 32"),
        (b"\x00\x00\x01\x01\x00\x41\x02", "TruncatedPayload: shape payload length 65 exceeds "
         "limit 64"),
        (b"\x00\x00\x00\x01\x00\x01\x02\x06", "InvalidDiscriminant: output-set index 0 names "
         "non-writable buffer `out`"),
    ]
    for new, expected in cases:
        assert detail_of(patch(prog, region, new)).startswith(expected), expected
    assert detail_of(patch(prog, b"\x01" + region, b"\x01\x01" + region[1:])).startswith(
        "InvalidDiscriminant: memory-region id 1 is out of canonical order at index 0"
    )
    missing = rehash(to_wire(prog)[:-2] + b"\x00")
    assert detail_of(missing) == (
        "InvalidDiscriminant: output-set [] does not match writable buffer indices [0]. Fix: "
        "reject tampered Program bytes."
    )


def test_record_op_id_must_match_payload() -> None:
    prog = b.program([], [b.return_()], wrapped=False)
    assert detail_of(patch(prog, b"\x10vyre.node.return", b"\x10vyre.node.retUrn")) == (
        "InvalidDiscriminant: node 1 op_id `vyre.node.retUrn` does not match payload "
        "`vyre.node.return`. Fix: reject tampered wire bytes."
    )
    assert detail_of(patch(prog, b"\x01\x05\x00", b"\x02\x05\x05\x00")).startswith(
        "TruncatedPayload: node 1 payload has trailing bytes"
    )
    assert detail_of(patch(prog, b"\x01\x05\x00", b"\x01\x05\x01\x00")).startswith(
        "InvalidDiscriminant: node 1 carries operand ids"
    )


def test_unknown_extension_is_a_structured_error() -> None:
    prog = b.program([], [b.let("x", ir.OpaqueExpr("acme.expr", b"\x01\x02"))])
    blob = to_wire(prog)
    with pytest.raises(UnknownExtensionError) as info:
        from_wire(blob)
    assert info.value.extension_kind == "acme.expr"
    assert info.value.detail.startswith(
        "Fix: no OpaqueExprResolver registered for extension kind `acme.expr`."
    )
    assert from_wire(blob, preserve_unknown=True) == prog


def test_lenient_bytes_decode_and_canonicalize() -> None:
    prog = b.program([], [b.let("t", True)])
    lenient = patch(prog, b"\x02\x01", b"\x02\x07")
    decoded = from_wire(lenient)
    assert decoded == prog
    assert to_wire(decoded) == to_wire(prog) != lenient
    overlong = patch(prog, b"\x02\x15vyre", b"\x82\x00\x15vyre")
    assert from_wire(overlong) == prog


def test_stress_many_nodes_and_buffers() -> None:
    many = b.program([], [b.return_()] * 100_000)
    assert len(from_wire(to_wire(many)).entry[0].body) == 100_000
    same_name = ir.Program(tuple(b.read("b", 0, b.U32) for _ in range(16_384)))
    assert len(from_wire(to_wire(same_name)).buffers) == 16_384
