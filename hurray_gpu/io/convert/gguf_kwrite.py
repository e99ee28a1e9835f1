"""The importer's forms of GGML's K-quants (Q2_K..Q6_K), IQ4_XS and MXFP4 back to GGML blocks:
the inverse of :mod:`ggml_kquants` (docs/importing.md).

The importer keeps each sub-block's f32 product ``d * sc`` (and ``dmin * m``), not the f16
``d`` and the integer ``sc``. Per super-block the exporter takes the sub-block of largest
magnitude, tries its integer scale from the range's extreme inwards (negative first on ties,
as llama.cpp's quantizers put the largest sub-block at -128 / -32 / 63 / 15), derives ``d``,
and keeps the first candidate that is an f16 and rebuilds every product of the super-block
bit for bit with in-range integers. A tensor where no candidate does is refused by name.

A zero sub-block scale (stored as +-1 over zero codes, or over its own codes under an
overlay-replace of its signed zeros) is rebuilt as ``sc = 0`` with the codes kept, or, where
the importer had to zero them, the codes a quantizer writes for that sign of zero (its
all-zero bytes where their sign fits). A super-block whose every scale is zero gets
``d = +0`` and llama.cpp's all-zero scale bytes, as its quantizers write for zero blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from hurray_gpu.io.convert.ggml_kquants import IQ4_VALUES, ZERO_CODES

__all__ = ["KBLOCKS", "Unfit", "encode_kquant", "kquant_kind", "per_block"]

_ROW_MAJOR = 0x01
_IQ4_INDEX = np.full(256, 255, np.uint8)  # int8 table value (as a byte) -> 4-bit index
_IQ4_INDEX[IQ4_VALUES.view(np.uint8)] = np.arange(16, dtype=np.uint8)


class Unfit(ValueError):
    """The tensor has a K-quant/IQ4_XS/MXFP4 form whose values GGML's block cannot rebuild
    (the message says why)."""


class _Spec(NamedTuple):
    """One GGML type: elements and bytes per block, elements per sub-block, Hurray storage,
    integer scale range, min range (types with mins), scale of raw byte 0 and the codes a
    zero sub-block gets (for -0 relative to its scale's sign, for +0)."""

    per: int
    size: int
    sub: int
    storage: str
    lo: int
    hi: int
    mins: bool
    sc0: int
    q_neg: int
    q_pos: int


KBLOCKS = {"Q6_K": _Spec(256, 210, 16, "int8", -128, 127, False, 0, *ZERO_CODES["Q6_K"]),
           "Q3_K": _Spec(256, 110, 16, "int4", -32, 31, False, -32, *ZERO_CODES["Q3_K"]),
           "Q2_K": _Spec(256, 84, 16, "uint2", 0, 15, True, 0, 0, 0),
           "Q4_K": _Spec(256, 144, 32, "uint4", 0, 63, True, 0, 0, 0),
           "Q5_K": _Spec(256, 176, 32, "uint8", 0, 63, True, 0, 0, 0),
           "IQ4_XS": _Spec(256, 136, 32, "int8", -32, 31, False, -32, *ZERO_CODES["IQ4_XS"])}
_BITS = {"int8": 8, "uint8": 8, "int4": 4, "uint4": 4, "uint2": 2}


def per_block(t: Any, storage: tuple[str, ...], block: int = 32, scale: int = 0x01) -> bool:
    """Scheme 0x03 along the last axis, ``block`` elements, symmetric, ``scale``-tagged scales
    (0x01 f16, 0x03 f32), row-major, not composite: the importer's form of GGML's ``d * q``."""
    desc, quant = t.descriptor, t.descriptor.quantization
    return (quant is not None and quant.SCHEME == 0x03 and t.dtype.name in storage
            and not t.is_composite and desc.layout_tag == _ROW_MAJOR and len(t.shape) >= 1
            and quant.axis == len(t.shape) - 1 and quant.block_size == block and quant.symmetric
            and quant.scale_type_tag == scale and desc.byte_offset == 0
            and quant.scale_buffer_index == 1)


class _Form(NamedTuple):
    """A recognised form: the base member, the mins correction (or None) and the replaced
    sub-blocks' ``(index, f32 values)``."""

    base: Any
    corr: Any
    replaced: list[tuple[int, np.ndarray]]


def _members(t: Any) -> tuple[Any, list[Any]] | None:
    layout = t.descriptor.layout
    if not t.is_composite or layout.composition_rule != 2 or t.dtype.name != "float32":
        return None
    members = list(t.members)
    if not members or members[0].shape != t.shape:
        return None
    return members[0], members[1:]


def _form(t: Any, spec: _Spec) -> _Form | None:
    """``t`` in the importer's form of ``spec``'s type, or None."""
    if t.is_composite:
        got = _members(t)
        if got is None:
            return None
        base, rest = got
        if t.descriptor.layout.combine_op == 2 and spec.mins and len(rest) == 1 and per_block(
                base, (spec.storage,), spec.sub, 0x03) and per_block(
                rest[0], ("uint2",), spec.sub, 0x03) and rest[0].shape == t.shape:
            return _Form(base, rest[0], [])
        if t.descriptor.layout.combine_op != 1 or spec.mins or not per_block(
                base, (spec.storage,), spec.sub, 0x03):
            return None
        replaced = [r for r in (_replaced(t.shape, m, spec.sub) for m in rest) if r is not None]
        return _Form(base, None, replaced) if len(replaced) == len(rest) else None
    if spec.mins or not per_block(t, (spec.storage,), spec.sub, 0x03):
        return None
    return _Form(t, None, [])


def _replaced(shape: tuple[int, ...], m: Any, sub: int) -> tuple[int, np.ndarray] | None:
    """A replace member covering one sub-block: (its index, its f32 values), or None."""
    desc, shard = m.descriptor, m.descriptor.shard
    box = (1,) * (len(shape) - 1) + (sub,)
    if (m.is_composite or desc.quantization is not None or m.dtype.name != "float32"
            or desc.layout_tag != _ROW_MAJOR or tuple(m.shape) != box or shard is None
            or desc.byte_offset != 0 or shard.shard_offset[-1] % sub):
        return None
    values = np.ascontiguousarray(m.numpy()).reshape(-1)
    return int(np.ravel_multi_index(shard.shard_offset, shape)) // sub, values


def kquant_kind(t: Any) -> str | None:
    """The GGML type whose importer form ``t`` has (``MXFP4``, ``Q2_K``..``Q6_K``,
    ``IQ4_XS``), or None; :func:`encode_kquant` may still refuse its values."""
    if any(d is None for d in t.shape) or not t.shape:
        return None
    quant = t.descriptor.quantization
    if (not t.is_composite and quant is not None and quant.SCHEME == 0x05
            and t.dtype.name == "float4_e2m1" and quant.block_size == 32
            and quant.axis == len(t.shape) - 1 and t.descriptor.layout_tag == _ROW_MAJOR
            and quant.scale_buffer_index == 1
            and t.descriptor.byte_offset == 0 and t.shape[-1] % 32 == 0):
        return "MXFP4"
    if t.shape[-1] % 256:
        return None
    return next((k for k, s in KBLOCKS.items() if _form(t, s) is not None), None)


def _unpack(raw: np.ndarray, storage: str, count: int) -> np.ndarray:
    """Hurray's packed codes (element i at bit ``i * bits``, LSB first) as int8/uint8 values."""
    bits = _BITS[storage]
    if raw.size * 8 < count * bits:
        raise Unfit(f"its codes buffer holds {raw.size} bytes, not the {count * bits // 8} "
                    "its shape needs")
    signed = storage[0] == "i"
    if bits == 8:
        return raw[:count].view(np.int8 if signed else np.uint8)
    shifts = np.arange(0, 8, bits, dtype=np.uint8)
    v = ((raw[:count * bits // 8, None] >> shifts) & np.uint8((1 << bits) - 1)).reshape(-1)
    if signed:  # two's complement of ``bits`` bits, sign-extended
        half = np.uint8(1 << (bits - 1))
        return (v ^ half).view(np.int8) - np.int8(half)
    return v


def _scales(t: Any, count: int) -> np.ndarray:
    raw = t.buffers[1].numpy()
    if raw.size < count * 4:
        raise Unfit(f"its scale buffer holds {raw.size} bytes, not the {count * 4} its shape "
                    "needs")
    s = raw[:count * 4].view("<f4").astype(np.float32)
    if not np.isfinite(s).all() or (s == 0).any():
        raise Unfit("it has infinite, NaN or zero sub-block scales")
    return s


def _candidates(lo: int, hi: int) -> list[int]:
    """Integer scales from the range's extreme magnitude inwards, negative first on ties."""
    out = []
    for k in range(max(-lo, hi), 0, -1):
        out += [c for c in (-k, k) if lo <= c <= hi]
    return out


def _factor(v: np.ndarray, zero: np.ndarray, lo: int, hi: int,
            what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(f16 ``d`` (n,), integer scales (n, subs), live mask (n,)) with ``d * sc == v`` in f32
    bit for bit on every sub-block not in ``zero`` (whose scale is 0); rows with no such
    sub-block are not live (``d`` = +0 there, for the caller to settle)."""
    n = v.shape[0]
    live_v = np.where(zero, np.float32(0), np.abs(v))
    ref = live_v.argmax(axis=1)
    vref = v[np.arange(n), ref]
    live = live_v.max(axis=1) > 0
    d, sc = np.zeros(n, np.float16), np.zeros(v.shape, np.int16)
    todo = np.flatnonzero(live)
    for c in _candidates(lo, hi):
        if not todo.size:
            break
        with np.errstate(all="ignore"):
            dd = (vref[todo] / np.float32(c)).astype(np.float16)
            d32 = dd.astype(np.float32)[:, None]
            s = np.where(zero[todo], np.float32(0), np.rint(v[todo] / d32))
            ok = (np.isfinite(d32[:, 0]) & (d32[:, 0] * np.float32(c) == vref[todo])
                  & ((s >= lo) & (s <= hi) & ((d32 * s == v[todo]) | zero[todo])).all(axis=1))
        d[todo[ok]], sc[todo[ok]] = dd[ok], s[ok]
        todo = todo[~ok]
    if todo.size:
        raise Unfit(f"super-block {todo[0]}'s {what} ({v[todo[0]].tolist()}) are not one f16 "
                    f"times integers in [{lo}, {hi}], so the source's bytes cannot be rebuilt")
    return d, sc, live


def _signs_agree(bad: np.ndarray, what: str) -> None:
    """Refuse when ``bad`` (super-blocks first) marks a zero of a sign GGML cannot give."""
    rows = np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))
    if rows.size:
        raise Unfit(f"super-block {rows[0]} has a zero {what} whose sign no GGML block with "
                    "its other scales gives")


def _zero_codes(spec: _Spec, q: np.ndarray, d: np.ndarray, sc: np.ndarray, sign: np.ndarray,
                repaired: np.ndarray) -> None:
    """Codes, in place, for the zero sub-blocks whose codes the importer zeroed: ``sign`` is
    the sign of their zeros, the product ``d * sc``'s sign decides which code gives it."""
    product = np.signbit(d.astype(np.float32))[:, None] ^ (sc < 0)
    flip = sign ^ product  # zeros of the other sign than the product: a negative code
    if spec.lo >= 0:
        _signs_agree(flip & repaired, "scale")
    code = np.where(flip, spec.q_neg, spec.q_pos).astype(q.dtype)
    q[repaired] = np.broadcast_to(code[..., None], q.shape)[repaired]


def _settle_dead(spec: _Spec, d: np.ndarray, sc: np.ndarray, live: np.ndarray,
                 sign: np.ndarray, known: np.ndarray) -> None:
    """Super-blocks with every scale zero: ``d = +0`` and llama.cpp's all-zero scale bytes.
    Where replaced sub-blocks record their products' signs (``known``, ``sign``), ``d``'s
    sign follows the first, and one of the other sign gets the other choice (0 or -1)."""
    dead = np.flatnonzero(~live)
    if not dead.size:
        return
    neg0 = spec.sc0 < 0  # the sign llama.cpp's zero scale byte gives the product
    first = known[dead].argmax(axis=1)
    has = known[dead, first]
    neg_d = has & (sign[dead, first] ^ neg0)
    d[dead] = np.where(neg_d, np.float16(-0.0), np.float16(0.0))
    other = known[dead] & (sign[dead] != (neg_d ^ neg0)[:, None])
    sc[dead] = np.where(other, 0 if neg0 else -1, spec.sc0)


def encode_kquant(kind: str, t: Any) -> np.ndarray:
    """GGML blocks (one row of bytes each) of ``t``, which :func:`kquant_kind` named ``kind``.

    Raises:
        Unfit: the values cannot be GGML's bytes (the message says why).
    """
    if kind == "MXFP4":
        return _mxfp4(t)
    spec = KBLOCKS[kind]
    form = _form(t, spec)
    if form is None:
        raise Unfit(f"it is no longer the importer's {kind} form")
    n = math.prod(t.shape) // spec.per
    subs = spec.per // spec.sub
    q = _unpack(form.base.buffers[0].numpy(), spec.storage, n * spec.per).reshape(n, subs, -1)
    v = _scales(form.base, n * subs).reshape(n, subs)
    sign = np.signbit(v)
    replaced = np.zeros((n, subs), bool)
    for index, values in form.replaced:
        if not 0 <= index < n * subs:
            raise Unfit(f"a replaced sub-block {index} lies outside the tensor")
        want = np.where(sign.reshape(-1)[index] ^ (q.reshape(-1, spec.sub)[index] < 0),
                        np.uint32(1 << 31), np.uint32(0))
        if not np.array_equal(values.view("<u4"), want):
            raise Unfit(f"replaced sub-block {index} holds values other than the signed zeros "
                        "a zero GGML scale gives its codes")
        replaced.reshape(-1)[index] = True
    repaired = ~replaced & (np.abs(v) == 1) & ~q.any(axis=2)
    zero = replaced | repaired
    d, sc, live = _factor(v, zero, spec.lo, spec.hi, "sub-block scales")
    _settle_dead(spec, d, sc, live, sign, replaced)
    product = np.signbit(d.astype(np.float32))[:, None] ^ (sc < 0)
    _signs_agree(live[:, None] & replaced & (sign != product), "scale")
    _zero_codes(spec, q, d, sc, sign, repaired)
    parts = [d.view("<u2")]
    if spec.mins:
        parts += _mins(form.corr, spec, n)
    return _LAYOUTS[kind](q.reshape(n, -1), sc, *parts)


def _mins(corr: Any, spec: _Spec, n: int) -> list[np.ndarray]:
    """(f16 ``dmin`` bits, integer mins) from the correction: codes all 1 with scale
    ``-(dmin * m)``, or all 0 with scale +-1 where ``dmin * m`` is a signed zero."""
    subs = spec.per // spec.sub
    raw = corr.buffers[0].numpy()
    if raw.size < n * spec.per // 4:
        raise Unfit(f"its mins correction holds {raw.size} bytes, not {n * spec.per // 4}")
    codes = raw[:n * spec.per // 4].reshape(n, subs, -1)  # four uint2 codes a byte
    scale = _scales(corr, n * subs).reshape(n, subs)
    ones = (codes == 0x55).all(axis=2)
    zeros = (codes == 0).all(axis=2) & (np.abs(scale) == 1)
    if not (ones | zeros).all():
        raise Unfit("its mins correction is not one code per sub-block")
    d, m, live = _factor(-scale, zeros, 0, spec.hi, "sub-block mins")
    sign = ~np.signbit(scale)  # the sign of dmin * m where it is a zero
    neg_d = np.where(live, np.signbit(d.astype(np.float32)), sign[:, 0])
    _signs_agree(zeros & (sign != neg_d[:, None]), "min")
    d = np.where(neg_d & ~live, np.float16(-0.0), d)
    return [d.view("<u2"), m]


def _fold(x: np.ndarray, steps: tuple[int, ...]) -> np.ndarray:
    """The inverse of ggml_kquants' ``_shifts``: ``x`` (n, k, len(steps), group) of small
    fields -> (n, k * group) bytes, field i shifted left by ``steps[i]``."""
    x = x.astype(np.uint8)
    out = x[:, :, 0].copy()
    for i, s in enumerate(steps[1:], 1):
        out |= x[:, :, i] << np.uint8(s)
    return out.reshape(x.shape[0], -1)


def _u8(*arrays: np.ndarray) -> np.ndarray:
    n = arrays[0].shape[0]
    return np.concatenate([np.ascontiguousarray(a).reshape(n, -1).view(np.uint8)
                           if a.dtype.itemsize > 1 else a.reshape(n, -1).astype(np.uint8)
                           for a in arrays], axis=1)


def _q6_k(q: np.ndarray, sc: np.ndarray, d: np.ndarray) -> np.ndarray:
    n, raw = q.shape[0], (q + 32).astype(np.uint8)
    return _u8(_fold((raw & 15).reshape(n, 2, 2, 64), (0, 4)),
               _fold((raw >> 4).reshape(n, 2, 4, 32), (0, 2, 4, 6)),
               sc.astype(np.int8).view(np.uint8), d)


def _q3_k(q: np.ndarray, sc: np.ndarray, d: np.ndarray) -> np.ndarray:
    n, raw = q.shape[0], (sc + 32).astype(np.uint8)
    return _u8(_fold((q >= 0).reshape(n, 1, 8, 32), tuple(range(8))),
               _fold((q & 3).reshape(n, 2, 4, 32), (0, 2, 4, 6)),
               _fold((raw & 15).reshape(n, 1, 2, 8), (0, 4)),
               _fold((raw >> 4).reshape(n, 1, 4, 4), (0, 2, 4, 6)), d)


def _q2_k(q: np.ndarray, sc: np.ndarray, d: np.ndarray, dmin: np.ndarray,
          m: np.ndarray) -> np.ndarray:
    n = q.shape[0]
    return _u8((sc | (m << 4)).astype(np.uint8),
               _fold(q.reshape(n, 2, 4, 32), (0, 2, 4, 6)), d, dmin)


def _k_scales(sc: np.ndarray, mn: np.ndarray) -> np.ndarray:
    """Q4_K/Q5_K's eight 6-bit scales and mins -> their 12 packed bytes."""
    sc, mn = sc.astype(np.uint8), mn.astype(np.uint8)
    return np.concatenate([(sc[:, :4] & 63) | ((sc[:, 4:] >> 4) << 6),
                           (mn[:, :4] & 63) | ((mn[:, 4:] >> 4) << 6),
                           (sc[:, 4:] & 15) | ((mn[:, 4:] & 15) << 4)], axis=1)


def _q4_k(q: np.ndarray, sc: np.ndarray, d: np.ndarray, dmin: np.ndarray,
          m: np.ndarray) -> np.ndarray:
    n = q.shape[0]
    return _u8(d, dmin, _k_scales(sc, m), _fold(q.reshape(n, 4, 2, 32), (0, 4)))


def _q5_k(q: np.ndarray, sc: np.ndarray, d: np.ndarray, dmin: np.ndarray,
          m: np.ndarray) -> np.ndarray:
    n = q.shape[0]
    return _u8(d, dmin, _k_scales(sc, m), _fold((q >> 4).reshape(n, 1, 8, 32), tuple(range(8))),
               _fold((q & 15).reshape(n, 4, 2, 32), (0, 4)))


def _iq4_xs(q: np.ndarray, sc: np.ndarray, d: np.ndarray) -> np.ndarray:
    n, raw = q.shape[0], (sc + 32).astype(np.uint16)
    index = _IQ4_INDEX[q.astype(np.int8).view(np.uint8)]
    if (index == 255).any():
        raise Unfit("a code is not an IQ4 table value")
    high = ((raw >> 4) << np.arange(0, 16, 2, dtype=np.uint16)).sum(axis=1, dtype=np.uint16)
    return _u8(d, high.astype("<u2"), _fold((raw & 15).reshape(n, 4, 2, 1), (0, 4)),
               _fold(index.reshape(n, 8, 2, 16), (0, 4)))


_LAYOUTS: dict[str, Callable[..., np.ndarray]] = {
    "Q6_K": _q6_k, "Q3_K": _q3_k, "Q2_K": _q2_k, "Q4_K": _q4_k, "Q5_K": _q5_k,
    "IQ4_XS": _iq4_xs}


def _mxfp4(t: Any) -> np.ndarray:
    """MXFP: e8m0 bytes and e2m1 codes -> GGML's blocks (``e``, element j the low nibble of
    byte j and j + 16 its high one). Code 8 (-0) is refused: gguf-py decodes it as +0. An
    all-zero block under scale byte 0x01 gets 0x00, as gguf-py's quantizer writes it."""
    n = math.prod(t.shape) // 32
    codes, e = t.buffers[0].numpy(), t.buffers[1].numpy()
    if codes.size < n * 16 or e.size < n:
        raise Unfit(f"its buffers hold {codes.size} and {e.size} bytes, not {n * 16} and {n}")
    nib = _unpack(codes[:n * 16], "uint4", n * 32).reshape(n, 32).astype(np.uint8)
    if (nib == 8).any():
        raise Unfit("it holds e2m1 code 8 (-0.0), which gguf-py's MXFP4 decodes as +0.0")
    e = e[:n].copy()
    if (e == 0xFF).any():
        raise Unfit("it holds e8m0 scale byte 0xFF (NaN)")
    e[(e == 1) & ~nib.any(axis=1)] = 0
    return _u8(e, nib[:, :16] | (nib[:, 16:] << 4))
