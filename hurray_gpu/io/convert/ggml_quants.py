"""GGML's 32-element block quantizations as Hurray tensors, each bit-exact with gguf-py's own
dequantization (``gguf.quants``) in float32.

``x = d * q`` (Q8_0, Q4_0, Q5_0) is per-block affine (scheme 0x03), symmetric, f16 scales along
the innermost axis: Q8_0 as int8; Q4_0 as int4 codes ``q - 8`` (no zero-point buffer; the same
f32 product); Q5_0 widened to int8 codes ``q - 16`` (Hurray has no 5-bit integer).
``x = d * q + m`` (Q4_1, Q5_1) has a float offset, not an integer zero point: it becomes an
overlay-add composite (float32 head) of the base ``d * q`` (uint4 / uint8, symmetric) and a
correction that is ``m`` on every element of its block (uint2 codes 1 with scale ``m``). The
head adds the two f32 values once, as gguf-py's ``(d * q) + m`` does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
from hurray_gpu.format.descriptor.layouts import Composite
from hurray_gpu.format.descriptor.quant import PerBlockAffine
from hurray_gpu.format.descriptor.sections import CompositeMember, Shard
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.io.convert.source import Converted, SourceFile, SourceTensor, refuse
from hurray_gpu.parts import TensorLike, assemble

__all__ = ["FIX_REQUANT", "QUANTS", "zero_signs"]

FIX_REQUANT = ("re-quantize the model to Q8_0 or Q4_0 (llama-quantize), or keep that tensor "
               "in F16/BF16/F32, then convert again.")
_F16_ONE, _F16_MINUS_ONE = 0x3C00, 0xBC00
_BASE, _CORRECTION = 1, 0
_PART_BLOCKS = 1 << 15  # blocks per repacking step: 0.5-1 MiB of temporaries
# Per 16-bit lane (source bytes 2k, 2k + 1): keep nibbles 0 and 3, swap nibbles 1 and 2, so
# the low byte holds both low nibbles (Hurray byte k) and the high byte both high nibbles
# (Hurray byte 8 + k); xor 0x8 per nibble turns each code q into q - 8 (int4).
_KEEP, _DOWN, _UP = (np.uint64(m) for m in (0xF00FF00FF00FF00F, 0x0F000F000F000F00,
                                            0x00F000F000F000F0))
_FOUR, _MINUS8 = np.uint64(4), np.uint64(0x8888888888888888)
_LOW = np.uint64(0x0F0F0F0F0F0F0F0F)
# Bit 4 of Q5 codes, 8 elements per 64-bit lane: one qh byte copied to every byte (x REP),
# bit i kept in byte i (& SEL), nonzero bytes -> 0x80 (+ 0x7F, & 0x80; no carries: at most
# 0xFF), >> 3 -> 0x10. Q5_0's codes are q - 16: 0x00 where the bit is set, 0xF0 where clear,
# (bit ^ 0x10) * 15 per byte (no carries either).
_REP, _SEL = np.uint64(0x0101010101010101), np.uint64(0x8040201008040201)
_ROUND, _TOP = np.uint64(0x7F7F7F7F7F7F7F7F), np.uint64(0x8080808080808080)
_BIT4, _THREE, _FIFTEEN = np.uint64(0x1010101010101010), np.uint64(3), np.uint64(15)

def _parts(blocks: int, per: int = 32) -> list[slice]:
    """Steps of _PART_BLOCKS 32-element blocks (fewer blocks of ``per`` elements): temporaries
    stay in the cache, and peak memory stays the tensor's bytes in and out plus a constant."""
    step = _PART_BLOCKS * 32 // per
    return [slice(i, i + step) for i in range(0, blocks, step)]


