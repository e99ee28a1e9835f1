"""GGML's K-quants (Q2_K to Q6_K), IQ4_NL, IQ4_XS and MXFP4 as Hurray tensors, each bit-exact
with gguf-py's own dequantization (``gguf.quants``) in float32.

Every K-quant sub-block scale is ``d * sc`` with ``d`` an f16 and ``sc`` an integer of at most
8 bits: the f32 product is exact (11 + 8 bits), so it is stored as the f32 scale of a per-block
affine sub-block (scheme 0x03, block 16 or 32) and gguf-py's ``(d * sc) * q`` is one rounding,
as Hurray's ``scale * q`` is. The signed types (Q6_K, Q3_K, IQ4_NL/IQ4_XS table values) are
symmetric int8/int4 codes. Q2_K, Q4_K and Q5_K subtract ``dmin * m`` (exact too): an overlay-add
composite of the base ``(d * sc) * q`` and a correction that is ``-(dmin * m)`` on every element
of its sub-block, as Q4_1's; ``a + (-b)`` is ``a - b`` in IEEE arithmetic.
MXFP4 is Hurray's MXFP (float4_e2m1, e8m0 scale, block 32): gguf-py decodes ``2^(e-128) *
2v``, which is ``2^(e-127) * v``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
from hurray_gpu.format.descriptor.layouts import Composite
from hurray_gpu.format.descriptor.quant import MXFP
from hurray_gpu.format.descriptor.sections import CompositeMember, Shard
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.io.convert.ggml_quants import (
    _BASE,
    _CORRECTION,
    FIX_REQUANT,
    _parts,
    _per_block,
    _repack4,
    _shaped,
    zero_signs,
)
from hurray_gpu.io.convert.source import Converted, SourceFile, SourceTensor, refuse
from hurray_gpu.parts import TensorLike, assemble

__all__ = ["IQ4_VALUES", "KQUANTS", "ZERO_CODES"]

_BITS = {"int8": 8, "uint8": 8, "int4": 4, "uint4": 4, "uint2": 2}
IQ4_VALUES = np.array((-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113),
                      np.int8)
# gguf-py decodes MXFP4 nibble 8 as +0 (its table holds 0 twice); e2m1 code 8 is -0. In 64-bit
# lanes: a nibble's low 3 bits plus 7 set its bit 3 unless they are 0 (no carry: at most 14).
# The codes (as values) a zero sub-block of the signed super-block types is rebuilt with on
# export, for zeros of the other sign than its scale and of the same: llama.cpp's all-zero
# bytes where their sign fits. A zero sub-block holding other codes keeps them (see _repair).
ZERO_CODES = {"Q6_K": (-32, 0), "Q3_K": (-4, 0), "IQ4_XS": (-127, 1)}
_SEVENS, _EIGHTS = np.uint64(0x7777777777777777), np.uint64(0x8888888888888888)


class _Decoded(NamedTuple):
    """One step of super-blocks in element order: integer codes ``q`` (n, elements), f32
    sub-block scales ``dl`` (n, subs) and, for the types with mins, ``ml`` (n, subs)."""

    q: np.ndarray
    dl: np.ndarray
    ml: np.ndarray | None = None


def _f16(blocks: np.ndarray, at: int) -> np.ndarray:
    return np.ascontiguousarray(blocks[:, at:at + 2]).view("<f2").astype(np.float32)


def _shifts(x: np.ndarray, n: int, group: int, steps: tuple[int, ...]) -> np.ndarray:
    """``x`` (n, k * group) -> (n, k, len(steps), group) shifted right by each of ``steps``:
    gguf-py's way of spreading packed fields into element order."""
    shift = np.array(steps, np.uint8).reshape(1, 1, -1, 1)
    return x.reshape(n, -1, 1, group) >> shift


