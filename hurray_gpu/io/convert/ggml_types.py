"""GGML tensor types -> Hurray tensors, one mapping per type, each bit-exact with gguf-py's own
dequantization (``gguf.quants``), or a refusal that says why.

Direct types keep their bytes. Q8_0, Q4_0 and Q5_0 (``x = d * q`` with an f16 ``d`` per block
of 32) become per-block affine tensors (scheme 0x03), symmetric, f16 scales: Q8_0 as int8;
Q4_0 as int4 with codes ``q - 8`` (no zero-point buffer, and the same f32 product); Q5_0
widened to int8 (codes ``q - 16``: Hurray has no 5-bit integer). Later slices add mappings here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
from hurray_gpu.format.descriptor.quant import PerBlockAffine
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.io.convert.source import (
    Converted,
    SourceFile,
    SourceTensor,
    dense_tensor,
    element_count,
    refuse,
)
from hurray_gpu.parts import TensorLike, assemble

__all__ = ["MAPPINGS", "GGMLMapping", "TYPES", "mapping", "type_name"]

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
_LATER = "not yet supported by this converter"
_FIX_REQUANT = ("re-quantize the model to Q8_0 or Q4_0 (llama-quantize), or keep that "
                "tensor in F16/BF16/F32, then convert again.")
# Why a known type is refused; every entry that Hurray could carry later says so.
_REFUSED = {
    "Q4_1": f"'d * q + m' has a float offset m, not an integer zero point; the exact form (an "
            f"overlay-add composite with the offset as a correction) is {_LATER}",
    "Q5_1": f"'d * q + m' has a float offset m, not an integer zero point; the exact form (an "
            f"overlay-add composite with the offset as a correction) is {_LATER}",
    "Q8_1": "Q8_1 is llama.cpp's intermediate type for activations (it also stores d * sum(q)),"
            " not a weight type; nothing to carry",
    "Q8_K": "Q8_K is llama.cpp's intermediate type for dot products, not a weight type",
    "IQ4_NL": f"4-bit codes into a fixed 16-entry non-uniform table: {_LATER}",
    "IQ4_XS": f"IQ4_NL codes with 6-bit sub-block scales in 256-element super-blocks: {_LATER}",
    "MXFP4": f"maps to Hurray MXFP (float4_e2m1 elements, e8m0 scales, block 32): {_LATER}",
    "TQ1_0": f"ternary values packed five to a byte in base 3: {_LATER}",
    "TQ2_0": f"ternary values as 2-bit codes with one f16 scale per 256: {_LATER}",
}
for _k in ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"):
    _REFUSED[_k] = (f"a K-quant: 256-element super-blocks with quantized sub-block scales (and "
                    f"float mins for Q2_K/Q4_K/Q5_K): {_LATER}")
for _k in ("IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"):
    _REFUSED[_k] = ("an i-quant: values are entries of a lattice codebook (grid tables) with "
                    "sign masks, which no Hurray quantization scheme expresses")

_F16_ONE, _F16_MINUS_ONE = 0x3C00, 0xBC00


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
                     "quantization this converter supports (F32, F16, BF16, Q8_0, Q4_0, Q5_0).")
    raise refuse(src, (name, kind), _REFUSED[kind], _FIX_REQUANT)


def _direct(hurray: str, np_dtype: Any) -> Callable[..., Converted]:
    def convert(src: SourceFile, entry: SourceTensor, raw: np.ndarray) -> Converted:
        return Converted(dense_tensor(hurray, entry.shape, raw),
                         lambda: raw.view(np_dtype).reshape(entry.shape))
    return convert


def _per_block(storage: str, shape: tuple[int, ...], codes: np.ndarray,
               scales: np.ndarray) -> TensorLike:
    """Scheme 0x03 along the innermost axis: block 32, symmetric, f16 scales (buffer 1)."""
    quant = PerBlockAffine(max(len(shape) - 1, 0), 32, 1, None, 0x01)
    handles = (BufferHandle(codes.nbytes, 64), BufferHandle(scales.nbytes, 64))
    desc = TensorDescriptor(by_name(storage), shape, RowMajor(), handles, quantization=quant)
    return assemble(desc, [codes.reshape(-1).view(np.uint8), scales.view(np.uint8)])


def _repair_scales(src: SourceFile, entry: SourceTensor, d: np.ndarray,
                   signed: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Make the f16 scale bits ``d`` valid for Hurray, in place; returns the blocks whose
    codes the caller must set to 0.

    Hurray forbids zero scales, and gguf-py writes ``d = 0`` for all-zero blocks. Such a
    block decodes to zeros whose signs are ``sign(d) xor sign(q)``: when the signs agree
    within the block, scale +-1 with all codes 0 gives the same bits; mixed signs (never
    written by a quantizer) and infinite or NaN scales are refused.
    """
    bad = np.flatnonzero((d & 0x7C00) == 0x7C00)
    if bad.size:
        raise refuse(src, entry, f"block {bad[0]} has an infinite or NaN f16 scale (bits "
                     f"0x{int(d[bad[0]]):04X}), which Hurray scales cannot be", _FIX_REQUANT)
    zero = np.flatnonzero((d & 0x7FFF) == 0)
    if zero.size:
        neg = ((d[zero] >> 15) == 1)[:, None] ^ (signed(zero) < 0)
        mixed = np.flatnonzero(neg.any(axis=1) & ~neg.all(axis=1))
        if mixed.size:
            raise refuse(src, entry, f"block {zero[mixed[0]]} has a zero scale and codes of "
                         "both signs (it decodes to +0.0 and -0.0 mixed), which one nonzero "
                         "Hurray scale cannot reproduce", _FIX_REQUANT)
        d[zero] = np.where(neg[:, 0], _F16_MINUS_ONE, _F16_ONE)
    return zero


