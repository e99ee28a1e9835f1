"""Quantization descriptors: the five v1 schemes and their wire codec (Hurray spec,
Quantization).

Checks here are intrinsic to the payload; checks against shape, dtype and buffers live in
``validate_quant.py``.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import ClassVar

from .reader import U32_MAX, Reader, Writer, fail

SYMMETRIC = 0x0001
SCALE_TYPE_SIZES = {0x01: 2, 0x02: 2, 0x03: 4}  # f16, bf16, f32
_FIX_LEN = "write quantization_length as the scheme's payload size (16/20/24/16/16 bytes)."


def _at(base: int | None, rel: int) -> int | None:
    return None if base is None else base + rel


def _pow2(v: int) -> bool:
    return v > 0 and not v & (v - 1)


def _check_zp_index(q: PerChannelAffine | PerBlockAffine, base: int | None, rel: int) -> None:
    if q.scale_buffer_index == U32_MAX:
        fail("scale_buffer_index is 0xFFFFFFFF", "scale_buffer_index", _at(base, rel),
             "point scale_buffer_index at the scale buffer in the buffer table.")
    if q.zero_point_buffer_index == U32_MAX:
        fail("asymmetric scheme with zero_point_buffer_index 0xFFFFFFFF (use None for symmetric)",
             "zero_point_buffer_index", _at(base, rel + 4),
             "set SYMMETRIC and write 0xFFFFFFFF, or point at a zero-point buffer.")


@dataclass(frozen=True, slots=True)
class PerTensorAffine:
    """Scheme 0x01: ``x = scale * (q - zero_point)``; no parameter buffers.

    Attributes:
        scale: finite, non-zero f32.
        zero_point: i32 within the storage type's range.
        trailing: payload bytes after the 16-byte scheme body (kept for round-trip).
    """

    scale: float
    zero_point: int = 0
    trailing: bytes = b""
    SCHEME: ClassVar[int] = 0x01
    SIZE: ClassVar[int] = 16

    def check(self, base: int | None = None) -> None:
        """Check intrinsic rules; ``base`` is the payload's absolute offset."""
        if not math.isfinite(self.scale) or self.scale == 0.0:
            fail(f"per-tensor scale {self.scale!r} is not finite and non-zero", "scale",
                 _at(base, 4), "use a finite, non-zero f32 scale.")


@dataclass(frozen=True, slots=True)
class PerChannelAffine:
    """Scheme 0x02: one f32 scale (and i32 zero point unless symmetric) per ``shape[axis]``.

    Attributes:
        axis: the channel axis (< rank).
        scale_buffer_index: buffer holding ``shape[axis]`` f32 scales.
        zero_point_buffer_index: buffer of i32 zero points, or None when SYMMETRIC.
        scale_type_tag: 0x03 (f32) only in v1.
        trailing: extra payload bytes (kept for round-trip).
    """

    axis: int
    scale_buffer_index: int
    zero_point_buffer_index: int | None = None
    scale_type_tag: int = 0x03
    trailing: bytes = b""
    SCHEME: ClassVar[int] = 0x02
    SIZE: ClassVar[int] = 20

    @property
    def symmetric(self) -> bool:
        """True when there is no zero-point buffer."""
        return self.zero_point_buffer_index is None

    def check(self, base: int | None = None) -> None:
        """Check intrinsic rules; ``base`` is the payload's absolute offset."""
        _check_zp_index(self, base, 8)
        if self.scale_type_tag != 0x03:
            fail(f"per-channel scale_type_tag 0x{self.scale_type_tag:02X} is not 0x03 (f32)",
                 "scale_type_tag", _at(base, 16), "per-channel scales are f32 in v1.")


