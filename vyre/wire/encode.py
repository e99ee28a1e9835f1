"""``to_wire``: :class:`~vyre.ir.Program` -> VIR0 bytes, byte-identical with vyre 0.7.2."""

from __future__ import annotations

import struct

import blake3

from vyre import ir
from vyre.errors import EncodeError
from vyre.extensions import DEFAULT_REGISTRY, ExtensionRegistry
from vyre.wire import (
    FLAG_OPAQUE_ENDIAN_FIXED,
    MAGIC,
    METADATA_MARKER,
    METADATA_OP_ID,
    WIRE_FORMAT_VERSION,
    version_is_supported,
)
from vyre.wire.encode_buffers import (
    check_encodable,
    put_buffer_record,
    put_memory_regions,
    put_output_set,
)
from vyre.wire.encode_ir import put_tree
from vyre.wire.writer import put_leb, put_leb_string, put_string, put_u32


def to_wire(
    program: ir.Program,
    *,
    version: int | None = None,
    registry: ExtensionRegistry | None = None,
) -> bytes:
    """Encode ``program`` exactly as vyre 0.7.2's ``Program::to_wire`` does.

    Args:
        program: the program.
        version: header version to write; default 6. 4 or 5 writes the older buffer record
            (for re-encoding a decoded old blob byte for byte) and refuses rev-6 fields.
        registry: extension encoders for typed extension nodes/exprs.

    Returns:
        The blob: 40-byte header (magic, version, flags=4, blake3(body)) then the body.

    Raises:
        EncodeError: the program is one the reference encoder refuses, or is not valid IR.
    """
    version = WIRE_FORMAT_VERSION if version is None else version
    if not version_is_supported(version):
        raise EncodeError(f"Fix: wire version {version} is not writable; use 4, 5 or 6.")
    if not isinstance(program, ir.Program):
        raise EncodeError(f"Fix: to_wire needs a vyre Program, got {type(program).__name__}.")
    check_encodable(program)
    try:
        body = encode_body(program, version, registry or DEFAULT_REGISTRY)
    except RecursionError:
        raise EncodeError(
            "Fix: a DataType or shape predicate is nested too deeply to encode; flatten it."
        ) from None
    header = MAGIC + struct.pack("<HH", version, FLAG_OPAQUE_ENDIAN_FIXED)
    return header + blake3.blake3(body).digest() + body


def encode_body(program: ir.Program, version: int, registry: ExtensionRegistry) -> bytes:
    """The body: node records, memory regions, output set."""
    out = bytearray()
    put_leb(out, len(program.entry) + 1)
    _put_record(out, METADATA_OP_ID, metadata_payload(program, version))
    payload = bytearray()
    for node in program.entry:
        payload.clear()
        put_tree(payload, node, registry)
        _put_record(out, node_op_id(node), payload)
    put_memory_regions(out, program.buffers)
    put_output_set(out, program.buffers)
    return bytes(out)


def node_op_id(node: object) -> str:
    """The record op id of a top-level node (the extension kind for Opaque nodes)."""
    if isinstance(node, ir.Node):
        return node.op_id
    raise EncodeError(f"Fix: entry item {node!r} is not a vyre Node.")


def _put_record(out: bytearray, op_id: str, payload: bytes | bytearray) -> None:
    put_leb_string(out, op_id)
    put_leb(out, len(payload))
    out += payload
    out.append(0)


def metadata_payload(program: ir.Program, version: int) -> bytes:
    """The metadata record payload."""
    out = bytearray(METADATA_MARKER)
    if program.entry_op_id is None:
        out.append(0)
    else:
        out.append(1)
        put_string(out, program.entry_op_id, "entry_op_id")
    if len(program.workgroup_size) != 3:
        raise EncodeError("Fix: workgroup_size must have exactly three axes.")
    for size in program.workgroup_size:
        put_u32(out, size, "workgroup size")
    out.append(1 if program.non_composable_with_self else 0)
    put_leb(out, len(program.buffers))
    for buf in program.buffers:
        put_buffer_record(out, buf, version)
    return bytes(out)
