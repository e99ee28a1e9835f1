"""Encoding of the buffer metadata records, memory regions and output set of a VIR0 body."""

from __future__ import annotations

from vyre import ir
from vyre.errors import EncodeError
from vyre.wire import MAX_SHAPE_PREDICATE_DEPTH
from vyre.wire.encode_ir import check_quantized
from vyre.wire.tags import OPAQUE_TAG
from vyre.wire.writer import U64_MAX, leb_bytes, put_leb, put_string, put_u8, put_u32


def _enum(value: object, enum_type: type, label: str) -> int:
    if type(value) is not enum_type:
        raise EncodeError(f"Fix: {label} must be a {enum_type.__name__}, got {value!r}.")
    return int(value)  # type: ignore[call-overload]


def hints_bytes(hints: ir.MemoryHints) -> bytes:
    """The MemoryHints block: 6 or 7 bytes."""
    out = bytearray()
    if hints.coalesce_axis is None:
        out.append(0)
    else:
        out.append(1)
        put_u8(out, hints.coalesce_axis, "coalesce_axis")
    put_u32(out, hints.preferred_alignment, "preferred_alignment")
    out.append(_enum(hints.cache_locality, ir.CacheLocality, "cache_locality"))
    return bytes(out)


def put_shape_predicate(out: bytearray, pred: ir.ShapePredicate | None, depth: int) -> None:
    """Append an optional ShapePredicate, bounded to MAX_SHAPE_PREDICATE_DEPTH."""
    if pred is None:
        out.append(0)
        return
    if depth >= MAX_SHAPE_PREDICATE_DEPTH:
        raise EncodeError(
            "Fix: shape predicate nests deeper than the wire limit; flatten the And/Or/Not tree."
        )
    if isinstance(pred, (ir.AtLeast, ir.AtMost, ir.Exactly, ir.MultipleOf)):
        out.append(pred.TAG)
        put_u32(out, pred.n, "shape predicate bound")
    elif isinstance(pred, ir.ModEquals):
        out.append(5)
        put_u32(out, pred.modulus, "shape predicate modulus")
        put_u32(out, pred.remainder, "shape predicate remainder")
    elif isinstance(pred, ir.AffineRange):
        out.append(6)
        for value in (pred.scale, pred.offset, pred.min, pred.max):
            if isinstance(value, bool) or not isinstance(value, int) or not (
                -(1 << 63) <= value < 1 << 63
            ):
                raise EncodeError(f"Fix: AffineRange parameter {value!r} does not fit i64.")
            put_leb(out, value & U64_MAX)
    elif isinstance(pred, (ir.PredicateAnd, ir.PredicateOr)):
        out.append(7 if isinstance(pred, ir.PredicateAnd) else 8)
        put_nested(out, pred.left, depth)
        put_nested(out, pred.right, depth)
    elif isinstance(pred, ir.PredicateNot):
        out.append(9)
        put_nested(out, pred.inner, depth)
    else:
        raise EncodeError(f"Fix: {pred!r} is not a ShapePredicate; unmapped variant.")


def put_nested(out: bytearray, pred: ir.ShapePredicate, depth: int) -> None:
    """An And/Or/Not operand, which must be present."""
    if pred is None:
        raise EncodeError("Fix: shape predicate connective has an absent operand.")
    put_shape_predicate(out, pred, depth + 1)


def put_buffer_record(out: bytearray, buf: ir.BufferDecl, version: int) -> None:
    """Append one metadata buffer record."""
    put_string(out, buf.name, "buffer name")
    put_u32(out, buf.binding, "binding")
    put_u32(out, buf.count, "buffer count")
    out.append(1 if buf.is_output else 0)
    out.append(1 if buf.pipeline_live_out else 0)
    if buf.output_byte_range is None:
        out.append(0)
    else:
        out.append(1)
        start, end = buf.output_byte_range
        put_leb(out, start, "output range start")
        put_leb(out, end, "output range end")
    out += hints_bytes(buf.hints)
    if version >= 6:
        out.append(_enum(buf.linear_type, ir.LinearType, "linear_type"))
        out.append(1 if buf.bytes_extraction else 0)
        put_shape_predicate(out, buf.shape_predicate, 0)
    elif (
        buf.linear_type != ir.LinearType.UNRESTRICTED
        or buf.bytes_extraction
        or buf.shape_predicate is not None
    ):
        raise EncodeError(
            f"Fix: buffer `{buf.name}` uses rev-6 fields (linear_type, bytes_extraction, "
            f"shape_predicate) that wire version {version} cannot carry; encode at version 6."
        )


