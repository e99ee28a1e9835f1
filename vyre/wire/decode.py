"""``from_wire``: VIR0 bytes -> :class:`~vyre.ir.Program`, treating the input as hostile.

Check order is vyre 0.7.2's: size cap, magic, version, header length, flags, digest, body.
The body is the node records (metadata first), then the memory regions and the output set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import blake3

from vyre import ir
from vyre.errors import VersionMismatchError, WireValidationError
from vyre.extensions import DEFAULT_REGISTRY, ExtensionRegistry, decode_opaque
from vyre.wire import (
    FLAG_COMPRESSED,
    FLAG_OPAQUE_ENDIAN_FIXED,
    FLAG_SEALED,
    HEADER_LEN,
    MAGIC,
    MAX_ARGS,
    MAX_BUFFERS,
    MAX_DECODE_DEPTH,
    MAX_MESH_AXES,
    MAX_NODES,
    MAX_OPAQUE_PAYLOAD_LEN,
    MAX_PROGRAM_BYTES,
    MAX_REGION_PAYLOAD_LEN,
    MAX_SHAPE_PREDICATE_DEPTH,
    MAX_TENSOR_RANK,
    METADATA_MARKER,
    METADATA_OP_ID,
    OPAQUE_TAG,
    SCALAR_TAGS,
    WIRE_FORMAT_VERSION,
    version_is_supported,
)
from vyre.wire.primitives import U64_MAX, Reader

_FLAG_MASK = FLAG_COMPRESSED | FLAG_SEALED | FLAG_OPAQUE_ENDIAN_FIXED


def check_header(data: bytes) -> int:
    """Validate the 40-byte header and the body digest; return the header version.

    Args:
        data: the whole blob.

    Returns:
        The wire version (4, 5 or 6).

    Raises:
        VersionMismatchError: magic ok and version outside 4..=6.
        WireValidationError: any other header or digest failure.
    """
    if len(data) > MAX_PROGRAM_BYTES:
        raise _framing_cap_error(len(data))
    if len(data) < 4 or data[:4] != MAGIC:
        raise WireValidationError(
            "invalid IR wire-format header. Fix: serialize Program with Program::to_wire()."
        )
    if len(data) < 6:
        raise WireValidationError(
            "IR wire-format truncated before schema version. Fix: serialize Program with "
            "Program::to_wire()."
        )
    version = data[4] | data[5] << 8
    if not version_is_supported(version):
        raise VersionMismatchError(WIRE_FORMAT_VERSION, version)
    if len(data) < HEADER_LEN:
        raise WireValidationError(
            f"TruncatedPayload: header requires {HEADER_LEN} bytes, got {len(data)}. Fix: "
            "provide the complete Program bytes."
        )
    _check_flags(data[6] | data[7] << 8)
    expected = bytes(data[8:HEADER_LEN])
    actual = blake3.blake3(data[HEADER_LEN:]).digest()
    if actual != expected:
        raise WireValidationError(
            f"IntegrityMismatch: expected {expected.hex()}, actual {actual.hex()}. Fix: reject "
            "the truncated or tampered Program bytes and re-fetch the payload."
        )
    return version


def _framing_cap_error(size: int) -> WireValidationError:
    return WireValidationError(
        f"Fix: wire blob is {size} bytes, exceeding the {MAX_PROGRAM_BYTES}-byte IR framing cap. "
        "Reject this untrusted input or split the program before serialization."
    )


def _check_flags(flags: int) -> None:
    if flags & ~_FLAG_MASK or flags & (FLAG_COMPRESSED | FLAG_SEALED):
        raise WireValidationError(
            f"InvalidDiscriminant: field flags has value {flags}. Fix: decode only "
            "uncompressed, unsigned schema-v1 Program bytes or enable the matching feature."
        )
    if not flags & FLAG_OPAQUE_ENDIAN_FIXED:
        raise WireValidationError(
            "InvalidDiscriminant: wire header is missing OPAQUE_ENDIAN_FIXED. Fix: reserialize "
            "with a producer that writes opaque payload numerics using little-endian bytes."
        )


def from_wire(
    data: bytes | bytearray | memoryview,
    *,
    preserve_unknown: bool = False,
    registry: ExtensionRegistry | None = None,
) -> ir.Program:
    """Decode a VIR0 blob exactly as vyre 0.7.2's ``Program::from_wire`` does.

    Args:
        data: the blob.
        preserve_unknown: decode unregistered Opaque kinds to OpaqueExpr/OpaqueNode instead of
            raising UnknownExtensionError.
        registry: extension registry (default: :data:`vyre.extensions.DEFAULT_REGISTRY`).

    Returns:
        The program; ``program.wire_version`` records the header version.

    Raises:
        VersionMismatchError: unsupported header version.
        UnknownExtensionError: an unregistered Opaque kind (without ``preserve_unknown``).
        WireValidationError: any other malformed input.
    """
    if len(data) > MAX_PROGRAM_BYTES:
        raise _framing_cap_error(len(data))
    blob = bytes(data)
    version = check_header(blob)
    body = Reader(blob, HEADER_LEN)
    decoder = IrDecoder(registry or DEFAULT_REGISTRY, preserve_unknown)
    meta, buffers, entry = _read_nodes(body, version, decoder)
    read_memory_regions(body, buffers)
    read_output_set(body, buffers)
    if not body.at_end():
        raise WireValidationError(
            "TruncatedPayload: trailing bytes after OutputSet. Fix: provide exactly one "
            "canonical VYRE Program blob."
        )
    entry_op_id, workgroup, non_composable = meta
    return ir.Program(
        tuple(b.finish() for b in buffers), entry, workgroup, entry_op_id, non_composable,
        version,
    )


def _read_record(r: Reader, index: int) -> tuple[str, Reader]:
    op_id = r.leb_string()
    payload = r.sub_reader(r.leb_len(MAX_OPAQUE_PAYLOAD_LEN, "node payload length"))
    operand_count = r.leb_len(MAX_NODES, "operand count")
    for _ in range(operand_count):
        operand = r.leb_u32()
        if operand >= index:
            raise WireValidationError(
                f"TruncatedPayload: operand id {operand} is not a prior node for node {index}. "
                "Fix: topologically order operands and reject forward/self references."
            )
    if operand_count:
        raise WireValidationError(
            f"InvalidDiscriminant: node {index} carries operand ids but legacy payload nodes are "
            "self-contained. Fix: reserialize with this Vyre version."
        )
    return op_id, payload


def _read_nodes(r: Reader, version: int, decoder: IrDecoder):
    count = r.leb_len(MAX_NODES, "node count")
    if count == 0:
        raise WireValidationError(
            "TruncatedPayload: missing metadata node. Fix: serialize Program with "
            "Program::to_wire()."
        )
    payload = _read_meta_record(r)
    meta, buffers = _read_metadata(payload, version)
    entry = []
    for index in range(1, count):
        entry.append(_read_entry_node(r, index, decoder))
    return meta, buffers, tuple(entry)


def _read_meta_record(r: Reader) -> Reader:
    # The op id is checked before the operand list, as vyre reads the whole record first.
    op_id = r.leb_string()
    payload = r.sub_reader(r.leb_len(MAX_OPAQUE_PAYLOAD_LEN, "node payload length"))
    operand_count = r.leb_len(MAX_NODES, "operand count")
    for _ in range(operand_count):
        operand = r.leb_u32()
        raise WireValidationError(
            f"TruncatedPayload: operand id {operand} is not a prior node for node 0. Fix: "
            "topologically order operands and reject forward/self references."
        )
    if op_id != METADATA_OP_ID:
        raise WireValidationError(
            f"UnknownOp: op_id `{op_id}`. Fix: the first VYRE node must be `{METADATA_OP_ID}` "
            "metadata from Program::to_wire()."
        )
    return payload


def _read_entry_node(r: Reader, index: int, decoder: IrDecoder) -> ir.Node:
    op_id, payload = _read_record(r, index)
    node = decoder.node(payload)
    if not payload.at_end():
        raise WireValidationError(
            f"TruncatedPayload: node {index} payload has trailing bytes. Fix: reject this "
            "non-canonical Program blob."
        )
    actual = node.op_id
    if actual != op_id:
        raise WireValidationError(
            f"InvalidDiscriminant: node {index} op_id `{op_id}` does not match payload "
            f"`{actual}`. Fix: reject tampered wire bytes."
        )
    return node


def _read_metadata(r: Reader, version: int):
    if r.take(len(METADATA_MARKER)) != METADATA_MARKER:
        raise WireValidationError(
            "InvalidDiscriminant: metadata payload marker is invalid. Fix: serialize Program "
            "with Program::to_wire()."
        )
    tag = r.u8()
    if tag > 1:
        raise WireValidationError(
            f"InvalidDiscriminant: field entry_op_id tag has value {tag}. Fix: reserialize with "
            "Program::to_wire()."
        )
    entry_op_id = r.string() if tag else None
    workgroup = (r.u32(), r.u32(), r.u32())
    for axis, size in enumerate(workgroup):
        if size == 0:
            raise WireValidationError(
                f"InvalidDiscriminant: workgroup_size[{axis}] is 0. Fix: reject tampered Program "
                "bytes or reserialize with positive workgroup dimensions."
            )
    non_composable = strict_bool(r.u8(), "non_composable_with_self")
    count = r.leb_len(MAX_BUFFERS, "metadata buffer count")
    buffers: list[DecodedBuffer] = [read_buffer_record(r, version) for _ in range(count)]
    if not r.at_end():
        raise WireValidationError(
            "TruncatedPayload: metadata payload has trailing bytes. Fix: reject non-canonical "
            "Program bytes."
        )
    return (entry_op_id, workgroup, non_composable), buffers


# -- buffers: metadata records, memory regions, output set -------------------------------------


_KINDS = {int(k): k for k in ir.MemoryKind}
_ACCESSES = {int(a): a for a in ir.BufferAccess}
_LOCALITIES = {int(c): c for c in ir.CacheLocality}
_LINEAR = {int(t): t for t in ir.LinearType}


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
    if full > U64_MAX:
        raise _invalid(
            f"output range full byte size overflows for buffer `{buf.name}`",
            "split the buffer or reject tampered Program bytes.",
        )
    end = buf.output_byte_range[1]
    if end > full:
        raise _invalid(f"output range end {end} exceeds buffer `{buf.name}` byte size {full}")


# -- nodes, expressions and expression-context DataTypes ---------------------------------------


T = TypeVar("T")
# Payload-free IR values are immutable, so hostile blobs full of them share one object each.
_RETURN = ir.Return()
_LANE_ID = ir.SubgroupLocalId()
_LANE_COUNT = ir.SubgroupSize()

_BIN_OPS = {int(op): op for op in ir.BinOp}
_UN_OPS = {int(op): op for op in ir.UnOp}
_ATOMIC_OPS = {int(op): op for op in ir.AtomicOp}
_ORDERINGS = {int(o): o for o in ir.MemoryOrdering}
_COLLECTIVES = {int(o): o for o in ir.CollectiveOp}
_SUBGROUP_OPS = {int(o): o for o in ir.SubgroupReduceOp}
_QUANT_SCALES = {int(k): k for k in ir.QuantScaleKind}
_ZERO_POINTS = {int(k): k for k in ir.ZeroPointKind}


def reject_reserved_extension_id(raw: int, surface: str) -> int:
    """Require bit 31 on an opaque op/DataType id (ids below it belong to core IR)."""
    if not raw & 0x80000000:
        raise WireValidationError(
            f"InvalidDiscriminant: {surface} opaque id 0x{raw:08x} collides with core IR. Fix: "
            "dialect extensions must use ids in 0x8000_0000..=0xffff_ffff."
        )
    return raw


def memory_ordering(tag: int) -> ir.MemoryOrdering:
    """Decode a MemoryOrdering byte (0..=5)."""
    found = _ORDERINGS.get(tag)
    if found is None:
        raise WireValidationError(
            f"InvalidDiscriminant: memory ordering tag {tag} is unknown. Fix: reserialize with "
            "a compatible VYRE wire schema."
        )
    return found


def _op(tag: int, table: Mapping[int, T], kind: str) -> T:
    found = table.get(tag)
    if found is None:
        raise WireValidationError(
            f"Fix: unknown {kind} op tag {tag}; use a compatible IR serializer."
        )
    return found


def _small_enum(tag: int, table: Mapping[int, T], name: str) -> T:
    found = table.get(tag)
    if found is None:
        raise WireValidationError(
            f"Fix: unknown {name} tag {tag}; use a Program serializer compatible with this vyre "
            "version."
        )
    return found


class IrDecoder:
    """Decodes nodes/exprs/DataTypes, resolving Opaque kinds through ``registry``.

    Args:
        registry: extension decoders for Opaque expressions and nodes.
        preserve_unknown: keep unregistered kinds as OpaqueExpr/OpaqueNode instead of failing.
    """

    def __init__(self, registry: ExtensionRegistry, preserve_unknown: bool) -> None:
        self.registry = registry
        self.preserve_unknown = preserve_unknown
        self._nodes: dict[int, Callable[[Reader], ir.Node]] = {
            0: self._let, 1: self._assign, 2: self._store, 3: self._if, 4: self._loop,
            5: lambda r: _RETURN, 6: lambda r: ir.Block(self.nodes(r)),
            7: lambda r: ir.Barrier(memory_ordering(r.u8())),
            8: lambda r: ir.IndirectDispatch(r.string(), r.u64()),
            9: lambda r: ir.AsyncLoad(*self._async_fields(r)),
            10: lambda r: ir.AsyncWait(r.string()), 11: self._region,
            12: lambda r: ir.AsyncStore(*self._async_fields(r)),
            13: lambda r: ir.Trap(self.expr(r), r.string()),
            14: lambda r: ir.Resume(r.string()), 15: self._all_reduce,
            16: lambda r: ir.AllGather(r.string(), r.string(), r.u32()),
            17: self._reduce_scatter, 18: lambda r: ir.Broadcast(r.string(), r.u32(), r.u32()),
            OPAQUE_TAG: self._opaque_node,
        }
        self._exprs: dict[int, Callable[[Reader], ir.Expr]] = {
            0: lambda r: ir.LitU32(r.u32()), 1: lambda r: ir.LitI32(r.i32()),
            2: lambda r: ir.LitBool(r.u8() != 0), 3: lambda r: ir.Var(r.string()),
            4: lambda r: ir.Load(r.string(), self.expr(r)),
            5: lambda r: ir.BufLen(r.string()), 6: lambda r: ir.InvocationId(r.u8()),
            7: lambda r: ir.WorkgroupId(r.u8()), 8: lambda r: ir.LocalId(r.u8()),
            9: self._binary, 10: self._unary, 11: self._call,
            12: lambda r: ir.Select(self.expr(r), self.expr(r), self.expr(r)),
            13: lambda r: ir.Cast(self.data_type(r), self.expr(r)), 14: self._atomic,
            15: lambda r: ir.LitF32(r.u32()),
            16: lambda r: ir.Fma(self.expr(r), self.expr(r), self.expr(r)),
            17: self._subgroup_reduce,
            18: lambda r: ir.SubgroupShuffle(self.expr(r), self.expr(r)),
            19: lambda r: ir.SubgroupBallot(self.expr(r)),
            20: lambda r: _LANE_ID, 21: lambda r: _LANE_COUNT,
            22: lambda r: ir.BufferRef(r.string()), OPAQUE_TAG: self._opaque_expr,
        }

    # -- statements -------------------------------------------------------------------------

    def nodes(self, r: Reader) -> tuple[ir.Node, ...]:
        """A ``list<Node>``: u32 count (at most MAX_NODES), then the nodes."""
        count = r.bounded_len(MAX_NODES, "node count")
        return tuple([self.node(r) for _ in range(count)])

    def node(self, r: Reader) -> ir.Node:
        """One statement (counts toward the shared depth limit)."""
        r.enter("node")
        tag = r.u8()
        handler = self._nodes.get(tag)
        if handler is None:
            raise WireValidationError(
                f"Fix: unknown IR node tag {tag}; use a Program serializer compatible with this "
                "vyre version."
            )
        node = handler(r)
        r.leave()
        return node

    def _let(self, r: Reader) -> ir.Node:
        return ir.Let(r.string(), self.expr(r))

    def _assign(self, r: Reader) -> ir.Node:
        return ir.Assign(r.string(), self.expr(r))

    def _store(self, r: Reader) -> ir.Node:
        return ir.Store(r.string(), self.expr(r), self.expr(r))

    def _if(self, r: Reader) -> ir.Node:
        return ir.If(self.expr(r), self.nodes(r), self.nodes(r))

    def _loop(self, r: Reader) -> ir.Node:
        return ir.Loop(r.string(), self.expr(r), self.expr(r), self.nodes(r))

    def _async_fields(self, r: Reader) -> tuple[str, str, ir.Expr, ir.Expr, str]:
        return r.string(), r.string(), self.expr(r), self.expr(r), r.string()

    def _region(self, r: Reader) -> ir.Node:
        generator = r.string()
        presence = r.u8()
        if presence > 1:
            raise WireValidationError(
                f"Fix: Region source_region presence byte must be 0 or 1, got {presence}"
            )
        source = r.string() if presence else None
        return ir.Region(generator, source, self.nodes(r))

    def _all_reduce(self, r: Reader) -> ir.Node:
        buffer = r.string()
        op = _small_enum(r.u8(), _COLLECTIVES, "CollectiveOp")
        return ir.AllReduce(buffer, op, r.u32())

    def _reduce_scatter(self, r: Reader) -> ir.Node:
        source, target = r.string(), r.string()
        op = _small_enum(r.u8(), _COLLECTIVES, "CollectiveOp")
        return ir.ReduceScatter(source, target, op, r.u32())

    def _opaque_payload(self, r: Reader, label: str) -> tuple[str, bytes]:
        kind = r.string()
        return kind, r.take(r.bounded_len(MAX_OPAQUE_PAYLOAD_LEN, label))

    def _opaque_node(self, r: Reader) -> ir.Node:
        kind, payload = self._opaque_payload(r, "opaque node payload")
        node = decode_opaque(self.registry, "node", kind, payload, self.preserve_unknown)
        return node  # type: ignore[return-value]

    # -- expressions ------------------------------------------------------------------------

    def expr(self, r: Reader) -> ir.Expr:
        """One expression (counts toward the shared depth limit)."""
        if r.depth >= MAX_DECODE_DEPTH:
            r.enter("expr")
        pos = r.pos
        if pos >= r.end:
            r.u8()
        tag = r.data[pos]
        r.pos = pos + 1
        handler = self._exprs.get(tag)
        if handler is None:
            raise WireValidationError(
                f"Fix: unknown IR expression tag {tag}; use a Program serializer compatible "
                "with this vyre version."
            )
        r.depth += 1
        expr = handler(r)
        r.depth -= 1
        return expr

    def _op_or_opaque(self, r: Reader, table: Mapping[int, Any], kind: str, surface: str) -> Any:
        tag = r.u8()
        if tag == OPAQUE_TAG:
            return ir.OpaqueOp(reject_reserved_extension_id(r.u32(), surface))
        return _op(tag, table, kind)

    def _binary(self, r: Reader) -> ir.Expr:
        op = self._op_or_opaque(r, _BIN_OPS, "binary", "BinOp")
        return ir.Binary(op, self.expr(r), self.expr(r))

    def _unary(self, r: Reader) -> ir.Expr:
        op = self._op_or_opaque(r, _UN_OPS, "unary", "UnOp")
        return ir.Unary(op, self.expr(r))

    def _call(self, r: Reader) -> ir.Expr:
        op_id = r.string()
        count = r.bounded_len(MAX_ARGS, "call argument count")
        return ir.Call(op_id, tuple([self.expr(r) for _ in range(count)]))

    def _atomic(self, r: Reader) -> ir.Expr:
        op = self._op_or_opaque(r, _ATOMIC_OPS, "atomic", "AtomicOp")
        ordering = memory_ordering(r.u8())
        buffer = r.string()
        index = self.expr(r)
        expected = self.expr(r) if r.u8() != 0 else None
        return ir.Atomic(op, buffer, index, expected, self.expr(r), ordering)

    def _subgroup_reduce(self, r: Reader) -> ir.Expr:
        op = _small_enum(r.u8(), _SUBGROUP_OPS, "SubgroupReduceOp")
        return ir.SubgroupReduce(op, self.expr(r))

    def _opaque_expr(self, r: Reader) -> ir.Expr:
        kind, payload = self._opaque_payload(r, "opaque expression payload")
        expr = decode_opaque(self.registry, "expr", kind, payload, self.preserve_unknown)
        return expr  # type: ignore[return-value]

    # -- data types -------------------------------------------------------------------------

    def data_type(self, r: Reader) -> ir.DataType:
        """An expression-context DataType (counts toward the shared depth limit)."""
        r.enter("data_type")
        result = self._data_type_inner(r)
        r.leave()
        return result

    def _data_type_inner(self, r: Reader) -> ir.DataType:
        tag = r.u8()
        scalar = SCALAR_TAGS.get(tag)
        if scalar is not None:
            return scalar
        if tag == 0x08:
            return ir.Array(r.u32())
        if tag == 0x13:
            return ir.Handle(r.u32())
        if tag == 0x14:
            return ir.Vec(self.data_type(r), r.u8())
        if tag == 0x15:
            element = self.data_type(r)
            rank = r.bounded_len(MAX_TENSOR_RANK, "tensor rank")
            return ir.TensorShaped(element, tuple([r.u32() for _ in range(rank)]))
        if tag in (0x16, 0x17):
            cls = ir.SparseCsr if tag == 0x16 else ir.SparseCoo
            return cls(self.data_type(r))
        if tag == 0x18:
            return ir.SparseBsr(self.data_type(r), r.u32(), r.u32())
        if tag == 0x1E:
            count = r.bounded_len(MAX_MESH_AXES, "device-mesh axes count")
            return ir.DeviceMesh(tuple([r.u32() for _ in range(count)]))
        if tag == 0x1F:
            return self._quantized(r)
        if tag == OPAQUE_TAG:
            return ir.OpaqueType(reject_reserved_extension_id(r.u32(), "DataType"))
        raise WireValidationError(
            f"Fix: unknown data type tag {tag}; use a compatible IR serializer."
        )

    def _quantized(self, r: Reader) -> ir.DataType:
        storage = self.data_type(r)
        if storage not in ir.QUANTIZED_STORAGE:
            raise WireValidationError(
                f"Fix: DataType::Quantized storage `{data_type_name(storage)}` is invalid; use "
                "I4/I8/I16/U8/U16/F8E4M3/F8E5M2/FP4/NF4 storage."
            )
        scale = quant_scale(r.u8(), r.u32(), dense=False)
        zero_point = quant_zero_point(r.u8(), r.u32(), dense=False)
        return ir.Quantized(storage, scale, zero_point)


def _quant_error(dense: bool, dense_text: str, expr_text: str) -> WireValidationError:
    if dense:
        return WireValidationError(
            f"InvalidDiscriminant: {dense_text}. Fix: reject non-canonical Program bytes."
        )
    return WireValidationError(f"Fix: {expr_text}.")


def quant_scale(tag: int, param: int, *, dense: bool) -> ir.QuantScale:
    """Decode a quantization scale (tag, param) pair with vyre's checks."""
    kind = _QUANT_SCALES.get(tag)
    if kind is None:
        if dense:
            raise WireValidationError(
                f"InvalidDiscriminant: unknown quantization scale tag {tag}. Fix: use a "
                "compatible IR serializer."
            )
        raise WireValidationError(
            f"Fix: unknown quantization scale tag {tag}; use a compatible IR serializer."
        )
    if kind == ir.QuantScaleKind.PER_TENSOR and param != 0:
        raise _quant_error(
            dense, f"PerTensor quantization scale parameter must be 0, got {param}",
            f"quantization PerTensor scale payload parameter must be 0, got {param}",
        )
    if kind == ir.QuantScaleKind.PER_GROUP and param == 0:
        raise _quant_error(
            dense, "PerGroup quantization scale requires group_size > 0",
            "quantization PerGroup scale requires group_size > 0",
        )
    return ir.QuantScale(kind, param)