def _scales(blocks: np.ndarray) -> np.ndarray:
    """The f16 bits of each block's leading scale (blocks are an even number of bytes, and
    the buffers 64-byte aligned: one strided u16 copy, 3x a copy of 2-byte rows)."""
    return blocks.reshape(-1).view("<u2").reshape(blocks.shape[0], -1)[:, 0].copy()


def _codes(src: SourceFile, blocks: np.ndarray, per_block: int) -> np.ndarray:
    """The (blocks, per_block) uint8 output of a mapping (reused across tensors)."""
    return src.buffer(blocks.shape[0] * per_block, "codes").reshape(-1, per_block)


def _q8_0(src: SourceFile, entry: SourceTensor, raw: np.ndarray) -> Converted:
    blocks = raw.reshape(-1, 34)
    d, codes = _scales(blocks), _codes(src, blocks, 32).view(np.int8)
    np.copyto(codes, blocks[:, 2:].view(np.int8))
    codes[_repair_scales(src, entry, d, lambda i: codes[i])] = 0
    return Converted(_per_block("int8", entry.shape, codes, d), lambda: decode_q8_0(raw, entry))


def _q4_nibbles(qs: np.ndarray) -> np.ndarray:
    """GGUF 4-bit codes in element order: element j < 16 is the low nibble of byte j, element
    j + 16 its high nibble."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1)


# Per 16-bit lane (source bytes 2k, 2k + 1): keep nibbles 0 and 3, swap nibbles 1 and 2, so
# the low byte holds both low nibbles (Hurray byte k) and the high byte both high nibbles
# (Hurray byte 8 + k); xor 0x8 per nibble turns each code q into q - 8 (int4).
_KEEP, _DOWN, _UP = (np.uint64(m) for m in (0xF00FF00FF00FF00F, 0x0F000F000F000F00,
                                            0x00F000F000F000F0))
_FOUR, _MINUS8 = np.uint64(4), np.uint64(0x8888888888888888)
_PART_BLOCKS = 1 << 15  # 32768 blocks: 0.5-1 MiB of temporaries per step


def _q4_repack(qs: np.ndarray, codes: np.ndarray) -> None:
    lanes = np.ascontiguousarray(qs).view("<u8")
    mixed = (lanes & _KEEP) | ((lanes & _DOWN) >> _FOUR)
    mixed |= (lanes & _UP) << _FOUR
    mixed ^= _MINUS8
    pairs = mixed.view(np.uint8).reshape(-1, 8, 2)
    np.copyto(codes[:, :8], pairs[:, :, 0])
    np.copyto(codes[:, 8:], pairs[:, :, 1])


def _q4_0(src: SourceFile, entry: SourceTensor, raw: np.ndarray) -> Converted:
    blocks = raw.reshape(-1, 18)
    d, qs = _scales(blocks), blocks[:, 2:]
    # GGUF element j < 16 is the low nibble of byte j, j + 16 its high nibble; Hurray packs
    # element 2k low and 2k + 1 high in byte k (LSB first). 64-bit lanes: 1.6x byte ops.
    codes = _codes(src, blocks, 16)
    for part in _parts(blocks.shape[0]):
        _q4_repack(qs[part], codes[part])
    codes[_repair_scales(src, entry, d, lambda i: _q4_nibbles(qs[i]).astype(np.int8) - 8)] = 0
    return Converted(_per_block("int4", entry.shape, codes, d), lambda: decode_q4_0(raw, entry))


def _parts(blocks: int) -> list[slice]:
    """Slices of at most _PART_BLOCKS blocks: the repacking's temporaries stay in the cache,
    and peak memory stays the tensor's bytes in and out plus a constant."""
    return [slice(i, i + _PART_BLOCKS) for i in range(0, blocks, _PART_BLOCKS)]


