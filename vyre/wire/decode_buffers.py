"""Decoding of the metadata buffer records, memory regions and output set of a VIR0 body."""

from __future__ import annotations

from dataclasses import dataclass, field

from vyre import ir
from vyre.errors import WireValidationError
from vyre.wire import MAX_BUFFERS, MAX_REGION_PAYLOAD_LEN, MAX_SHAPE_PREDICATE_DEPTH
from vyre.wire.decode_ir import (
    data_type_name,
    quant_scale,
    quant_zero_point,
    reject_reserved_extension_id,
)
from vyre.wire.reader import Reader
from vyre.wire.tags import OPAQUE_TAG, SCALAR_TAGS

_KINDS = {int(k): k for k in ir.MemoryKind}
_ACCESSES = {int(a): a for a in ir.BufferAccess}
_LOCALITIES = {int(c): c for c in ir.CacheLocality}
_LINEAR = {int(t): t for t in ir.LinearType}
_U64_MAX = (1 << 64) - 1


@dataclass
class DecodedBuffer:
    """A buffer while the metadata and memory-region sections are merged."""

    name: str
    binding: int
    count: int
    is_output: bool
    pipeline_live_out: bool
    output_byte_range: tuple[int, int] | None
    hints: ir.MemoryHints
    linear_type: ir.LinearType = ir.LinearType.UNRESTRICTED
    bytes_extraction: bool = False
    shape_predicate: ir.ShapePredicate | None = None
    access: ir.BufferAccess = ir.BufferAccess.READ_ONLY
    kind: ir.MemoryKind = ir.MemoryKind.READONLY
    element: ir.DataType = field(default=ir.Scalar.U32)

    def finish(self) -> ir.BufferDecl:
        """The immutable declaration."""
        return ir.BufferDecl(
            self.name, self.binding, self.access, self.kind, self.element, self.count,
            self.is_output, self.pipeline_live_out, self.output_byte_range, self.hints,
            self.bytes_extraction, self.linear_type, self.shape_predicate,
        )


def _invalid(text: str, fix: str = "reserialize with Program::to_wire().") -> WireValidationError:
    return WireValidationError(f"InvalidDiscriminant: {text}. Fix: {fix}")


def strict_bool(value: int, name: str) -> bool:
    """A 0/1 byte; anything else is rejected."""
    if value > 1:
        raise _invalid(f"field {name} has value {value}")
    return value == 1


def read_hints(r: Reader) -> ir.MemoryHints:
    """A MemoryHints block."""
    tag = r.u8()
    if tag > 1:
        raise _invalid(f"field coalesce_axis tag has value {tag}")
    axis = r.u8() if tag else None
    alignment = r.u32()
    locality_tag = r.u8()
    locality = _LOCALITIES.get(locality_tag)
    if locality is None:
        raise _invalid(f"field cache_locality has value {locality_tag}")
    return ir.MemoryHints(axis, alignment, locality)


def _zero_count_checks(name: str, count: int, is_output: bool, live_out: bool) -> None:
    if count == 0 and is_output:
        raise _invalid(
            f"output buffer `{name}` has count 0",
            "output buffers need a concrete positive element count before serialization.",
        )
    if count == 0 and live_out:
        raise _invalid(
            f"live-out buffer `{name}` has count 0",
            "externally-visible buffers need a concrete positive element count before "
            "serialization.",
        )


def _read_range(r: Reader) -> tuple[int, int] | None:
    tag = r.u8()
    if tag > 1:
        raise _invalid(f"field output range tag has value {tag}")
    if not tag:
        return None
    start, end = r.leb_u64(), r.leb_u64()
    if start > end:
        raise _invalid(f"output range start {start} exceeds end {end}")
    return start, end


def read_buffer_record(r: Reader, version: int) -> DecodedBuffer:
    """One metadata buffer record; rev-6 fields only when ``version >= 6``."""
    name = r.string()
    binding, count = r.u32(), r.u32()
    is_output, live_out = r.u8() != 0, r.u8() != 0
    _zero_count_checks(name, count, is_output, live_out)
    buf = DecodedBuffer(name, binding, count, is_output, live_out, _read_range(r), read_hints(r))
    if version >= 6:
        tag = r.u8()
        linear = _LINEAR.get(tag)
        if linear is None:
            raise _invalid(f"field linear_type has tag {tag}")
        buf.linear_type = linear
        buf.bytes_extraction = strict_bool(r.u8(), "bytes_extraction")
        buf.shape_predicate = read_shape_predicate(r, 0)
    return buf


