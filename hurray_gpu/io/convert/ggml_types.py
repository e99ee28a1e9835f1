"""GGML tensor types -> Hurray tensors: the type table, one mapping per type (bit-exact with
gguf-py's own dequantization, ``gguf.quants``), and for every other type a refusal that says
why. Direct types keep their bytes; the 32-element block types are in :mod:`ggml_quants`, the
K-quants, IQ4_NL/IQ4_XS and MXFP4 in :mod:`ggml_kquants`, TQ1_0/TQ2_0 in :mod:`ggml_ternary`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from hurray_gpu.io.convert.ggml_kquants import KQUANTS
from hurray_gpu.io.convert.ggml_quants import FIX_REQUANT, QUANTS
from hurray_gpu.io.convert.ggml_ternary import TERNARY
from hurray_gpu.io.convert.source import (
    Converted,
    SourceFile,
    SourceTensor,
    dense_tensor,
    element_count,
    refuse,
)

__all__ = ["DIRECT", "MAPPINGS", "GGMLMapping", "TYPES", "mapping", "type_name"]

# ggml type id -> (name, elements per block, bytes per block), as ggml.c defines them (gguf-py
# 0.19 agrees except for Q8_1, which it lists as 40 bytes; ggml's block_q8_1 is 36).
TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2),
    26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66), 39: ("MXFP4", 32, 17),
}
# Why a known type is refused; every entry that Hurray could carry later says so.
_REFUSED = {
    "Q8_1": "Q8_1 is llama.cpp's intermediate type for activations (it also stores d * sum(q)),"
            " not a weight type; nothing to carry",
    "Q8_K": "Q8_K is llama.cpp's intermediate type for dot products, not a weight type",
}
for _k in ("IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"):
    _REFUSED[_k] = ("an i-quant: values are entries of a lattice codebook (grid tables) with "
                    "sign masks, which no Hurray quantization scheme expresses")



@dataclass(frozen=True)
class GGMLMapping:
    """How one GGML type becomes a Hurray tensor.

    Attributes:
        kind: the GGML type name.
        block: elements per block (1 for the direct types).
        block_bytes: bytes per block.
        convert: ``(src, entry, raw bytes) -> Converted``.
    """

    kind: str
    block: int
    block_bytes: int
    convert: Callable[[SourceFile, SourceTensor, np.ndarray], Converted]

    def source_bytes(self, src: SourceFile, name: str, shape: tuple[int, ...]) -> int:
        """Bytes of a tensor of ``shape`` (ggml blocks run along the innermost dimension)."""
        if self.block > 1 and (not shape or shape[-1] % self.block):
            raise refuse(src, (name, self.kind), f"the innermost dimension of shape "
                         f"{list(shape)} is not a multiple of the block size {self.block}",
                         "the file is damaged: ggml itself refuses such a tensor; export it "
                         "again.")
        return element_count(shape) // self.block * self.block_bytes


def type_name(type_id: int) -> str:
    """The GGML name of ``type_id`` (``"type 77"`` for ids ggml does not define)."""
    return TYPES[type_id][0] if type_id in TYPES else f"type {type_id}"


def mapping(src: SourceFile, name: str, kind: str, type_id: int) -> GGMLMapping:
    """The mapping of ``type_id``, or the refusal that names the tensor, type and reason."""
    found = MAPPINGS.get(kind)
    if found is not None:
        return found
    if type_id not in TYPES:
        raise refuse(src, (name, kind), "this GGML type id is unknown to this converter "
                     "(a newer or private ggml type)", "convert the model with a llama.cpp "
                     "quantization this converter supports (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, "
                     "Q5_1, Q2_K to Q6_K, IQ4_NL, IQ4_XS, MXFP4, TQ1_0, TQ2_0).")
    raise refuse(src, (name, kind), _REFUSED[kind], FIX_REQUANT)


def _direct(hurray: str, np_dtype: Any) -> Callable[..., Converted]:
    def convert(src: SourceFile, entry: SourceTensor, raw: np.ndarray) -> Converted:
        return Converted(dense_tensor(hurray, entry.shape, raw),
                         lambda: raw.view(np_dtype).reshape(entry.shape))
    return convert


_DIRECT = (("F32", "float32", "<f4", 4), ("F16", "float16", "<f2", 2),
           ("BF16", "bfloat16", ml_dtypes.bfloat16, 2), ("F64", "float64", "<f8", 8),
           ("I8", "int8", "<i1", 1), ("I16", "int16", "<i2", 2), ("I32", "int32", "<i4", 4),
           ("I64", "int64", "<i8", 8))
# GGML type -> the Hurray type whose bytes are the same (copied file to file when unchecked).
DIRECT = {kind: hurray for kind, hurray, _, _ in _DIRECT}
MAPPINGS: dict[str, GGMLMapping] = {
    kind: GGMLMapping(kind, 1, size, _direct(hurray, np_dtype))
    for kind, hurray, np_dtype, size in _DIRECT}
MAPPINGS.update({kind: GGMLMapping(kind, 32, size, fn) for kind, (size, fn) in QUANTS.items()})
MAPPINGS.update({kind: GGMLMapping(kind, block, size, fn)
                 for kind, (block, size, fn) in {**KQUANTS, **TERNARY}.items()})
