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
SHAPES = ((96,), (4, 64), (3, 5, 32), (13, 160), (2, 17, 32 * 1217))  # the last: > 32768 blocks


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
        if kind.startswith("I"):
            raw = stable_rng("convert", name, kind).integers(-100, 100, shape).astype(
                {"I8": np.int8, "I16": np.int16, "I32": np.int32}[kind])
        else:
            raw = quantize(source_values(name, kind, shape), qtype)
        writer.add_tensor(name, raw, raw_dtype=qtype)
        out[name] = (raw, qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


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
