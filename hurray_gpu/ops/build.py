"""Assembling quantized host tensors from storage values and parameters (tests, benchmarks).

Writers use the Hurray spec's Buffer Table Placement Rules and docs/format.md, Parameter
buffers: scale = buffer 1, zero point = buffer 2, or one shared ``[scales | zero_points]`` buffer 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.errors import UnsupportedOpError
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

__all__ = ["SCALE_TYPE_TAGS", "SCHEMES", "quantized_tensor", "random_quantized",
           "random_values"]

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
    from hurray_gpu.tensor import Tensor

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
    return Tensor.from_parts(desc, buffers)


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
        import ml_dtypes

        scales = scales.astype(ml_dtypes.bfloat16)
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
