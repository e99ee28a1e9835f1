"""Hurray tensor descriptor codec (Hurray spec, Metadata): decode, validate and encode.

Strict by default; every malformed input raises HurrayFormatError naming field and offset.
"""

from __future__ import annotations

from .buffers import (
    DEVICE_ALIGNMENT,
    MIN_DATA_ALIGNMENT,
    BufferHandle,
    DeviceTag,
    MemoryClass,
    SyncMode,
    check_colocation,
    is_valid_pair,
)
from .codec import (
    MAGIC,
    decode_descriptor,
    decode_descriptor_prefix,
    encode_descriptor,
    peek_descriptor_length,
)
from .layouts import (
    COO,
    CSC,
    CSF,
    CSR,
    MAX_TILED_DEPTH,
    BlockPaged,
    ColMajor,
    Composite,
    Extension,
    Hilbert,
    Layout,
    Morton,
    RowMajor,
    Strided,
    Tiled,
    UnknownLayout,
)
from .model import (
    DYNAMIC,
    HAS_COMPOSITE_MEMBER,
    HAS_EXTENSION_TYPE,
    HAS_QUANTIZATION,
    HAS_SHARD,
    HAS_STATISTICS,
    TensorDescriptor,
)
from .quant import (
    MXFP,
    NF4,
    PerBlockAffine,
    PerChannelAffine,
    PerTensorAffine,
    Quantization,
    RawQuantization,
)
from .sections import CompositeMember, ExtensionType, Shard, Statistics
from .sizes import BufferSpec
from .validate import MAX_RANK, validate_descriptor

__all__ = [
    "COO", "CSC", "CSF", "CSR", "DEVICE_ALIGNMENT", "DYNAMIC", "HAS_COMPOSITE_MEMBER",
    "HAS_EXTENSION_TYPE", "HAS_QUANTIZATION", "HAS_SHARD", "HAS_STATISTICS", "MAGIC",
    "MAX_RANK", "MAX_TILED_DEPTH", "MIN_DATA_ALIGNMENT", "MXFP", "NF4", "BlockPaged",
    "BufferHandle", "BufferSpec", "ColMajor", "Composite", "CompositeMember", "DeviceTag",
    "Extension", "ExtensionType", "Hilbert", "Layout", "MemoryClass", "Morton",
    "PerBlockAffine", "PerChannelAffine", "PerTensorAffine", "Quantization", "RawQuantization",
    "RowMajor", "Shard", "Statistics", "Strided", "SyncMode", "TensorDescriptor", "Tiled",
    "UnknownLayout", "check_colocation", "decode_descriptor", "decode_descriptor_prefix",
    "encode_descriptor", "is_valid_pair", "peek_descriptor_length", "validate_descriptor",
]
