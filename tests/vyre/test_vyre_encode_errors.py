"""Programs the reference encoder refuses raise EncodeError with vyre 0.7.2's text."""

from __future__ import annotations

import pytest

from vyre import EncodeError, WireValidationError, from_wire, ir, to_wire
from vyre import builder as b


def encode_detail(program: ir.Program, **kwargs: object) -> str:
    with pytest.raises(EncodeError) as info:
        to_wire(program, **kwargs)  # type: ignore[arg-type]
    assert isinstance(info.value, WireValidationError)
    assert str(info.value).startswith("Wire-format validation failed: ")
    assert "Fix:" in info.value.detail
    return info.value.detail


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_zero_workgroup_axis(axis: int) -> None:
    size = [4, 4, 4]
    size[axis] = 0
    assert encode_detail(ir.Program(workgroup_size=tuple(size))) == (
        f"Fix: workgroup_size[{axis}] is 0. Encode only programs whose workgroup dimensions are "
        ">= 1."
    )


def test_buffer_preconditions() -> None:
    wg = ir.BufferDecl.workgroup("tile", 0, b.U32)
    assert encode_detail(b.program([wg], [])) == (
        "Fix: workgroup buffer `tile` has count 0. Encode only positive-length shared-memory "
        "buffers."
    )
    assert encode_detail(b.program([ir.BufferDecl.output("o", 0, b.U32)], [])) == (
        "Fix: live-out buffer `o` has count 0. Encode only positive-length externally-visible "
        "buffers."
    )
    past_end = b.output("o", 0, b.U32, 4).with_(output_byte_range=(0, 17))
    assert encode_detail(b.program([past_end], [])) == (
        "Fix: buffer `o` output byte range end (17) exceeds full buffer size (16). Encode only "
        "ranges that fit within the declared buffer size."
    )
    reversed_range = b.output("o", 0, b.U32, 4).with_(output_byte_range=(8, 4))
    assert encode_detail(b.program([reversed_range], [])) == (
        "Fix: buffer `o` output byte range has start (8) > end (4). Encode only valid ranges."
    )
    tensor = b.read_write("t", 0, ir.Scalar.TENSOR, 4).with_(output_byte_range=(0, 1))
    assert encode_detail(b.program([tensor], [])).startswith(
        "Fix: static output buffer `t` uses a runtime-sized element type."
    )
    sparse = b.read("s", 0, ir.SparseCsr(ir.Scalar.F32), 4)
    assert "not valid buffer elements in the dense memory-region encoder" in encode_detail(
        b.program([sparse], [])
    )


def test_count_zero_with_range_only_checks_order() -> None:
    runtime_sized = b.read_write("r", 0, b.U32, 0).with_(output_byte_range=(0, 0))
    blob = to_wire(b.program([runtime_sized], []))
    assert from_wire(blob).buffers[0].output_byte_range == (0, 0)


def test_quantized_and_limits() -> None:
    bad_storage = b.program([], [b.let("c", b.cast(ir.Quantized(ir.Scalar.F32), 0))])
    assert encode_detail(bad_storage) == (
        "Fix: DataType::Quantized storage must be I4/I8/I16/U8/U16/F8E4M3/F8E5M2/FP4/NF4."
    )
    zero_group = ir.Quantized(ir.Scalar.I8, ir.QuantScale(ir.QuantScaleKind.PER_GROUP, 0))
    assert encode_detail(b.program([], [b.let("c", b.cast(zero_group, 0))])) == (
        "Fix: quantized PerGroup scale requires group_size > 0."
    )
    rank = ir.TensorShaped(ir.Scalar.F32, (1,) * 4097)
    assert "tensor shape rank 4097 exceeds the wire-format limit 4096" in encode_detail(
        b.program([], [b.let("c", b.cast(rank, 0))])
    )
    long_name = b.program([], [b.let("x" * (1 << 20 + 1), 0)])
    assert encode_detail(long_name).startswith("Fix: string length 2097152 exceeds")
    payload = ir.OpaqueExpr("k", bytes(4 * 1024 * 1024 + 1))
    assert "exceeds 4194304" in encode_detail(b.program([], [b.let("x", payload)]))


@pytest.mark.parametrize("bad", [
    ir.LitU32(1 << 32), ir.LitU32(-1), ir.LitI32(1 << 31), ir.InvocationId(256),
    ir.Binary(ir.UnOp.NEGATE, ir.LitU32(1), ir.LitU32(2)),  # type: ignore[arg-type]
    ir.Cast("u32", ir.LitU32(1)),  # type: ignore[arg-type]
])
def test_out_of_range_ir_is_an_encode_error(bad: ir.Expr) -> None:
    encode_detail(b.program([], [b.let("x", bad)]))


def test_non_ir_objects_are_rejected() -> None:
    encode_detail(ir.Program(entry=("not a node",)))  # type: ignore[arg-type]
    encode_detail(b.program([], [b.let("x", b.lit_u32(1))]), version=7)
    surrogate = b.program([], [b.let("\ud800", 1)])
    assert "not valid Unicode" in encode_detail(surrogate)


def test_deep_programs_are_not_encoded() -> None:
    # to_wire once wrote programs of any depth, which from_wire then refused.
    expr: ir.Expr = b.lit_u32(0)
    for _ in range(150):
        expr = b.add(expr, 1)
    with pytest.raises(EncodeError, match="maximum decode depth 64.*Fix: flatten") as info:
        to_wire(b.program([], [b.let("deep", expr)]))
    assert str(info.value).count("Fix:") == 1


def test_low_opaque_ids_encode_but_do_not_decode() -> None:
    blob = to_wire(b.program([], [b.let("x", b.unop(ir.OpaqueOp(5), 1))]))
    with pytest.raises(WireValidationError, match="UnOp opaque id 0x00000005 collides"):
        from_wire(blob)