def dense_element(dtype: ir.DataType, count: int) -> tuple[int, bytes]:
    """(element tag, shape payload) of a memory-region element."""
    shape = bytearray(leb_bytes(count, "buffer count"))
    if type(dtype) is ir.Scalar:
        return int(dtype), bytes(shape)
    if isinstance(dtype, ir.Array):
        put_leb(shape, dtype.element_size, "array element_size")
        return 0x08, bytes(shape)
    if isinstance(dtype, ir.Handle):
        put_leb(shape, dtype.type_id, "handle type id")
        return 0x13, bytes(shape)
    if isinstance(dtype, ir.OpaqueType):
        put_leb(shape, dtype.id, "opaque DataType id")
        return OPAQUE_TAG, bytes(shape)
    if isinstance(dtype, ir.Quantized):
        if dtype.storage not in ir.QUANTIZED_STORAGE:
            raise EncodeError(
                "Fix: quantized memory-region storage must be "
                "I4/I8/I16/U8/U16/F8E4M3/F8E5M2/FP4/NF4."
            )
        check_quantized(dtype)
        put_leb(shape, int(dtype.storage))  # type: ignore[arg-type]
        for kind, param in ((dtype.scale.kind, dtype.scale.param),
                            (dtype.zero_point.kind, dtype.zero_point.param)):
            put_leb(shape, int(kind))
            put_leb(shape, param, "quantization parameter")
        return 0x1F, bytes(shape)
    if isinstance(dtype, (ir.Vec, ir.TensorShaped)):
        return (0x14 if isinstance(dtype, ir.Vec) else 0x15), bytes(shape)
    if isinstance(dtype, (ir.SparseCsr, ir.SparseCoo, ir.SparseBsr, ir.DeviceMesh)):
        raise EncodeError(
            "Fix: unknown DataType variant cannot be serialized into VYRE wire format. "
            "Sparse/Vec/TensorShaped/DeviceMesh types are not valid buffer elements in the dense "
            "memory-region encoder; lower to a supported scalar/array/handle/opaque first."
        )
    raise EncodeError(f"Fix: {dtype!r} is not a vyre DataType; unmapped variant.")


def put_memory_regions(out: bytearray, buffers: tuple[ir.BufferDecl, ...]) -> None:
    """Append the memory-region section."""
    put_leb(out, len(buffers))
    for index, buf in enumerate(buffers):
        put_leb(out, index)
        out.append(_enum(buf.kind, ir.MemoryKind, "memory kind"))
        out.append(_enum(buf.access, ir.BufferAccess, "buffer access"))
        tag, shape = dense_element(buf.element, buf.count)
        out.append(tag)
        out.append(0)
        put_leb(out, len(shape))
        out += shape
        hints = hints_bytes(buf.hints)
        put_leb(out, len(hints))
        out += hints


def put_output_set(out: bytearray, buffers: tuple[ir.BufferDecl, ...]) -> None:
    """Append the output set: indices of ReadWrite/WriteOnly buffers."""
    indices = [i for i, b in enumerate(buffers) if b.is_writable]
    put_leb(out, len(indices))
    for index in indices:
        put_leb(out, index)


def check_encodable(program: ir.Program) -> None:
    """vyre's ``reject_non_roundtrippable_shapes`` preconditions."""
    for axis, size in enumerate(program.workgroup_size):
        if size == 0:
            raise EncodeError(
                f"Fix: workgroup_size[{axis}] is 0. Encode only programs whose workgroup "
                "dimensions are >= 1."
            )
    for buf in program.buffers:
        _check_buffer(buf)


def _check_buffer(buf: ir.BufferDecl) -> None:
    name = buf.name
    if buf.count == 0 and buf.access == ir.BufferAccess.WORKGROUP:
        raise EncodeError(
            f"Fix: workgroup buffer `{name}` has count 0. Encode only positive-length "
            "shared-memory buffers."
        )
    if buf.count == 0 and buf.pipeline_live_out:
        raise EncodeError(
            f"Fix: live-out buffer `{name}` has count 0. Encode only positive-length "
            "externally-visible buffers."
        )
    if buf.output_byte_range is None:
        return
    start, end = buf.output_byte_range
    full = None
    if buf.count != 0:
        size = ir.size_bytes(buf.element)
        if size is None:
            raise EncodeError(
                f"Fix: static output buffer `{name}` uses a runtime-sized element type. Lower it "
                "to a fixed-width GPU storage type before wire encoding."
            )
        full = buf.count * size
        if full > U64_MAX:
            raise EncodeError(
                f"Fix: output buffer `{name}` byte size overflows u64 during wire encoding. "
                "Split the buffer before serialization."
            )
    if start > end:
        raise EncodeError(
            f"Fix: buffer `{name}` output byte range has start ({start}) > end ({end}). Encode "
            "only valid ranges."
        )
    if full is not None and end > full:
        raise EncodeError(
            f"Fix: buffer `{name}` output byte range end ({end}) exceeds full buffer size "
            f"({full}). Encode only ranges that fit within the declared buffer size."
        )
