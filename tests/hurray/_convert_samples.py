"""Source checkpoints written by the tools themselves (gguf-py's GGUFWriter and quantizers),
plus a small safetensors writer, for the converter's tests."""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tests._support import require_peer, stable_rng

# The GGML types the converter maps, and shapes (outermost first): 1-D, 2-D, 3-D, a row count
# that is a multiple of nothing, rows of several blocks, more blocks than one repacking step.
MAPPED = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1")
# 32-element block types converted to forms that export does not write back to GGUF (yet).
IMPORTED = ("IQ4_NL", "MXFP4")
SHAPES = ((96,), (4, 64), (3, 5, 32), (13, 160), (2, 17, 32 * 1217))  # the last: > 32768 blocks
# The 256-element super-block types, and their shapes (the last: > 4096 super-blocks, more
# than one repacking step).
K_MAPPED = ("Q6_K", "Q3_K", "Q2_K", "Q4_K", "Q5_K", "IQ4_XS", "TQ1_0", "TQ2_0")
K_SHAPES = ((256,), (4, 512), (3, 2, 256), (13, 768), (2, 3, 256 * 700))
# Types gguf-py 0.19 can dequantize but not quantize: random blocks with finite nonzero f16
# ``d`` (and ``dmin``); for the signed types no sub-block scale is zero (llama.cpp's zero
# sub-block scales are tested one block at a time).
_RANDOM = {"IQ4_NL": 0, "Q6_K": 208, "Q3_K": 108, "Q2_K": 80, "Q4_K": 0, "Q5_K": 0,
           "IQ4_XS": 0}
_SIGNED = ("IQ4_NL", "Q6_K", "Q3_K", "IQ4_XS")


def source_values(name: str, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    """float32 values with the first block all zero (gguf-py writes scale 0 for it)."""
    x = stable_rng("convert", name, kind, shape).normal(size=shape).astype(np.float32)
    x.reshape(-1)[:32] = 0.0
    return x


def write_gguf(path: Path, specs: Sequence[tuple[str, str, tuple[int, ...]]],
               metadata: Mapping[str, Any] | None = None) -> dict[str, tuple[np.ndarray, Any]]:
    """Write a GGUF file of ``(name, GGML type, shape)`` tensors with gguf-py.

    Returns:
        name -> (the raw array gguf-py stored, its GGMLQuantizationType).
    """
    gguf = require_peer("gguf")
    from gguf.quants import quantize

    writer = gguf.GGUFWriter(str(path), "llama")
    for key, value in (metadata or {}).items():
        writer.add_key_value(key, value[0], value[1])
    out = {}
    for name, kind, shape in specs:
        qtype = getattr(gguf.GGMLQuantizationType, kind)
        if kind in ("I8", "I16", "I32"):
            raw = stable_rng("convert", name, kind).integers(-100, 100, shape).astype(
                {"I8": np.int8, "I16": np.int16, "I32": np.int32}[kind])
        elif kind in _RANDOM:
            raw = random_blocks(name, kind, shape)
        else:
            raw = quantize(source_values(name, kind, shape), qtype)
        writer.add_tensor(name, raw, raw_dtype=qtype)
        out[name] = (raw, qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def random_blocks(name: str, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    """Valid ``kind`` blocks of random bytes for a tensor of ``shape`` (see ``_RANDOM``)."""
    gguf = require_peer("gguf")
    from gguf.quants import dequantize

    qtype = getattr(gguf.GGMLQuantizationType, kind)
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    rng = stable_rng("convert", name, kind, shape)
    count = int(np.prod(shape)) // block
    raw = rng.integers(0, 256, (count, size), dtype=np.uint8)
    heads = (raw[:, _RANDOM[kind]:_RANDOM[kind] + (2 if kind in _SIGNED else 4)]
             .copy().view("<f2"))
    heads[...] = rng.normal(0, 0.05, heads.shape).astype(np.float16)
    if kind in _SIGNED:
        heads[heads == 0] = np.float16(0.25)
    raw[:, _RANDOM[kind]:_RANDOM[kind] + heads.shape[1] * 2] = heads.view(np.uint8)
    while kind in _SIGNED:  # re-roll the scale fields of blocks with a zero sub-block scale
        zero = (dequantize(raw, qtype).reshape(count, -1, 16) == 0).all(axis=2).any(axis=1)
        if not zero.any():
            break
        fields = slice(2, size) if kind.startswith("IQ4") else slice(0, _RANDOM[kind])
        raw[zero, fields] = rng.integers(0, 256, (int(zero.sum()), fields.stop - fields.start),
                                         dtype=np.uint8)
    return raw.reshape(*shape[:-1], -1)


ST_NAMES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "int8": "I8",
            "uint8": "U8", "int16": "I16", "int32": "I32", "int64": "I64", "bool": "BOOL",
            "float64": "F64"}


def write_safetensors(path: Path, tensors: Mapping[str, np.ndarray],
                      metadata: Mapping[str, str] | None = None,
                      header: dict[str, Any] | None = None) -> None:
    """Write a safetensors file (the format's own layout: u64 length, JSON, data); ``header``
    replaces the generated JSON header (for hostile cases)."""
    entries: dict[str, Any] = {}
    blobs, offset = [], 0
    for name, value in tensors.items():
        data = np.ascontiguousarray(value).tobytes()
        entries[name] = {"dtype": ST_NAMES[value.dtype.name], "shape": list(value.shape),
                         "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        entries["__metadata__"] = dict(metadata)
    text = json.dumps(header if header is not None else entries).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))
