"""The demo's model: transformer-layer weights quantized in NumPy into the Hurray formats.

Each quantizer also returns the exact f32 dequantization NumPy computes from the stored codes
(the Hurray spec's dequantization formulas), which the device results must match bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from hurray_gpu.ops.build import quantized_tensor
from hurray_gpu.ops.tables import nf4_table

__all__ = ["QuantizedWeight", "build_weights"]

# Largest finite magnitude and exponent of the top binade of each MX element type.
MX_ELEMENTS = {"float4_e2m1": (ml_dtypes.float4_e2m1fn, 6.0, 2),
               "float8_e4m3": (ml_dtypes.float8_e4m3fn, 448.0, 8)}


@dataclass
class QuantizedWeight:
    """One stored weight: its Hurray tensor, the NumPy dequantization and the source floats."""

    name: str
    label: str
    tensor: Any
    expected: np.ndarray
    original: np.ndarray


def _blocks(w: np.ndarray, block: int) -> np.ndarray:
    rows, cols = w.shape
    return w.reshape(rows, cols // block, block)


def int4_per_block(w: np.ndarray, block: int = 32) -> tuple[Any, np.ndarray]:
    """Symmetric int4 with one float16 scale per block of ``block`` along the last axis."""
    wb = _blocks(w, block)
    scales = (np.abs(wb).max(axis=2) / 7.0).astype(np.float16)
    s32 = scales.astype(np.float32)[..., None]
    q = np.clip(np.rint(wb / s32), -8, 7).astype(np.int8)
    expected = (s32 * q.astype(np.float32)).reshape(w.shape)
    t = quantized_tensor(q.reshape(w.shape).astype(ml_dtypes.int4), "int4", "per_block",
                         axis=1, block_size=block, scales=scales.reshape(-1),
                         scale_type="float16")
    return t, expected


def nf4(w: np.ndarray, block: int = 64) -> tuple[Any, np.ndarray]:
    """NF4: per-block f32 absmax and the nearest of the 16 NF4 levels."""
    table = nf4_table()
    wb = _blocks(w, block)
    absmax = np.abs(wb).max(axis=2).astype(np.float32)
    norm = wb / absmax[..., None]
    codes = np.abs(norm[..., None] - table).argmin(axis=-1).astype(np.uint8)
    expected = (absmax[..., None] * table[codes]).reshape(w.shape)
    t = quantized_tensor(codes.reshape(w.shape).astype(ml_dtypes.uint4), "uint4", "nf4",
                         axis=1, block_size=block, scales=absmax.reshape(-1))
    return t, expected


def mx(w: np.ndarray, storage: str, block: int = 32) -> tuple[Any, np.ndarray]:
    """MXFP: a shared power-of-two (e8m0) scale per block of 32, elements in ``storage``."""
    np_type, max_value, emax = MX_ELEMENTS[storage]
    wb = _blocks(w, block)
    absmax = np.maximum(np.abs(wb).max(axis=2), np.float32(2.0 ** -100))
    exp = np.clip(np.floor(np.log2(absmax)).astype(np.int32) - emax, -126, 127)
    scale = np.exp2(exp.astype(np.float32))[..., None]
    elems = np.clip(wb / scale, -max_value, max_value).astype(np_type)
    expected = (scale * elems.astype(np.float32)).reshape(w.shape)
    t = quantized_tensor(elems.reshape(w.shape), storage, "mxfp", axis=1, block_size=block,
                         scales=(exp + 127).astype(np.uint8).reshape(-1))
    return t, expected


def int8_per_channel(w: np.ndarray) -> tuple[Any, np.ndarray]:
    """Symmetric int8 with one f32 scale per output row (axis 0)."""
    scales = (np.abs(w).max(axis=1) / 127.0).astype(np.float32)
    q = np.clip(np.rint(w / scales[:, None]), -127, 127).astype(np.int8)
    expected = scales[:, None] * q.astype(np.float32)
    return quantized_tensor(q, "int8", "per_channel", axis=0, scales=scales), expected


def build_weights(d_model: int, seed: int = 0) -> list[QuantizedWeight]:
    """Two transformer layers' projection weights, each in a different Hurray format.

    Args:
        d_model: the hidden size (a multiple of 64).
        seed: the random seed of the Gaussian weights.

    Returns:
        The quantized weights in file order.
    """
    rng = np.random.default_rng(seed)
    d, ff = d_model, 4 * d_model
    plan = [
        ("layers.0.attn.qkv.weight", (3 * d, d), "int4 per-block (f16 scales, block 32)",
         int4_per_block),
        ("layers.0.attn.out.weight", (d, d), "NF4 (f32 absmax, block 64)", nf4),
        ("layers.0.mlp.up.weight", (ff, d), "MXFP4 (e2m1, e8m0 scale, block 32)",
         lambda w: mx(w, "float4_e2m1")),
        ("layers.0.mlp.down.weight", (d, ff), "MXFP8 fp8 (e4m3, e8m0 scale, block 32)",
         lambda w: mx(w, "float8_e4m3")),
        ("layers.1.attn.qkv.weight", (3 * d, d), "int8 per-channel (f32 scales)",
         int8_per_channel),
    ]
    out = []
    for name, shape, label, quantize in plan:
        w = (rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32)
        tensor, expected = quantize(w)
        out.append(QuantizedWeight(name, label, tensor, expected, w))
    return out