def read_shape_predicate(r: Reader, depth: int) -> ir.ShapePredicate | None:
    """An optional ShapePredicate; depth is bounded by MAX_SHAPE_PREDICATE_DEPTH."""
    tag = r.u8()
    if tag == 0:
        return None
    if depth >= MAX_SHAPE_PREDICATE_DEPTH:
        raise WireValidationError(
            f"Fix: shape predicate exceeds maximum nesting depth {MAX_SHAPE_PREDICATE_DEPTH}; "
            "reject this untrusted blob or flatten the And/Or/Not tree."
        )
    if tag <= 4:
        cls = (ir.AtLeast, ir.AtMost, ir.Exactly, ir.MultipleOf)[tag - 1]
        return cls(r.u32())
    if tag == 5:
        return ir.ModEquals(r.u32(), r.u32())
    if tag == 6:
        return ir.AffineRange(*[_to_i64(r.leb_u64()) for _ in range(4)])
    if tag in (7, 8):
        left = _nested_predicate(r, depth)
        right = _nested_predicate(r, depth)
        return (ir.PredicateAnd if tag == 7 else ir.PredicateOr)(left, right)
    if tag == 9:
        return ir.PredicateNot(_nested_predicate(r, depth))
    raise _invalid(f"field shape_predicate has tag {tag}")


def _nested_predicate(r: Reader, depth: int) -> ir.ShapePredicate:
    inner = read_shape_predicate(r, depth + 1)
    if inner is None:
        raise _invalid("shape predicate connective has an absent operand")
    return inner


def _to_i64(raw: int) -> int:
    return raw - (1 << 64) if raw >= 1 << 63 else raw


def _u32_from_leb(r: Reader, what: str, fix: str) -> int:
    value = r.leb_u64()
    if value > 0xFFFFFFFF:
        raise WireValidationError(
            f"TruncatedPayload: {what} cannot fit u32 (out of range integral type conversion "
            f"attempted). Fix: {fix}"
        )
    return value


def _dense_scalar(tag: int) -> ir.DataType:
    scalar = SCALAR_TAGS.get(tag)
    if scalar is not None:
        return scalar
    texts = {
        0x08: "Array element tag requires shape payload. Fix: include array element_size in "
        "the Dense shape payload.",
        0x13: "Handle element tag requires shape payload. Fix: include handle type id in the "
        "Dense shape payload.",
        0x14: "Vec element tag is not valid for a Dense memory element. Fix: serialize vectors "
        "as scalar lanes or extend the Dense shape payload.",
        0x15: "TensorShaped element tag is not valid for a Dense memory element. Fix: use "
        "DataType::Tensor in this VIR0 schema.",
    }
    text = texts.get(tag)
    if text is None:
        text = f"field element has value {tag}. Fix: use a defined DataType discriminant."
    raise WireValidationError(f"InvalidDiscriminant: {text}")


def read_dense_element(r: Reader, tag: int) -> ir.DataType:
    """The element type of a memory region, reading composite payloads from ``r``."""
    if tag == 0x08:
        size = r.leb_u64()
        return ir.Array(size)
    if tag == 0x13:
        return ir.Handle(_u32_from_leb(r, "handle DataType id", "reject this payload."))
    if tag == OPAQUE_TAG:
        raw = _u32_from_leb(r, "opaque DataType id", "reject this payload.")
        return ir.OpaqueType(reject_reserved_extension_id(raw, "DataType"))
    if tag == 0x1F:
        return _read_dense_quantized(r)
    return _dense_scalar(tag)


def _read_dense_quantized(r: Reader) -> ir.DataType:
    storage_tag = r.leb_u64()
    if storage_tag > 0xFF:
        raise WireValidationError(
            "TruncatedPayload: quantized storage DataType tag cannot fit u8 (out of range "
            "integral type conversion attempted). Fix: reject this payload."
        )
    storage = _dense_scalar(storage_tag)
    if storage not in ir.QUANTIZED_STORAGE:
        raise _invalid(
            f"quantized storage tag {storage_tag} decodes to `{data_type_name(storage)}`, which "
            "is not a valid quantized storage type",
            "reserialize with I4/I8/I16/U8/U16/F8/FP4/NF4 storage.",
        )
    tag = r.leb_u64()
    scale = quant_scale(tag, _quant_param(r, "scale"), dense=True)
    tag = r.leb_u64()
    zero_point = quant_zero_point(tag, _quant_param(r, "zero-point"), dense=True)
    return ir.Quantized(storage, scale, zero_point)


def _quant_param(r: Reader, what: str) -> int:
    return _u32_from_leb(r, f"quantization {what} parameter", "reject this payload.")


