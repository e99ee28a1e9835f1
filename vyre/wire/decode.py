"""``from_wire``: VIR0 bytes -> :class:`~vyre.ir.Program`, treating the input as hostile.

Check order is vyre 0.7.2's: size cap, magic, version, header length, flags, digest, body.
"""

from __future__ import annotations

import blake3

from vyre import ir
from vyre.errors import VersionMismatchError, WireValidationError
from vyre.extensions import DEFAULT_REGISTRY, ExtensionRegistry
from vyre.wire import (
    FLAG_COMPRESSED,
    FLAG_OPAQUE_ENDIAN_FIXED,
    FLAG_SEALED,
    HEADER_LEN,
    MAGIC,
    MAX_BUFFERS,
    MAX_NODES,
    MAX_OPAQUE_PAYLOAD_LEN,
    MAX_PROGRAM_BYTES,
    METADATA_MARKER,
    METADATA_OP_ID,
    WIRE_FORMAT_VERSION,
    version_is_supported,
)
from vyre.wire.decode_buffers import (
    DecodedBuffer,
    read_buffer_record,
    read_memory_regions,
    read_output_set,
    strict_bool,
)
from vyre.wire.decode_ir import IrDecoder
from vyre.wire.reader import Reader

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

