"""The VIR0 wire format: header constants, limits and the append-only tag tables.

These mirror vyre-foundation 0.7.2. The codec is :mod:`vyre.wire.decode` (``from_wire``),
:mod:`vyre.wire.encode` (``to_wire``) and :mod:`vyre.wire.fingerprint` (canonical form,
``fingerprint``, ``structural_eq``); ``vyre.from_wire``/``vyre.to_wire`` are the public names.
Operator, ordering and DataType enums live in the IR (their values are the wire tags) and are
re-exported here.
"""

from __future__ import annotations

import enum

from vyre.ir_types import (
    AtomicOp,
    BinOp,
    BufferAccess,
    CacheLocality,
    CollectiveOp,
    LinearType,
    MemoryKind,
    MemoryOrdering,
    Scalar,
    SubgroupReduceOp,
    UnOp,
)

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


# -- tag tables: append-only; ``0x80`` is the extension escape everywhere ---------------------


OPAQUE_TAG = 0x80


class NodeTag(enum.IntEnum):
    """Statement tags (vyre 0.7.2 wire format, node tag table)."""

    LET = 0
    ASSIGN = 1
    STORE = 2
    IF = 3
    LOOP = 4
    RETURN = 5
    BLOCK = 6
    BARRIER = 7
    INDIRECT_DISPATCH = 8
    ASYNC_LOAD = 9
    ASYNC_WAIT = 10
    REGION = 11
    ASYNC_STORE = 12
    TRAP = 13
    RESUME = 14
    ALL_REDUCE = 15
    ALL_GATHER = 16
    REDUCE_SCATTER = 17
    BROADCAST = 18
    OPAQUE = 0x80


class ExprTag(enum.IntEnum):
    """Expression tags (vyre 0.7.2 wire format, expressions)."""

    LIT_U32 = 0
    LIT_I32 = 1
    LIT_BOOL = 2
    VAR = 3
    LOAD = 4
    BUF_LEN = 5
    INVOCATION_ID = 6
    WORKGROUP_ID = 7
    LOCAL_ID = 8
    BIN_OP = 9
    UN_OP = 10
    CALL = 11
    SELECT = 12
    CAST = 13
    ATOMIC = 14
    LIT_F32 = 15
    FMA = 16
    SUBGROUP_REDUCE = 17
    SUBGROUP_SHUFFLE = 18
    SUBGROUP_BALLOT = 19
    SUBGROUP_LOCAL_ID = 20
    SUBGROUP_SIZE = 21
    BUFFER_REF = 22
    OPAQUE = 0x80


class DataTypeTag(enum.IntEnum):
    """DataType tags of the vyre 0.7.2 wire format; scalars share values with :class:`Scalar`."""

    U32 = 0x01
    I32 = 0x02
    U64 = 0x03
    VEC2_U32 = 0x04
    VEC4_U32 = 0x05
    BOOL = 0x06
    BYTES = 0x07
    ARRAY = 0x08
    F16 = 0x09
    BF16 = 0x0A
    F32 = 0x0B
    F64 = 0x0C
    TENSOR = 0x0D
    U8 = 0x0E
    U16 = 0x0F
    I8 = 0x10
    I16 = 0x11
    I64 = 0x12
    HANDLE = 0x13
    VEC = 0x14
    TENSOR_SHAPED = 0x15
    SPARSE_CSR = 0x16
    SPARSE_COO = 0x17
    SPARSE_BSR = 0x18
    F8E4M3 = 0x19
    F8E5M2 = 0x1A
    I4 = 0x1B
    FP4 = 0x1C
    NF4 = 0x1D
    DEVICE_MESH = 0x1E
    QUANTIZED = 0x1F
    OPAQUE = 0x80


class ShapePredicateTag(enum.IntEnum):
    """Shape-predicate tags; 0 means None at top level."""

    NONE = 0
    AT_LEAST = 1
    AT_MOST = 2
    EXACTLY = 3
    MULTIPLE_OF = 4
    MOD_EQUALS = 5
    AFFINE_RANGE = 6
    AND = 7
    OR = 8
    NOT = 9


class ShapeTag(enum.IntEnum):
    """Memory-region shape tags; only Dense exists."""

    DENSE = 0


SCALAR_TAGS: dict[int, Scalar] = {int(s): s for s in Scalar}


__all__ = [
    "FLAG_COMPRESSED", "FLAG_OPAQUE_ENDIAN_FIXED", "FLAG_SEALED", "HEADER_LEN", "MAGIC",
    "MAX_ARGS", "MAX_BUFFERS", "MAX_DECODE_DEPTH", "MAX_MESH_AXES", "MAX_NODES",
    "MAX_OPAQUE_PAYLOAD_LEN", "MAX_PROGRAM_BYTES", "MAX_REGION_PAYLOAD_LEN",
    "MAX_SHAPE_PREDICATE_DEPTH", "MAX_STRING_LEN", "MAX_TENSOR_RANK", "METADATA_MARKER",
    "METADATA_OP_ID", "MIN_SUPPORTED", "MIN_SUPPORTED_WIRE_FORMAT_VERSION", "OPAQUE_TAG",
    "SCALAR_TAGS", "WIRE_FORMAT_VERSION", "AtomicOp", "BinOp", "BufferAccess", "CacheLocality",
    "CollectiveOp", "DataTypeTag", "ExprTag", "LinearType", "MemoryKind", "MemoryOrdering",
    "NodeTag", "Scalar", "ShapePredicateTag", "ShapeTag", "SubgroupReduceOp", "UnOp",
    "version_is_supported",
]