@dataclass(frozen=True, slots=True)
class PerBlockAffine:
    """Scheme 0x03: one scale (and i32 zero point unless symmetric) per block along ``axis``.

    Attributes:
        axis: the blocked axis.
        block_size: power of two >= 2.
        scale_buffer_index: buffer holding one ``scale_type`` entry per block.
        zero_point_buffer_index: buffer of i32 zero points, or None when SYMMETRIC.
        scale_type_tag: 0x01 f16, 0x02 bf16 or 0x03 f32.
        trailing: extra payload bytes (kept for round-trip).
    """

    axis: int
    block_size: int
    scale_buffer_index: int
    zero_point_buffer_index: int | None = None
    scale_type_tag: int = 0x03
    trailing: bytes = b""
    SCHEME: ClassVar[int] = 0x03
    SIZE: ClassVar[int] = 24

    @property
    def symmetric(self) -> bool:
        """True when there is no zero-point buffer."""
        return self.zero_point_buffer_index is None

    def check(self, base: int | None = None) -> None:
        """Check intrinsic rules; ``base`` is the payload's absolute offset."""
        if not _pow2(self.block_size) or self.block_size < 2:
            fail(f"per-block block_size {self.block_size} is not a power of two >= 2",
                 "block_size", _at(base, 8), "use a power-of-two block size such as 32 or 64.")
        _check_zp_index(self, base, 12)
        if self.scale_type_tag not in SCALE_TYPE_SIZES:
            fail(f"per-block scale_type_tag 0x{self.scale_type_tag:02X} is not f16/bf16/f32",
                 "scale_type_tag", _at(base, 20), "use 0x01 (f16), 0x02 (bf16) or 0x03 (f32).")


@dataclass(frozen=True, slots=True)
class NF4:
    """Scheme 0x04 (uint4 storage): ``x = absmax[b] * NF4[q]``.

    Attributes:
        axis: the blocked axis.
        block_size: power of two >= 8.
        scale_buffer_index: buffer of f32 absmax values, one per block.
        trailing: extra payload bytes (kept for round-trip).
    """

    axis: int
    block_size: int
    scale_buffer_index: int
    trailing: bytes = b""
    SCHEME: ClassVar[int] = 0x04
    SIZE: ClassVar[int] = 16

    def check(self, base: int | None = None) -> None:
        """Check intrinsic rules; ``base`` is the payload's absolute offset."""
        if not _pow2(self.block_size) or self.block_size < 8:
            fail(f"NF4 block_size {self.block_size} is not a power of two >= 8", "block_size",
                 _at(base, 8), "use block_size 64 or 128.")


@dataclass(frozen=True, slots=True)
class MXFP:
    """Scheme 0x05 (OCP microscaling): one float8_e8m0 scale byte per block.

    Attributes:
        axis: the blocked axis; ``shape[axis]`` must be a positive multiple of block_size.
        block_size: power of two in [16, 2048] (canonical 32).
        scale_buffer_index: buffer of e8m0 scale bytes.
        trailing: extra payload bytes (kept for round-trip).
    """

    axis: int
    block_size: int
    scale_buffer_index: int
    trailing: bytes = b""
    SCHEME: ClassVar[int] = 0x05
    SIZE: ClassVar[int] = 16

    def check(self, base: int | None = None) -> None:
        """Check intrinsic rules; ``base`` is the payload's absolute offset."""
        if not _pow2(self.block_size) or not 16 <= self.block_size <= 2048:
            fail(f"MXFP block_size {self.block_size} is not a power of two in [16, 2048]",
                 "block_size", _at(base, 8), "use the canonical MX block size 32.")


@dataclass(frozen=True, slots=True)
class RawQuantization:
    """An unrecognised scheme accepted by a permissive reader; data must not be dequantized."""

    payload: bytes

    @property
    def SCHEME(self) -> int:  # noqa: N802
        """The scheme tag (first payload byte)."""
        return self.payload[0]

    def check(self, base: int | None = None) -> None:
        """Check the 4-byte header is present."""
        if len(self.payload) < 4:
            fail("quantization payload shorter than its 4-byte header", "quantization_length",
                 base, _FIX_LEN)


Quantization = PerTensorAffine | PerChannelAffine | PerBlockAffine | NF4 | MXFP | RawQuantization
SCHEMES = {c.SCHEME: c for c in (PerTensorAffine, PerChannelAffine, PerBlockAffine, NF4, MXFP)}
_ALLOWED_FLAGS = {0x01: 0, 0x02: SYMMETRIC, 0x03: SYMMETRIC, 0x04: 0, 0x05: 0}


