"""Raw element codes on the host: read ``count`` codes at element offsets from a buffer, and pack
codes back into Hurray bytes (LSB-first sub-byte packing, little-endian whole bytes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.format.addressing import byte_positions
from hurray_gpu.format.dtypes import DType, buffer_size

__all__ = ["codes_at", "pack_codes"]


def codes_at(raw: Any, dtype: DType, offsets: np.ndarray, byte_offset: int) -> np.ndarray:
    """The codes at element ``offsets``: [n, bytes] uint8 for whole bytes, [n] uint8 below 8.

    Callers have checked that every offset lies inside ``raw``.
    """
    data = np.concatenate([np.asarray(raw, np.uint8).reshape(-1), np.zeros(4, np.uint8)])
    byte, bit = byte_positions(dtype, offsets, byte_offset)
    if dtype.bits >= 8:
        return data[byte[:, None] + np.arange(dtype.bits // 8)]
    word = (data[byte].astype(np.uint32) | (data[byte + 1].astype(np.uint32) << 8)
            | (data[byte + 2].astype(np.uint32) << 16))
    return ((word >> bit.astype(np.uint32)) & ((1 << dtype.bits) - 1)).astype(np.uint8)


def pack_codes(codes: np.ndarray, dtype: DType) -> np.ndarray:
    """Hurray bytes of ``codes`` (as :func:`codes_at` returns them), trailing bits zero."""
    if dtype.bits >= 8:
        return np.ascontiguousarray(codes, np.uint8).reshape(-1)
    n = codes.shape[0]
    lanes = ((codes.astype(np.uint8)[:, None] >> np.arange(dtype.bits)) & 1).astype(np.uint8)
    packed = np.packbits(lanes.reshape(-1), bitorder="little")
    out = np.zeros(buffer_size(dtype, n), np.uint8)
    out[: packed.size] = packed[: out.size]
    return out
