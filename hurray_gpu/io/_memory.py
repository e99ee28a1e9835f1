"""Aligned host allocations and bounded reads for the stream and file readers."""

from __future__ import annotations

import numpy as np

HOST_ALIGNMENT = 64
# Reads above this size go chunk by chunk, so a hostile declared size cannot allocate
# gigabytes before the stream proves it holds that many bytes.
CHUNK = 64 << 20


def aligned_empty(nbytes: int, alignment: int = HOST_ALIGNMENT) -> np.ndarray:
    """Allocate an uninitialised uint8 array whose data pointer is ``alignment``-aligned.

    Args:
        nbytes: size in bytes.
        alignment: a power of two.

    Returns:
        A 1-D writable uint8 array of ``nbytes`` bytes.
    """
    alignment = max(int(alignment), 1)
    raw = np.empty(nbytes + alignment, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start : start + nbytes]


def aligned_copy(data: np.ndarray, alignment: int = HOST_ALIGNMENT) -> np.ndarray:
    """Return ``data`` (1-D uint8) itself if suitably aligned, else an aligned copy."""
    if data.size == 0 or data.ctypes.data % alignment == 0:
        return data
    out = aligned_empty(data.size, alignment)
    out[...] = data
    return out
