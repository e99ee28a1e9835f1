"""The VIR0 wire format: limits and header constants mirroring vyre-foundation 0.7.2.

Encoding lives in :mod:`vyre.wire.encode`, decoding in :mod:`vyre.wire.decode`.
"""

from __future__ import annotations

MAGIC = b"VYRE"
WIRE_FORMAT_VERSION = 6
MIN_SUPPORTED_WIRE_FORMAT_VERSION = 4
MIN_SUPPORTED = MIN_SUPPORTED_WIRE_FORMAT_VERSION
HEADER_LEN = 40
METADATA_OP_ID = "vyre.program.metadata"
METADATA_MARKER = b"VYRE-META"

FLAG_COMPRESSED = 1
FLAG_SEALED = 2
FLAG_OPAQUE_ENDIAN_FIXED = 4

# Whole-blob framing cap, checked before anything is read.
MAX_PROGRAM_BYTES = 64 * 1024 * 1024
# One counter shared by node, expr and DataType decode calls within a record payload;
# bounds decoder recursion on hostile input.
MAX_DECODE_DEPTH = 64
# Top-level record count, every nested node-list count, and operand counts.
MAX_NODES = 1_000_000
# Metadata buffer count, memory-region count, output-set count.
MAX_BUFFERS = 16_384
# Call argument count (decoder only).
MAX_ARGS = 4096
# Every string (wstr both sides, lstr on decode).
MAX_STRING_LEN = 1_048_576
# Opaque Expr/Node payloads (both sides) and node-record payloads (decoder).
MAX_OPAQUE_PAYLOAD_LEN = MAX_ARGS * 1024
MAX_TENSOR_RANK = 4096
MAX_MESH_AXES = 4096
MAX_SHAPE_PREDICATE_DEPTH = 32
# Memory-region shape and hints payloads (decoder only).
MAX_REGION_PAYLOAD_LEN = 64


def version_is_supported(version: int) -> bool:
    """Whether the decoder accepts header ``version`` (4..=6).

    Args:
        version: the u16 header version.

    Returns:
        True for 4, 5 and 6.
    """
    return MIN_SUPPORTED_WIRE_FORMAT_VERSION <= version <= WIRE_FORMAT_VERSION


# The codec entry points are imported last: their modules read the constants above.
from vyre.wire.decode import from_wire  # noqa: E402
from vyre.wire.encode import to_wire  # noqa: E402

__all__ = [
    "from_wire", "to_wire",
    "FLAG_COMPRESSED", "FLAG_OPAQUE_ENDIAN_FIXED", "FLAG_SEALED", "HEADER_LEN", "MAGIC",
    "MAX_ARGS", "MAX_BUFFERS", "MAX_DECODE_DEPTH", "MAX_MESH_AXES", "MAX_NODES",
    "MAX_OPAQUE_PAYLOAD_LEN", "MAX_PROGRAM_BYTES", "MAX_REGION_PAYLOAD_LEN",
    "MAX_SHAPE_PREDICATE_DEPTH", "MAX_STRING_LEN", "MAX_TENSOR_RANK", "METADATA_MARKER",
    "METADATA_OP_ID", "MIN_SUPPORTED", "MIN_SUPPORTED_WIRE_FORMAT_VERSION",
    "WIRE_FORMAT_VERSION", "version_is_supported",
]