def _k_scale_min(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K/Q5_K's eight 6-bit scales and mins from their 12 packed bytes."""
    d, m, m_d = np.split(scales.reshape(-1, 3, 4), 3, axis=1)
    sc = np.concatenate([d & 0x3F, (m_d & 0x0F) | ((d >> 2) & 0x30)], axis=-1)
    mn = np.concatenate([m & 0x3F, (m_d >> 4) | ((m >> 2) & 0x30)], axis=-1)
    return sc.reshape(-1, 8).astype(np.float32), mn.reshape(-1, 8).astype(np.float32)


def _q6_k(b: np.ndarray) -> _Decoded:
    n = b.shape[0]
    ql = (_shifts(b[:, :128], n, 64, (0, 4)) & 0x0F).reshape(n, -1, 32)
    qh = (_shifts(b[:, 128:192], n, 32, (0, 2, 4, 6)) & 0x03).reshape(n, -1, 32)
    q = (ql | (qh << 4)).astype(np.int8) - np.int8(32)
    sc = np.ascontiguousarray(b[:, 192:208]).view(np.int8).astype(np.float32)
    return _Decoded(q.reshape(n, -1), _f16(b, 208) * sc)


def _q3_k(b: np.ndarray) -> _Decoded:
    n = b.shape[0]
    low = (_shifts(b[:, 96:104], n, 8, (0, 4)).reshape(n, 16) & 0x0F)
    high = (_shifts(b[:, 104:108], n, 4, (0, 2, 4, 6)).reshape(n, 16) & 0x03) << 4
    sc = ((low | high).astype(np.int8) - np.int8(32)).astype(np.float32)
    ql = _shifts(b[:, 32:96], n, 32, (0, 2, 4, 6)).reshape(n, -1) & 3
    qh = (_shifts(b[:, :32], n, 32, tuple(range(8))).reshape(n, -1) & 1) ^ 1
    return _Decoded(ql.astype(np.int8) - (qh << 2).astype(np.int8), _f16(b, 108) * sc)


def _q2_k(b: np.ndarray) -> _Decoded:
    n, scales = b.shape[0], b[:, :16]
    q = _shifts(b[:, 16:80], n, 32, (0, 2, 4, 6)).reshape(n, -1) & 3
    return _Decoded(q, _f16(b, 80) * (scales & 0x0F).astype(np.float32),
                    _f16(b, 82) * (scales >> 4).astype(np.float32))


def _q4_k(b: np.ndarray) -> _Decoded:
    n = b.shape[0]
    q = _shifts(b[:, 16:], n, 32, (0, 4)).reshape(n, -1) & 0x0F
    return _Decoded(q, *_q4_k_scales(b)[1:])


def _q4_k_scales(b: np.ndarray) -> _Decoded:
    """Q4_K's scales and mins; its codes (rows of 32 bytes in GGML nibble order) are repacked
    in 64-bit lanes, not decoded (unsigned: a zero scale's sign alone decides)."""
    sc, mn = _k_scale_min(b[:, 4:16])
    return _Decoded(np.zeros((b.shape[0] * 8, 1), np.uint8), _f16(b, 0) * sc, _f16(b, 2) * mn)


def _q5_k(b: np.ndarray) -> _Decoded:
    n = b.shape[0]
    sc, mn = _k_scale_min(b[:, 4:16])
    ql = _shifts(b[:, 48:], n, 32, (0, 4)).reshape(n, -1) & 0x0F
    qh = _shifts(b[:, 16:48], n, 32, tuple(range(8))).reshape(n, -1) & 1
    return _Decoded(ql | (qh << 4), _f16(b, 0) * sc, _f16(b, 2) * mn)


def _iq4_nl(b: np.ndarray) -> _Decoded:
    n = b.shape[0]
    q = _shifts(b[:, 2:], n, 16, (0, 4)).reshape(n, -1) & 0x0F
    return _Decoded(np.take(IQ4_VALUES, q), _f16(b, 0))


def _iq4_xs(b: np.ndarray) -> _Decoded:
    n = b.shape[0]
    low = _shifts(b[:, 4:8], n, 1, (0, 4)).reshape(n, 8) & 0x0F
    high = np.ascontiguousarray(b[:, 2:4]).view("<u2") >> np.arange(0, 16, 2, dtype=np.uint16)
    sc = (low | ((high.astype(np.uint8) & 3) << 4)).astype(np.int8) - np.int8(32)
    q = _shifts(b[:, 8:], n, 16, (0, 4)).reshape(n, -1) & 0x0F
    return _Decoded(np.take(IQ4_VALUES, q), _f16(b, 0) * sc.astype(np.float32))


def _pack(q: np.ndarray, bits: int, out: np.ndarray) -> None:
    """Codes in element order -> Hurray's packing (element i at bit ``i * bits`` of the row,
    LSB first)."""
    if bits == 8:
        np.copyto(out, q.view(np.uint8))
        return
    v = (q.view(np.uint8) & ((1 << bits) - 1)).reshape(q.shape[0], -1, 8 // bits)
    np.copyto(out, v[:, :, 0])
    for k in range(1, 8 // bits):
        out |= v[:, :, k] << np.uint8(k * bits)


def _repair(src: SourceFile, entry: SourceTensor, scale: np.ndarray, q: np.ndarray,
            what: str, first: int, kept: list[tuple[np.ndarray, np.ndarray]] | None = None,
            zeros: tuple[int, int] | None = None) -> np.ndarray:
    """Make the f32 ``scale`` (n, subs) valid Hurray scales, in place; returns the zero-scale
    mask, whose sub-blocks' codes the caller sets to 0.

    A zero scale decodes to zeros of sign ``sign(scale) xor sign(q)``: scale +-1 with codes 0
    reproduces them when the signs agree within the sub-block. llama.cpp can leave a
    sub-block's codes of both signs when its scale rounds to 0: with ``kept`` given, such a
    sub-block keeps its codes under scale +-1 of the zero scale's sign (what an exporter needs
    to rebuild the block) and ``(sub-block indices from first, f32 bits of its exact zeros)``
    is appended to ``kept`` for an overlay to replace its values; otherwise it is refused.
    With ``zeros`` (the codes an exporter rebuilds for zeros of the other and the same sign
    as the scale, :data:`ZERO_CODES`), a sub-block of one sign holding other codes is kept
    the same way, so that its bytes come back.
    """
    bad = np.flatnonzero(~np.isfinite(scale))
    if bad.size:
        raise refuse(src, entry, f"sub-block {first + bad[0]} has an infinite or NaN {what} "
                     f"({scale.reshape(-1)[bad[0]]}), which Hurray scales cannot be",
                     FIX_REQUANT)
    zero = scale == 0
    at = np.flatnonzero(zero)
    if at.size:  # only the zero sub-blocks' codes are read (1 in 64 of random 6-bit scales)
        flat, rows = scale.reshape(-1), q.reshape(scale.size, -1)[at]
        sign = np.signbit(flat[at])
        mixed: list[np.ndarray] | None = [] if kept is not None else None
        neg = zero_signs(src, entry, sign, rows, first + at, "sub-block", what, mixed)
        if zeros is not None and mixed is not None:  # one sign, but not the rebuilt codes
            odd = np.flatnonzero(~(rows == np.where(rows[:, :1] < 0, *zeros)).all(axis=1))
            mixed = [np.union1d(odd, mixed[0] if mixed else odd).astype(np.intp)]
        if mixed and mixed[0].size and kept is not None:
            both = mixed[0]
            neg[both] = sign[both]
            zero.reshape(-1)[at[both]] = False  # the codes stay; the overlay hides them
            bits = np.where(sign[both, None] ^ (rows[both] < 0), 1 << 31, 0).astype("<u4")
            kept.append((first + at[both], bits))
        flat[at] = np.where(neg, -1.0, 1.0)
    return zero


def _replace_zeros(entry: SourceTensor, base: TensorLike,
                   kept: list[tuple[np.ndarray, np.ndarray]], sub: int) -> TensorLike:
    """``base`` with each kept sub-block's values replaced by its exact signed zeros: an
    overlay-replace composite (float32 head) whose corrections are float32 boxes (dense members
    take the head's type) of one sub-block each (sub-blocks never cross a row: GGUF rows are whole super-blocks)."""
    members, box = [base], (1,) * (len(entry.shape) - 1) + (sub,)
    for at, zeros in kept:
        for index, row in zip(at.tolist(), zeros, strict=True):
            offset = tuple(int(i) for i in np.unravel_index(index * sub, entry.shape))
            desc = TensorDescriptor(by_name("float32"), box, RowMajor(),
                                    (BufferHandle(row.nbytes, 64),),
                                    shard=Shard(entry.shape, offset),
                                    composite_member=CompositeMember(_CORRECTION))
            members.append(assemble(desc, [np.ascontiguousarray(row).view(np.uint8)]))
    head = TensorDescriptor(by_name("float32"), entry.shape, Composite(2, 1, len(members)), ())
    return assemble(head, [], members)


class _KQuant(NamedTuple):
    """One super-block type: bytes per block, elements per sub-block, Hurray storage of the
    codes, and the decoder into element order."""

    size: int
    per: int
    sub: int
    storage: str
    decode: Callable[[np.ndarray], _Decoded]
    lanes: Callable[[np.ndarray], _Decoded] | None = None  # scales only; codes via _repack4
    zeros: tuple[int, int] | None = None  # ZERO_CODES of the type

    def convert(self, src: SourceFile, entry: SourceTensor, raw: np.ndarray) -> Converted:
        blocks = raw.reshape(-1, self.size)
        n, per = blocks.shape[0], self.per
        subs, bits = per // self.sub, _BITS[self.storage]
        codes = src.buffer(n * per * bits // 8, "codes").reshape(n, per * bits // 8)
        dl = np.empty((n, subs), np.float32)
        ml = np.empty((n, subs), np.float32) if self.storage.startswith("u") else None  # mins
        kept: list[tuple[np.ndarray, np.ndarray]] = []  # mixed +-0 sub-blocks (signed types)
        for part in _parts(n, per):
            first = (part.start or 0) * subs
            with np.errstate(invalid="ignore"):  # inf * 0: a NaN scale, refused below
                got = (self.lanes or self.decode)(blocks[part])
            dl[part] = got.dl
            q = got.q.reshape(got.dl.shape[0], subs, -1)
            zero = _repair(src, entry, dl[part], q, "scale", first,
                           None if ml is not None else kept, self.zeros)
            if self.lanes is not None:
                _repack4(blocks[part, self.size - 128:].reshape(-1, 32),
                         codes[part].reshape(-1, 32), np.uint64(0))
                codes[part].reshape(*zero.shape, -1)[zero] = 0
            else:
                q[zero] = 0
                _pack(q.reshape(q.shape[0], -1), bits, codes[part])
            if ml is not None and got.ml is not None:
                np.negative(got.ml, out=ml[part])
        base = _per_block(self.storage, entry.shape, codes, dl,
                          None if ml is None and not kept else _BASE, self.sub, 0x03)
        expected = _shaped(entry, lambda: self.expected(blocks))
        if kept:
            return Converted(_replace_zeros(entry, base, kept, self.sub), expected)
        if ml is None:
            return Converted(base, expected)
        return Converted(_minus_mins(src, entry, base, ml, self.sub), expected)

    def expected(self, blocks: np.ndarray) -> np.ndarray:
        """gguf-py's arithmetic: ``(d * sc) * q``, then ``- (dmin * m)``, in f32."""
        got = self.decode(blocks)
        q = got.q.reshape(*got.dl.shape, -1).astype(np.float32)
        value = got.dl[:, :, None] * q
        return value if got.ml is None else value - got.ml[:, :, None]


def _minus_mins(src: SourceFile, entry: SourceTensor, base: TensorLike, neg_ml: np.ndarray,
                sub: int) -> TensorLike:
    """``base + (-ml)[sub-block]`` as an overlay-add composite: uint2 codes 1 with scale
    ``-ml``, or 0 with scale +-1 where ``-ml`` is a signed zero."""
    zero = _repair(src, entry, neg_ml, np.zeros((*neg_ml.shape, 1), np.int8), "min", 0)
    ones = src.buffer(neg_ml.size * sub // 4, "offsets").reshape(*neg_ml.shape, sub // 4)
    ones.fill(0x55)  # 0b01010101: four codes of 1, LSB first
    ones[zero] = 0
    corr = _per_block("uint2", entry.shape, ones, neg_ml, _CORRECTION, sub, 0x03)
    head = TensorDescriptor(by_name("float32"), entry.shape, Composite(2, 2, 2), ())
    return assemble(head, [], [base, corr])


def _mxfp4(src: SourceFile, entry: SourceTensor, raw: np.ndarray) -> Converted:
    blocks = raw.reshape(-1, 17)
    e = blocks[:, 0].copy()
    codes = src.buffer(blocks.shape[0] * 16, "codes").reshape(-1, 16)
    _repack4(blocks[:, 1:], codes, np.uint64(0))
    for part in _parts(codes.shape[0]):
        lanes = codes[part].view("<u8")
        low = lanes & _SEVENS
        low += _SEVENS
        np.bitwise_and(lanes, ~low & _EIGHTS, out=low)  # bit 3 of each nibble that is 8
        lanes ^= low
    bad = np.flatnonzero(e == 0xFF)
    if bad.size:
        raise refuse(src, entry, f"block {bad[0]} has e8m0 scale byte 0xFF (2^127 in gguf-py, "
                     "whose own quantizer never writes it), which Hurray forbids", FIX_REQUANT)
    tiny = np.flatnonzero(e == 0)  # forbidden in Hurray; 0x01 gives the same zeros
    if tiny.size and codes[tiny].any():
        raise refuse(src, entry, f"block {tiny[np.flatnonzero(codes[tiny].any(axis=1))[0]]} "
                     "has e8m0 scale byte 0x00 and nonzero codes: Hurray forbids 0x00, and "
                     "only an all-zero block is re-encoded (as 0x01)", FIX_REQUANT)
    e[tiny] = 1
    quant = MXFP(max(len(entry.shape) - 1, 0), 32, 1)
    desc = TensorDescriptor(by_name("float4_e2m1"), entry.shape, RowMajor(),
                            (BufferHandle(codes.nbytes, 64), BufferHandle(e.nbytes, 64)),
                            quantization=quant)

    def expected() -> np.ndarray:  # gguf-py's e8m0_to_fp32_half times its doubled table
        x = blocks[:, :1].astype(np.uint32)
        d = np.where(x < 2, np.uint32(0x00200000) << x, (x - 1) << np.uint32(23))
        nib = np.concatenate([blocks[:, 1:] & 0x0F, blocks[:, 1:] >> 4], axis=1)
        table = np.array((0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12), np.int8)
        return d.view(np.float32) * table[nib].astype(np.float32)
    return Converted(assemble(desc, [codes.reshape(-1), e]), _shaped(entry, expected))


# GGML type -> (elements per block, block bytes, mapping).
KQUANTS: dict[str, tuple[int, int, Callable[[SourceFile, SourceTensor, np.ndarray],
                                            Converted]]] = {
    "Q6_K": (256, 210, _KQuant(210, 256, 16, "int8", _q6_k, None, ZERO_CODES["Q6_K"]).convert),
    "Q3_K": (256, 110, _KQuant(110, 256, 16, "int4", _q3_k, None, ZERO_CODES["Q3_K"]).convert),
    "Q2_K": (256, 84, _KQuant(84, 256, 16, "uint2", _q2_k).convert),
    "Q4_K": (256, 144, _KQuant(144, 256, 32, "uint4", _q4_k, _q4_k_scales).convert),
    "Q5_K": (256, 176, _KQuant(176, 256, 32, "uint8", _q5_k).convert),
    "IQ4_NL": (32, 18, _KQuant(18, 32, 32, "int8", _iq4_nl).convert),
    "IQ4_XS": (256, 136, _KQuant(136, 256, 32, "int8", _iq4_xs, None,
                                 ZERO_CODES["IQ4_XS"]).convert),
    "MXFP4": (32, 17, _mxfp4),
}
