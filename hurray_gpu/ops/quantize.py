"""Quantizing host arrays into Hurray tensors: ``quantize`` (every scheme, with its rounding
rules) and the builders the tests and examples use (``quantized_tensor``, ``random_quantized``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hurray_gpu.errors import ArgumentTypeError, HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
from hurray_gpu.format.descriptor.quant import (
    MXFP,
    NF4,
    PerBlockAffine,
    PerChannelAffine,
    PerTensorAffine,
)
from hurray_gpu.format.dtypes import by_name, value_table
from hurray_gpu.format.packing import pack
from hurray_gpu.ops.plan import nf4_table
from hurray_gpu.parts import assemble

__all__ = [
    "DEFAULT_STORAGE", "SCALE_TYPE_TAGS", "SCHEMES", "STORAGE_TYPES", "quantize",
    "quantized_tensor", "random_quantized", "random_values",
]


SCALE_TYPE_TAGS = {"float16": 0x01, "bfloat16": 0x02, "float32": 0x03}
SCHEMES = ("per_tensor", "per_channel", "per_block", "nf4", "mxfp")


def _param_bytes(scales: Any, zero_points: Any) -> tuple[bytes, bytes | None]:
    scale_bytes = np.ascontiguousarray(scales).tobytes()
    if zero_points is None:
        return scale_bytes, None
    return scale_bytes, np.asarray(zero_points, np.int32).astype("<i4").tobytes()


def _quant(scheme: str, axis: int, block_size: int, scale_type: str, symmetric: bool,
           shared: bool, scale: float, zero_point: int) -> Any:
    zidx = None if symmetric else (1 if shared else 2)
    if scheme == "per_tensor":
        return PerTensorAffine(scale, zero_point)
    if scheme == "per_channel":
        return PerChannelAffine(axis, 1, zidx)
    if scheme == "per_block":
        return PerBlockAffine(axis, block_size, 1, zidx, SCALE_TYPE_TAGS[scale_type])
    if scheme == "nf4":
        return NF4(axis, block_size, 1)
    if scheme == "mxfp":
        return MXFP(axis, block_size, 1)
    raise UnsupportedOpError(f"unknown scheme {scheme!r}", fix=f"use one of {SCHEMES}.")


def quantized_tensor(values: Any, storage: str, scheme: str, *, axis: int = 0,
                     block_size: int = 32, scales: Any = None, zero_points: Any = None,
                     scale: float = 1.0, zero_point: int = 0, scale_type: str = "float32",
                     shared: bool = False) -> Any:
    """Build a valid quantized row-major host Tensor.

    Args:
        values: storage values (any array-like the storage dtype accepts), in logical shape.
        storage: the storage type name (``"int4"``, ``"float8_e4m3"``...).
        scheme: ``"per_tensor"``, ``"per_channel"``, ``"per_block"``, ``"nf4"`` or ``"mxfp"``.
        axis, block_size: the quantization axis and block size (blocked schemes).
        scales: the scale array (f32; f16/bf16 allowed for per-block; uint8 e8m0 codes for
            MXFP), in parameter-index order.
        zero_points: int32 zero points, or None for a symmetric scheme.
        scale, zero_point: the per-tensor parameters.
        scale_type: per-block scale type name (``"float32"``, ``"float16"``, ``"bfloat16"``).
        shared: store scales and zero points in one ``[scales | zero_points]`` buffer.

    Returns:
        The Tensor (validated by its constructor).

    Raises:
        HurrayFormatError: the parts break a rule of the spec.
        UnsupportedOpError: an unknown scheme.
    """
    dtype = by_name(storage)
    arr = np.asarray(values)
    data = pack(arr, dtype)
    quant = _quant(scheme, axis, block_size, scale_type, zero_points is None, shared, scale,
                   zero_point)
    buffers = [data]
    if scheme != "per_tensor":
        scale_bytes, zp_bytes = _param_bytes(scales, zero_points)
        if zp_bytes is not None and shared:
            buffers.append(np.frombuffer(scale_bytes + zp_bytes, np.uint8))
        else:
            buffers += [np.frombuffer(b, np.uint8) for b in (scale_bytes, zp_bytes)
                        if b is not None]
    handles = tuple(BufferHandle(len(b), 64) for b in buffers)
    desc = TensorDescriptor(dtype, tuple(int(d) for d in arr.shape), RowMajor(), handles,
                            quantization=quant)
    return assemble(desc, buffers)


def random_values(rng: np.random.Generator, storage: str, shape: tuple[int, ...]) -> np.ndarray:
    """Uniformly random storage values of every code (NaN and Inf codes included)."""
    dtype = by_name(storage)
    if dtype.kind in ("int", "uint", "bool"):
        if dtype.kind == "bool":
            return rng.integers(0, 2, size=shape).astype(bool)
        info = (-(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1) if dtype.signed \
            else (0, (1 << dtype.bits) - 1)
        return rng.integers(info[0], info[1], size=shape, endpoint=True).astype(dtype.numpy)
    target = np.dtype(dtype.numpy)
    codes = rng.integers(0, 1 << dtype.bits, size=shape)
    if storage == "float8_e8m0":
        codes = np.clip(codes, 1, 254)
    if dtype.bits == 8:
        return codes.astype(np.uint8).view(target)
    # 4- and 6-bit floats have no NaN/Inf: every code is a finite value.
    return value_table(dtype)[codes].astype(target)


def _random_scales(rng: np.random.Generator, count: int, scale_type: str) -> np.ndarray:
    mags = np.exp2(rng.uniform(-20.0, 6.0, count)) * rng.choice([-1.0, 1.0], count)
    scales = mags.astype(scale_type if scale_type != "bfloat16" else np.float32)
    if scale_type == "bfloat16":
        scales = scales.astype(by_name("bfloat16").numpy)
    scales[scales == 0] = 1
    return scales


def random_quantized(rng: np.random.Generator, scheme: str, storage: str,
                     shape: tuple[int, ...], *, axis: int = 0, block_size: int = 32,
                     symmetric: bool = False, scale_type: str = "float32",
                     shared: bool = False) -> Any:
    """A random valid quantized Tensor: random codes, finite non-zero scales, zero points in
    range, e8m0 scales in 1..254 (both extremes included when there are enough blocks)."""
    values = random_values(rng, storage, shape)
    dtype = by_name(storage)
    size = shape[axis] if shape else 1
    others = int(np.prod(shape)) // max(1, size) if shape else 1
    count = {"per_tensor": 0, "per_channel": size}.get(
        scheme, -(-size // block_size) * others)
    kw: dict[str, Any] = {"axis": axis, "block_size": block_size, "scale_type": scale_type,
                          "shared": shared}
    lo, hi = ((-(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1) if dtype.signed
              else (0, min((1 << dtype.bits) - 1, (1 << 31) - 1)))
    if scheme == "per_tensor":
        kw.update(scale=float(_random_scales(rng, 1, "float32")[0]),
                  zero_point=0 if symmetric else int(rng.integers(lo, hi, endpoint=True)))
    elif scheme in ("per_channel", "per_block"):
        kw["scales"] = _random_scales(rng, count, scale_type)
        if not symmetric:
            kw["zero_points"] = rng.integers(lo, hi, size=count, endpoint=True).astype(np.int32)
    elif scheme == "nf4":
        kw["scales"] = np.abs(_random_scales(rng, count, "float32"))
        kw["scales"][: min(count, 1)] = 0.0
    else:
        e8 = rng.integers(1, 255, size=count).astype(np.uint8)
        e8[: min(count, 2)] = (1, 254)[: min(count, 2)]
        kw["scales"] = e8
    return quantized_tensor(values, storage, scheme, **kw)


_AFFINE = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int4", "uint4", "int2",
           "uint2")
STORAGE_TYPES: dict[str, tuple[str, ...]] = {
    "per_tensor": _AFFINE,
    "per_channel": _AFFINE,
    "per_block": ("int8", "uint8", "int4", "uint4", "int2", "uint2"),
    "nf4": ("uint4",),
    "mxfp": ("float8_e4m3", "float8_e5m2", "float6_e2m3", "float6_e3m2", "float4_e2m1", "int8",
             "int4"),
}
DEFAULT_STORAGE = {"per_tensor": "int8", "per_channel": "int8", "per_block": "int8",
                   "nf4": "uint4", "mxfp": "float8_e4m3"}


def _bad(message: str, field: str, fix: str) -> HurrayFormatError:
    return HurrayFormatError(message, field=field, fix=fix)


def _qrange(storage: Any) -> tuple[int, int]:
    if storage.signed:
        return -(1 << (storage.bits - 1)), (1 << (storage.bits - 1)) - 1
    return 0, (1 << storage.bits) - 1


def _span(storage: Any, symmetric: bool) -> tuple[int, int]:
    """Codes the quantizer uses: ``q - zp`` is computed in i32 and wraps (Hurray spec,
    Zero-Point Convention), so 32-bit storage keeps every code and difference within the i32
    range."""
    qmin, qmax = _qrange(storage)
    if storage.bits < 32:
        return qmin, qmax
    if not storage.signed:
        return 0, (1 << 31) - 1
    return (qmin + 1, qmax) if symmetric else (-(1 << 30), (1 << 30) - 1)


def _elem_top(storage: Any) -> float:
    """The largest finite element value (MX), or the largest code of an integer type."""
    if storage.kind != "float":
        return float(_qrange(storage)[1])
    table = np.abs(value_table(storage).astype(np.float64))
    return float(table[np.isfinite(table)].max())


def _check_args(x: np.ndarray, scheme: str, storage: str, axis: int, block_size: int,
                scale_dtype: str) -> int:
    """Validate the arguments (before any work) and return the normalised axis."""
    if scheme not in SCHEMES:
        raise UnsupportedOpError(f"unknown scheme {scheme!r}", fix=f"use one of {SCHEMES}.")
    if storage not in STORAGE_TYPES[scheme]:
        raise UnsupportedOpError(f"{scheme} cannot store {storage!r}",
                                 fix=f"use one of {STORAGE_TYPES[scheme]}.")
    if scale_dtype not in SCALE_TYPE_TAGS or (scale_dtype != "float32"
                                              and scheme != "per_block"):
        raise UnsupportedOpError(f"scale_dtype {scale_dtype!r} is not allowed for {scheme}",
                                 fix="use float32 (float16/bfloat16 only for per_block).")
    if not np.all(np.isfinite(x)):
        raise _bad("the array holds NaN or infinite values", "array",
                   "quantize finite values only.")
    if scheme == "per_tensor":
        return 0
    if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
        raise _bad(f"axis {axis} is out of range for rank {x.ndim}", "axis",
                   "pick an axis of the array (blocked schemes need rank >= 1).")
    axis %= x.ndim
    if scheme == "per_channel":
        return axis
    size = x.shape[axis]
    low = {"per_block": 2, "nf4": 8, "mxfp": 16}[scheme]
    if block_size < low or block_size & (block_size - 1) or (scheme == "mxfp"
                                                              and block_size > 2048):
        raise _bad(f"block_size {block_size} is not a power of two in the {scheme} range",
                   "block_size", f"use a power of two >= {low}"
                   + (" and <= 2048." if scheme == "mxfp" else "."))
    if scheme == "mxfp" and (size == 0 or size % block_size):
        raise _bad(f"MXFP needs shape[axis] = {size} to be a positive multiple of "
                   f"block_size {block_size}", "block_size",
                   "pick a block size dividing the axis, or pad the array.")
    if 0 < size < block_size:
        raise _bad(f"block_size {block_size} exceeds shape[axis] = {size}", "block_size",
                   "use a block size <= the axis length.")
    return axis


class _Groups:
    """The array as 2-D ``(outer, S)`` rows with the axis last, and its parameter groups."""

    def __init__(self, x: np.ndarray, scheme: str, axis: int, block_size: int) -> None:
        self.shape, self.axis, self.scheme = x.shape, axis, scheme
        if scheme == "per_tensor":
            self.moved = x.reshape(1, -1)
        else:
            m = np.moveaxis(x, axis, -1)
            self.moved_shape = m.shape
            self.moved = m.reshape(-1, x.shape[axis]) if x.size else \
                np.zeros((math.prod(m.shape[:-1]), x.shape[axis]))
        self.k = block_size if scheme in ("per_block", "nf4", "mxfp") else 0
        outer, size = self.moved.shape
        self.nb = -(-size // self.k) if self.k else 0
        self.outer, self.size = outer, size

    def blocks(self) -> np.ndarray:
        """Values grouped per parameter: ``(nparam, group)`` with zero padding."""
        if self.scheme == "per_tensor":
            return self.moved.reshape(1, -1)
        if self.scheme == "per_channel":
            return self.moved.T
        pad = np.zeros((self.outer, self.nb * self.k))
        pad[:, : self.size] = self.moved
        return pad.reshape(self.outer * self.nb, self.k)

    def expand(self, params: np.ndarray) -> np.ndarray:
        """One parameter per element of the 2-D rows."""
        if self.scheme == "per_tensor":
            return np.broadcast_to(params.reshape(1, 1), self.moved.shape)
        if self.scheme == "per_channel":
            return np.broadcast_to(params.reshape(1, -1), self.moved.shape)
        per = np.repeat(params.reshape(self.outer, self.nb), self.k, axis=1)
        return per[:, : self.size]

    def restore(self, rows: np.ndarray) -> np.ndarray:
        """Rows back into the array's shape and axis order."""
        if self.scheme == "per_tensor":
            return rows.reshape(self.shape)
        return np.moveaxis(rows.reshape(self.moved_shape), -1, self.axis)