# Bit 4 of the eight Q5_0 codes that one byte of qh covers, already minus 16 (int8 bytes):
# 0x00 where the bit is set (q - 16 = low nibble), 0xF0 where it is clear (low nibble - 16).
_Q5_HIGH = np.where((np.arange(256)[:, None] >> np.arange(8)) & 1, 0x00, 0xF0).astype(
    np.uint8).view("<u8").reshape(256)


def _q5_codes(blocks: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Q5_0 codes ``q - 16`` as int8 into ``out`` (blocks x 32): the low 4 bits as in Q4_0;
    bit 4 of element j is bit j of the little-endian u32 ``qh``."""
    for part in _parts(blocks.shape[0]):
        chunk, qs = out[part], blocks[part, 6:]
        np.take(_Q5_HIGH, blocks[part, 2:6], out=chunk.view("<u8"))
        chunk[:, :16] |= qs & 0x0F
        chunk[:, 16:] |= qs >> 4
    return out.view(np.int8)


def _q5_0(src: SourceFile, entry: SourceTensor, raw: np.ndarray) -> Converted:
    blocks = raw.reshape(-1, 22)
    d, codes = _scales(blocks), _q5_codes(blocks, _codes(src, blocks, 32))
    codes[_repair_scales(src, entry, d, lambda i: codes[i])] = 0
    return Converted(_per_block("int8", entry.shape, codes, d), lambda: decode_q5_0(raw, entry))


def _f32_scales(blocks: np.ndarray) -> np.ndarray:
    return _scales(blocks).view(np.float16).astype(np.float32)[:, None]


def decode_q8_0(raw: np.ndarray, entry: SourceTensor) -> np.ndarray:
    """gguf-py's Q8_0 formula (``d * q`` in float32) in NumPy, for ``convert(device=...)``."""
    blocks = raw.reshape(-1, 34)
    q = blocks[:, 2:].view(np.int8).astype(np.float32)
    return (q * _f32_scales(blocks)).reshape(entry.shape)


def decode_q4_0(raw: np.ndarray, entry: SourceTensor) -> np.ndarray:
    """gguf-py's Q4_0 formula (``d * (q - 8)`` in float32) in NumPy."""
    blocks = raw.reshape(-1, 18)
    q = (_q4_nibbles(blocks[:, 2:]).astype(np.int8) - 8).astype(np.float32)
    return (_f32_scales(blocks) * q).reshape(entry.shape)


def decode_q5_0(raw: np.ndarray, entry: SourceTensor) -> np.ndarray:
    """gguf-py's Q5_0 formula (``d * (q - 16)`` in float32) in NumPy."""
    blocks = raw.reshape(-1, 22)
    codes = _q5_codes(blocks, np.empty((blocks.shape[0], 32), np.uint8))
    return (_f32_scales(blocks) * codes.astype(np.float32)).reshape(entry.shape)


MAPPINGS: dict[str, GGMLMapping] = {
    kind: GGMLMapping(kind, 1, size, _direct(hurray, np_dtype))
    for kind, hurray, np_dtype, size in (
        ("F32", "float32", "<f4", 4), ("F16", "float16", "<f2", 2),
        ("BF16", "bfloat16", ml_dtypes.bfloat16, 2), ("F64", "float64", "<f8", 8),
        ("I8", "int8", "<i1", 1), ("I16", "int16", "<i2", 2), ("I32", "int32", "<i4", 4),
        ("I64", "int64", "<i8", 8))
}
MAPPINGS.update({"Q8_0": GGMLMapping("Q8_0", 32, 34, _q8_0),
                 "Q4_0": GGMLMapping("Q4_0", 32, 18, _q4_0),
                 "Q5_0": GGMLMapping("Q5_0", 32, 22, _q5_0)})