def _half(blocks: np.ndarray, index: int) -> np.ndarray:
    """The f16 bits at u16 ``index`` of every block (blocks are an even number of bytes in a
    64-byte aligned buffer: one strided u16 copy, 3x a copy of 2-byte rows)."""
    count, size = blocks.shape
    return blocks.reshape(-1).view("<u2").reshape(count, size // 2)[:, index].copy()


def _f32(blocks: np.ndarray, index: int) -> np.ndarray:
    return _half(blocks, index).view(np.float16).astype(np.float32)[:, None]


def _codes(src: SourceFile, blocks: np.ndarray, per_block: int) -> np.ndarray:
    """The (blocks, per_block) uint8 output of a mapping (reused across tensors)."""
    return src.buffer(blocks.shape[0] * per_block, "codes").reshape(-1, per_block)


def _shaped(entry: SourceTensor, decode: Callable[[], np.ndarray]) -> Callable[[], np.ndarray]:
    """``decode`` (per block rows) in the tensor's shape: the source's own decoding that
    ``convert(device=...)`` compares with."""
    return lambda: decode().reshape(entry.shape)


def _repair(src: SourceFile, entry: SourceTensor, d: np.ndarray, what: str,
            signed: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Make the f16 bits ``d`` valid Hurray scales, in place; returns the blocks whose codes
    the caller must set to 0.

    Hurray forbids zero scales, and gguf-py writes ``d = 0`` for all-zero blocks. Such a
    block decodes to zeros whose signs are ``sign(d) xor sign(q)``: when the signs agree
    within the block, scale +-1 with all codes 0 gives the same bits; mixed signs (never
    written by a quantizer) and infinite or NaN values are refused.
    """
    bad = np.flatnonzero((d & 0x7C00) == 0x7C00)
    if bad.size:
        raise refuse(src, entry, f"block {bad[0]} has an infinite or NaN f16 {what} (bits "
                     f"0x{int(d[bad[0]]):04X}), which Hurray scales cannot be", FIX_REQUANT)
    zero = np.flatnonzero((d & 0x7FFF) == 0)
    if zero.size:
        neg = zero_signs(src, entry, (d[zero] >> 15) == 1, signed(zero), zero, "block", what)
        d[zero] = np.where(neg, _F16_MINUS_ONE, _F16_ONE)
    return zero


def zero_signs(src: SourceFile, entry: SourceTensor, negative: np.ndarray, codes: np.ndarray,
               at: np.ndarray, unit: str, what: str,
               mixed: list[np.ndarray] | None = None) -> np.ndarray:
    """Whether each zero-scale (sub-)block decodes to -0.0: ``negative`` is its scale's sign
    bit, ``codes`` (one row per block) its codes. Zeros of both signs in one block (which one
    nonzero Hurray scale cannot reproduce) are refused, naming block ``at[i]``, or, when
    ``mixed`` is given, their rows (indices into ``codes``) are appended to it for the caller
    to reproduce another way (their result entries are then meaningless)."""
    neg = negative[:, None] ^ (codes < 0)
    both = np.flatnonzero(neg.any(axis=1) & ~neg.all(axis=1))
    if both.size and mixed is not None:
        mixed.append(both)
    elif both.size:
        raise refuse(src, entry, f"{unit} {at[both[0]]} has a zero {what} and codes of both "
                     "signs (it decodes to +0.0 and -0.0 mixed), which one nonzero Hurray scale "
                     "cannot reproduce", FIX_REQUANT)
    return np.asarray(neg[:, 0])


def _per_block(storage: str, shape: tuple[int, ...], codes: np.ndarray, scales: np.ndarray,
               role: int | None = None, block: int = 32, scale_tag: int = 0x01) -> TensorLike:
    """Scheme 0x03 along the innermost axis: symmetric, ``block`` elements per scale
    (``scale_tag`` 0x01 f16, 0x03 f32; buffer 1); an overlay member spanning ``shape`` when
    ``role`` is given."""
    quant = PerBlockAffine(max(len(shape) - 1, 0), block, 1, None, scale_tag)
    handles = (BufferHandle(codes.nbytes, 64), BufferHandle(scales.nbytes, 64))
    shard = None if role is None else Shard(shape, (0,) * len(shape))
    desc = TensorDescriptor(by_name(storage), shape, RowMajor(), handles, quantization=quant,
                            shard=shard, composite_member=None if role is None
                            else CompositeMember(role))
    return assemble(desc, [codes.reshape(-1).view(np.uint8), scales.view(np.uint8)])


def _plus_offsets(src: SourceFile, entry: SourceTensor, base: TensorLike,
                  m: np.ndarray) -> TensorLike:
    """``base + m[block]`` as an overlay-add composite: the correction's uint2 codes are 1
    (``m * 1 = m`` exactly), or 0 with scale +-1 where ``m`` is a signed zero."""
    zero = _repair(src, entry, m, "offset m", lambda i: np.zeros((i.size, 1), np.int8))
    ones = src.buffer(m.size * 8, "offsets").reshape(-1, 8)  # 32 uint2 codes: 8 bytes
    ones.fill(0x55)  # 0b01010101: four codes of 1, LSB first
    ones[zero] = 0
    corr = _per_block("uint2", entry.shape, ones, m, _CORRECTION)
    head = TensorDescriptor(by_name("float32"), entry.shape, Composite(2, 2, 2), ())
    return assemble(head, [], [base, corr])


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """GGML 4-bit codes in element order: element j < 16 is the low nibble of byte j, element
    j + 16 its high nibble."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1)


def _repack4(qs: np.ndarray, codes: np.ndarray, flip: np.uint64) -> None:
    """GGML nibble order (rows of 2h bytes: element j < 2h the low nibble of byte j, element
    j + 2h its high nibble) -> Hurray's (element 2k low, 2k + 1 high in byte k, LSB first), in
    64-bit lanes (1.6x byte operations), xor ``flip`` per lane."""
    half = qs.shape[1] // 2
    for part in _parts(qs.shape[0]):
        lanes = np.ascontiguousarray(qs[part]).view("<u8")
        mixed = (lanes & _KEEP) | ((lanes & _DOWN) >> _FOUR)
        mixed |= (lanes & _UP) << _FOUR
        mixed ^= flip
        pairs = mixed.view(np.uint8).reshape(-1, half, 2)
        np.copyto(codes[part, :half], pairs[:, :, 0])
        np.copyto(codes[part, half:], pairs[:, :, 1])


def _q5(blocks: np.ndarray, out: np.ndarray, minus: int) -> np.ndarray:
    """Q5 codes ``q - minus`` (0 or 16) into ``out`` (blocks x 32 bytes), in 64-bit lanes
    (1.4x a table lookup): bit 4 of element j is bit j of the little-endian u32 ``qh`` just
    before the 16 ``qs`` bytes, the low 4 bits are in GGML nibble order."""
    at = blocks.shape[1] - 20
    for part in _parts(blocks.shape[0]):
        lanes = out[part].view("<u8")  # 4 lanes per block
        high = blocks[part, at:at + 4].astype(np.uint64)
        high *= _REP
        high &= _SEL
        high += _ROUND
        high &= _TOP
        high >>= _THREE
        if minus:
            high ^= _BIT4
            high *= _FIFTEEN
        low = np.ascontiguousarray(blocks[part, at + 4:]).view("<u8")
        np.bitwise_or(high[:, :2], low & _LOW, out=lanes[:, :2])
        low >>= _FOUR
        low &= _LOW
        np.bitwise_or(high[:, 2:], low, out=lanes[:, 2:])
    return out


def _q8_0(src: SourceFile, entry: SourceTensor, raw: np.ndarray) -> Converted:
    blocks = raw.reshape(-1, 34)
    d, codes = _half(blocks, 0), _codes(src, blocks, 32).view(np.int8)
    np.copyto(codes, blocks[:, 2:].view(np.int8))
    codes[_repair(src, entry, d, "scale", lambda i: codes[i])] = 0
    return Converted(_per_block("int8", entry.shape, codes, d),
                     _shaped(entry, lambda: blocks[:, 2:].view(np.int8) * _f32(blocks, 0)))


def _q4(src: SourceFile, entry: SourceTensor, raw: np.ndarray, size: int) -> Converted:
    blocks = raw.reshape(-1, size)
    d, qs, codes = _half(blocks, 0), blocks[:, size - 16:], _codes(src, blocks, 16)
    signed = size == 18  # Q4_0: int4 codes q - 8; Q4_1: uint4 codes q
    _repack4(qs, codes, _MINUS8 if signed else np.uint64(0))
    shift = 8 if signed else 0
    codes[_repair(src, entry, d, "scale", lambda i: _nibbles(qs[i]).astype(np.int8) - shift)] = 0
    base = _per_block("int4" if signed else "uint4", entry.shape, codes, d,
                      None if signed else _BASE)

    def expected() -> np.ndarray:
        value = _f32(blocks, 0) * (_nibbles(qs).astype(np.int8) - shift).astype(np.float32)
        return value if signed else value + _f32(blocks, 1)
    if signed:
        return Converted(base, _shaped(entry, expected))
    return Converted(_plus_offsets(src, entry, base, _half(blocks, 1)), _shaped(entry, expected))


def _q5_x(src: SourceFile, entry: SourceTensor, raw: np.ndarray, size: int) -> Converted:
    blocks = raw.reshape(-1, size)
    signed = size == 22  # Q5_0: int8 codes q - 16; Q5_1: uint8 codes q
    d, codes = _half(blocks, 0), _q5(blocks, _codes(src, blocks, 32), 16 if signed else 0)
    view = codes.view(np.int8) if signed else codes
    codes[_repair(src, entry, d, "scale", lambda i: view[i])] = 0
    base = _per_block("int8" if signed else "uint8", entry.shape, view, d,
                      None if signed else _BASE)

    def expected() -> np.ndarray:  # gguf-py's own steps, not the lanes above
        high = np.unpackbits(blocks[:, size - 20:size - 16], axis=1, bitorder="little")
        q = (_nibbles(blocks[:, size - 16:]) | (high << 4)).astype(np.int8) - (16 * signed)
        value = _f32(blocks, 0) * q.astype(np.float32)
        return value if signed else value + _f32(blocks, 1)
    if signed:
        return Converted(base, _shaped(entry, expected))
    return Converted(_plus_offsets(src, entry, base, _half(blocks, 1)), _shaped(entry, expected))


# GGML type -> (block bytes, mapping); every mapping's ``expected`` is gguf-py's formula.
QUANTS: dict[str, tuple[int, Callable[[SourceFile, SourceTensor, np.ndarray], Converted]]] = {
    "Q8_0": (34, _q8_0),
    "Q4_0": (18, lambda s, e, r: _q4(s, e, r, 18)),
    "Q4_1": (20, lambda s, e, r: _q4(s, e, r, 20)),
    "Q5_0": (22, lambda s, e, r: _q5_x(s, e, r, 22)),
    "Q5_1": (24, lambda s, e, r: _q5_x(s, e, r, 24)),
}