def _round_scales(scales: np.ndarray, scale_dtype: str) -> np.ndarray:
    """Scales stored in ``scale_dtype``: finite and non-zero after rounding."""
    import ml_dtypes  # its finfo knows bfloat16; loaded only when quantizing

    target = by_name(scale_dtype).numpy
    out = scales.astype(np.float32).astype(target)
    tiny = np.array(ml_dtypes.finfo(target).smallest_subnormal, target)
    out[out.astype(np.float64) == 0] = tiny
    if not np.all(np.isfinite(out.astype(np.float64))):
        raise _bad(f"a scale overflows {scale_dtype}", "scale_dtype",
                   "use float32 scales, or rescale the array.")
    return out


def _given(values: Any, count: int, name: str, dtype: Any) -> np.ndarray:
    arr = np.asarray(values, dtype=dtype).reshape(-1)
    if arr.size != count:
        raise _bad(f"{arr.size} {name} given, the scheme needs {count}", name,
                   f"pass one {name[:-1]} per parameter (in parameter-index order).")
    return arr


def _affine_params(g: _Groups, storage: Any, symmetric: bool, scale_dtype: str
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Scales (in ``scale_dtype``) and i32 zero points covering each group's range."""
    qmin, qmax = _span(storage, symmetric)
    blk = g.blocks()
    lo = np.minimum(blk.min(axis=1), 0) if blk.size else np.zeros(blk.shape[0])
    hi = np.maximum(blk.max(axis=1), 0) if blk.size else np.zeros(blk.shape[0])
    if symmetric:
        amax = np.maximum(hi, -lo) if storage.signed else hi
        scales = amax / qmax
    else:
        scales = (hi - lo) / (qmax - qmin)
    scales = np.where(scales > 0, scales, 1.0)
    stored = _round_scales(scales, scale_dtype)
    if symmetric:
        return stored, np.zeros(stored.size, np.int64)
    s64 = stored.astype(np.float64)
    zps = np.clip(np.rint(qmin - lo / s64), qmin, min(qmax, (1 << 31) - 1))
    return stored, zps.astype(np.int64)


def _affine_codes(g: _Groups, storage: Any, scales: np.ndarray, zps: np.ndarray,
                  symmetric: bool) -> np.ndarray:
    qmin, qmax = _span(storage, symmetric)
    s = g.expand(scales.astype(np.float32).astype(np.float64))
    z = g.expand(zps.astype(np.float64))
    q = np.clip(np.rint(g.moved / s) + z, qmin, qmax)
    return g.restore(q.astype(np.int64))


def _nf4(g: _Groups, absmax: Any) -> tuple[np.ndarray, np.ndarray]:
    """NF4 codes (nearest level, ties to the lower code) and f32 absmax per block."""
    nparam = g.outer * g.nb
    if absmax is None:
        blk = g.blocks()
        absmax = np.abs(blk).max(axis=1) if blk.size else np.zeros(nparam)
    scales = _given(absmax, nparam, "scales", np.float32)
    if not np.all(np.isfinite(scales)) or np.any(scales < 0):
        raise _bad("NF4 absmax values must be finite and >= 0", "scales",
                   "pass each block's absolute maximum.")
    levels = nf4_table().astype(np.float64)
    s = g.expand(scales.astype(np.float64))
    norm = np.divide(g.moved, s, out=np.zeros_like(g.moved, dtype=np.float64), where=s > 0)
    mids = (levels[1:] + levels[:-1]) / 2
    return g.restore(np.searchsorted(mids, norm, side="left")), scales


def _mx_exponents(g: _Groups, storage: Any) -> np.ndarray:
    """The smallest e with every |x| / 2**e within the element type's finite range."""
    top = _elem_top(storage)
    blk = g.blocks()
    amax = np.abs(blk).max(axis=1)
    with np.errstate(divide="ignore"):
        e = np.ceil(np.log2(np.where(amax > 0, amax, 1.0) / top))
    e = np.where(amax > 0, e, 0)
    if np.any(e > 127):
        raise _bad("a block's magnitude needs a shared exponent above 2**127", "array",
                   "rescale the array: e8m0 scales stop at 2**127.")
    return np.maximum(e, -126).astype(np.int64)


def _mxfp(g: _Groups, storage: Any, codes: Any) -> tuple[np.ndarray, np.ndarray]:
    """MXFP storage values and e8m0 scale codes (1..254)."""
    nparam = g.outer * g.nb
    if codes is None:
        e8 = (_mx_exponents(g, storage) + 127).astype(np.uint8)
    else:
        e8 = _given(codes, nparam, "scales", np.int64)
        if np.any((e8 < 1) | (e8 > 254)):
            raise _bad("float8_e8m0 scale codes must be in 1..254", "scales",
                       "0x00 and 0xFF are forbidden e8m0 codes.")
        e8 = e8.astype(np.uint8)
    scaled = g.moved / g.expand(np.exp2(e8.astype(np.float64) - 127))
    if storage.kind == "float":
        top = _elem_top(storage)
        vals = np.clip(scaled, -top, top).astype(np.dtype(storage.numpy))
    else:
        lo, hi = _qrange(storage)
        vals = np.clip(np.rint(scaled), lo, hi).astype(np.int64)
    return g.restore(vals), e8


def _affine(g: _Groups, storage: Any, *, symmetric: bool, scale_dtype: str, scales: Any,
            zero_points: Any, zero_point_bias: int) -> tuple[np.ndarray, np.ndarray,
                                                             np.ndarray]:
    nparam = {"per_tensor": 1, "per_channel": g.size}.get(g.scheme, g.outer * g.nb)
    if scales is None:
        if zero_points is not None:
            raise _bad("zero_points given without scales", "zero_points",
                       "pass both, or neither to compute them.")
        s, z = _affine_params(g, storage, symmetric, scale_dtype)
    else:
        raw = _given(scales, nparam, "scales", np.float64)
        if not np.all(np.isfinite(raw)) or np.any(raw == 0):
            raise _bad("scales must be finite and non-zero", "scales",
                       "pass finite, non-zero scales.")
        s = _round_scales(raw, scale_dtype)
        z = np.zeros(nparam, np.int64) if zero_points is None else \
            _given(zero_points, nparam, "zero_points", np.int64) + int(zero_point_bias)
    qmin, qmax = _qrange(storage)
    if np.any((z < qmin) | (z > min(qmax, (1 << 31) - 1))):
        raise _bad(f"a zero point lies outside the storage range [{qmin}, {qmax}]",
                   "zero_points", "check zero_point_bias (GPTQ stores zero points minus 1: "
                   "pass zero_point_bias=1).")
    return _affine_codes(g, storage, s, z, symmetric and zero_points is None), s, z


def quantize(array: Any, scheme: str = "per_block", *, axis: int = 0, block_size: int = 32,
             dtype: str | None = None, symmetric: bool = True, scale_dtype: str = "float32",
             zero_point_bias: int = 0, scales: Any = None, zero_points: Any = None,
             shared: bool = False) -> Any:
    """Quantize a float array into a valid quantized host Tensor (NumPy, round to nearest even).

    Affine schemes pick, per parameter group, ``scale = absmax / qmax`` (symmetric) or
    ``scale = (max(x, 0) - min(x, 0)) / (qmax - qmin)`` and ``zp = rint(qmin - min / scale)``
    (asymmetric), then ``q = clip(rint(x / scale) + zp)``; NF4 stores each block's absmax and
    the nearest level; MXFP picks the smallest shared exponent that keeps the block in the
    element type's finite range. Partial trailing blocks are padded with zeros for the
    statistics only.

    Args:
        array: float values (any array-like), finite.
        scheme: ``"per_tensor"``, ``"per_channel"``, ``"per_block"``, ``"nf4"`` or ``"mxfp"``.
        axis: the quantization axis (per-channel and blocked schemes; negative counts back).
        block_size: the block size (per_block >= 2, nf4 >= 8, mxfp 16..2048; powers of two).
        dtype: the storage type (default int8, uint4 for nf4, float8_e4m3 for mxfp).
        symmetric: affine schemes: zero points fixed at 0 (no zero-point buffer).
        scale_dtype: per_block scale type: ``"float32"``, ``"float16"`` or ``"bfloat16"``.
        zero_point_bias: added to given ``zero_points`` (GPTQ stores ``zp - 1``: pass 1).
        scales: import given parameters instead of computing them: affine scales, NF4
            absmax, or MXFP e8m0 codes, in parameter-index order.
        zero_points: with ``scales``: i32 zero points of an asymmetric affine scheme.
        shared: asymmetric per_channel/per_block: one ``[scales | zero_points]`` buffer.

    Returns:
        A row-major quantized Tensor whose dequantization approximates ``array``.

    Raises:
        UnsupportedOpError: an unknown scheme, a storage or scale type the scheme forbids.
        HurrayFormatError: non-finite input, a bad axis or block size, parameters of the
            wrong count or out of range, or a scale overflowing its type.
    """
    storage = dtype or DEFAULT_STORAGE.get(scheme, "")
    try:
        x = np.asarray(array, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ArgumentTypeError(f"quantize() needs real numbers, got {type(array).__name__} "
                                f"({exc})", fix="pass a float NumPy array (or a Tensor's "
                                "t.numpy()).") from None
    axis = _check_args(x, scheme, storage, axis, block_size, scale_dtype)
    st = by_name(storage)
    asym = not symmetric or zero_points is not None
    if shared and (not asym or scheme in ("per_tensor", "nf4", "mxfp")):
        raise _bad("a shared [scales | zero_points] buffer needs an asymmetric per_channel "
                   "or per_block scheme", "shared", "drop shared=True.")
    g = _Groups(x, scheme, axis, block_size)
    kw: dict[str, Any] = {"axis": axis, "block_size": block_size, "scale_type": scale_dtype,
                          "shared": shared}
    if scheme == "nf4":
        codes, kw["scales"] = _nf4(g, scales)
    elif scheme == "mxfp":
        codes, kw["scales"] = _mxfp(g, st, scales)
    else:
        codes, s, z = _affine(g, st, symmetric=not asym, scale_dtype=scale_dtype,
                              scales=scales, zero_points=zero_points,
                              zero_point_bias=zero_point_bias)
        if scheme == "per_tensor":
            kw.update(scale=float(s[0]), zero_point=int(z[0]))
        else:
            kw.update(scales=s, zero_points=z.astype(np.int32) if asym else None)
    if st.kind in ("int", "uint"):
        codes = codes.astype(st.numpy)
    return quantized_tensor(codes, storage, scheme, **kw)