def quant_zero_point(tag: int, param: int, *, dense: bool) -> ir.ZeroPoint:
    """Decode a quantization zero-point (tag, param) pair with vyre's checks."""
    kind = _ZERO_POINTS.get(tag)
    if kind is None:
        if dense:
            raise WireValidationError(
                f"InvalidDiscriminant: unknown quantization zero-point tag {tag}. Fix: use a "
                "compatible IR serializer."
            )
        raise WireValidationError(
            f"Fix: unknown quantization zero-point tag {tag}; use a compatible IR serializer."
        )
    if kind in (ir.ZeroPointKind.ABSENT, ir.ZeroPointKind.PER_TENSOR) and param != 0:
        which = "absent" if kind == ir.ZeroPointKind.ABSENT else "PerTensor"
        raise _quant_error(
            dense, f"{which} quantization zero-point parameter must be 0, got {param}",
            f"quantization {which} zero-point payload parameter must be 0, got {param}",
        )
    if kind == ir.ZeroPointKind.PER_GROUP and param == 0:
        raise _quant_error(
            dense, "PerGroup quantization zero-point requires group_size > 0",
            "quantization PerGroup zero-point requires group_size > 0",
        )
    return ir.ZeroPoint(kind, param)


_DISPLAY_NAMES = {
    ir.Scalar.VEC2_U32: "vec2<u32>", ir.Scalar.VEC4_U32: "vec4<u32>",
    ir.Scalar.F8E4M3: "f8e4m3", ir.Scalar.F8E5M2: "f8e5m2",
}


def data_type_name(dtype: ir.DataType) -> str:
    """A short lower-case spelling of ``dtype`` for diagnostics (``u32``, ``f32``, ...)."""
    if isinstance(dtype, ir.Scalar):
        return _DISPLAY_NAMES.get(dtype, dtype.name.lower())
    return type(dtype).__name__