def read_output_set(r: Reader, buffers: list[DecodedBuffer]) -> tuple[int, ...]:
    """The output-set section: must equal the RW/WO buffer indices exactly."""
    count = r.leb_len(MAX_BUFFERS, "output set count")
    indices: list[int] = []
    for _ in range(count):
        index = r.leb_u32()
        if index >= len(buffers):
            raise WireValidationError(
                f"InvalidDiscriminant: output-set index {index} is out of bounds for "
                f"{len(buffers)} buffers. Fix: reject tampered Program bytes."
            )
        if buffers[index].access not in (ir.BufferAccess.READ_WRITE, ir.BufferAccess.WRITE_ONLY):
            raise _invalid(
                f"output-set index {index} names non-writable buffer `{buffers[index].name}`"
            )
        if indices and indices[-1] >= index:
            raise _invalid(f"output-set index {index} is not in strict declaration order")
        indices.append(index)
    expected = [
        i for i, b in enumerate(buffers)
        if b.access in (ir.BufferAccess.READ_WRITE, ir.BufferAccess.WRITE_ONLY)
    ]
    if indices != expected:
        raise WireValidationError(
            f"InvalidDiscriminant: output-set {_rust_list(indices)} does not match writable "
            f"buffer indices {_rust_list(expected)}. Fix: reject tampered Program bytes."
        )
    return tuple(indices)


def _rust_list(values: list[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def read_memory_regions(r: Reader, buffers: list[DecodedBuffer]) -> None:
    """The memory-region section, merged into ``buffers``."""
    count = r.leb_len(MAX_BUFFERS, "memory-region count")
    if count != len(buffers):
        raise WireValidationError(
            f"InvalidDiscriminant: memory-region count {count} does not match metadata buffer "
            f"count {len(buffers)}. Fix: reject tampered Program bytes."
        )
    for index, buf in enumerate(buffers):
        _read_region(r, index, buf)


def _read_region(r: Reader, index: int, buf: DecodedBuffer) -> None:
    region_id = r.leb_u32()
    if region_id != index:
        raise _invalid(f"memory-region id {region_id} is out of canonical order at index {index}")
    kind_tag = r.u8()
    kind = _KINDS.get(kind_tag)
    if kind is None:
        raise _invalid(f"field kind has value {kind_tag}", "use a defined MemoryKind discriminant.")
    access_tag = r.u8()
    access = _ACCESSES.get(access_tag)
    if access is None:
        raise WireValidationError(
            f"Fix: unknown buffer access tag {access_tag}; use a compatible IR serializer."
        )
    element_tag, shape_tag = r.u8(), r.u8()
    if shape_tag != 0:
        raise _invalid(
            f"field shape_tag has value {shape_tag}",
            "this decoder supports Dense regions only in schema 6.",
        )
    shape = r.sub_reader(r.leb_len(MAX_REGION_PAYLOAD_LEN, "shape payload length"))
    count = _u32_from_leb(shape, "dense shape count", "split the memory region.")
    element = read_dense_element(shape, element_tag)
    if not shape.at_end():
        raise WireValidationError(
            "TruncatedPayload: shape payload has trailing bytes. Fix: reject non-canonical "
            "Program bytes."
        )
    hints_reader = r.sub_reader(r.leb_len(MAX_REGION_PAYLOAD_LEN, "hints payload length"))
    hints = read_hints(hints_reader)
    if not hints_reader.at_end():
        raise WireValidationError(
            "TruncatedPayload: hints payload has trailing bytes. Fix: reject non-canonical "
            "Program bytes."
        )
    _check_region(buf, count, access, element)
    buf.kind, buf.access, buf.element, buf.hints = kind, access, element, hints


def _check_region(
    buf: DecodedBuffer, count: int, access: ir.BufferAccess, element: ir.DataType
) -> None:
    if buf.count != count:
        raise _invalid(
            f"memory-region count {count} does not match metadata count {buf.count} for buffer "
            f"`{buf.name}`"
        )
    if count == 0 and access == ir.BufferAccess.WORKGROUP:
        raise _invalid(
            f"workgroup buffer `{buf.name}` has count 0",
            "workgroup memory requires a concrete positive element count.",
        )
    _zero_count_checks(buf.name, count, buf.is_output, buf.pipeline_live_out)
    if buf.output_byte_range is None:
        return
    size = ir.size_bytes(element)
    if size is None:
        raise _invalid(
            f"output range on buffer `{buf.name}` uses variable-width element type",
            "serialize only byte ranges over fixed-width buffers.",
        )
    full = count * size
    if full > _U64_MAX:
        raise _invalid(
            f"output range full byte size overflows for buffer `{buf.name}`",
            "split the buffer or reject tampered Program bytes.",
        )
    end = buf.output_byte_range[1]
    if end > full:
        raise _invalid(f"output range end {end} exceeds buffer `{buf.name}` byte size {full}")