def decode_quantization(r: Reader, permissive: bool) -> Quantization:
    """Read ``quantization_length`` and the payload at the reader's cursor.

    Raises:
        HurrayFormatError: on bad length, version, flags, tag or fields.
    """
    len_pos = r.pos
    length = r.u32("quantization_length")
    if length < 4:
        fail(f"quantization_length {length} is below the 4-byte scheme header",
             "quantization_length", len_pos, _FIX_LEN)
    base = r.need(length, "quantization")
    tag, version, flags = struct.unpack_from("<BBH", r.data, base)
    cls = SCHEMES.get(tag)
    if cls is None:
        if tag in (0x00, 0xFF) or not permissive:
            fail(f"quantization scheme_tag 0x{tag:02X} is invalid, reserved or private",
                 "scheme_tag", base, "use an assigned scheme 0x01-0x05 (permissive readers "
                 "may skip unknown schemes).")
        return RawQuantization(r.raw(length, "quantization"))
    if version != 1:
        fail(f"scheme_version {version} is not 1", "scheme_version", base + 1,
             "every v1 scheme is written with scheme_version 0x01.")
    if flags & ~_ALLOWED_FLAGS[tag]:
        fail(f"quantization flags 0x{flags:04X} set reserved bits", "quantization.flags",
             base + 2, "clear every quantization flag bit except SYMMETRIC where defined.")
    if length < cls.SIZE:
        fail(f"quantization_length {length} is shorter than scheme 0x{tag:02X}'s {cls.SIZE} "
             "bytes", "quantization_length", len_pos, _FIX_LEN)
    trailing = bytes(r.data[base + cls.SIZE:base + length])
    r.pos = base + 4
    q = _decode_body(r, tag, flags & SYMMETRIC, trailing)
    r.pos = base + length
    q.check(base)
    return q


def _decode_body(r: Reader, tag: int, sym: int, trailing: bytes) -> Quantization:
    if tag == 0x01:
        scale, zp = r.f32("scale"), r.i32("zero_point")
        r.zeros(4, "per_tensor._reserved")
        return PerTensorAffine(scale, zp, trailing)
    if tag in (0x04, 0x05):
        axis, block, sidx = r.u32("axis"), r.u32("block_size"), r.u32("scale_buffer_index")
        return (NF4 if tag == 0x04 else MXFP)(axis, block, sidx, trailing)
    axis = r.u32("axis")
    block = r.u32("block_size") if tag == 0x03 else 0
    sidx, zidx = r.u32("scale_buffer_index"), r.u32("zero_point_buffer_index")
    stype = r.u8("scale_type_tag")
    r.zeros(3, "quantization._reserved")
    if bool(sym) != (zidx == U32_MAX):
        fail(f"SYMMETRIC flag is {'set' if sym else 'clear'} but zero_point_buffer_index is "
             f"0x{zidx:08X}", "zero_point_buffer_index", r.pos - 8,
             "write 0xFFFFFFFF exactly when SYMMETRIC is set.")
    zp_index = None if sym else zidx
    if tag == 0x02:
        return PerChannelAffine(axis, sidx, zp_index, stype, trailing)
    return PerBlockAffine(axis, block, sidx, zp_index, stype, trailing)


def encode_quantization(w: Writer, q: Quantization) -> None:
    """Append ``quantization_length`` and the payload."""
    if isinstance(q, RawQuantization):
        w.u32(len(q.payload))
        w.raw(q.payload)
        return
    w.u32(q.SIZE + len(q.trailing))
    sym = getattr(q, "symmetric", False)
    w.raw(struct.pack("<BBH", q.SCHEME, 1, SYMMETRIC if sym else 0))
    if isinstance(q, PerTensorAffine):
        w.f32(q.scale)
        w.i32(q.zero_point)
        w.zeros(4)
    elif isinstance(q, (NF4, MXFP)):
        w.raw(struct.pack("<III", q.axis, q.block_size, q.scale_buffer_index))
    else:
        w.u32(q.axis)
        if isinstance(q, PerBlockAffine):
            w.u32(q.block_size)
        zidx = U32_MAX if q.zero_point_buffer_index is None else q.zero_point_buffer_index
        w.raw(struct.pack("<IIB3x", q.scale_buffer_index, zidx, q.scale_type_tag))
    w.raw(q.trailing)
