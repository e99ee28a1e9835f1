"""Aligned host allocations and bounded reads for the stream and file readers."""

from __future__ import annotations

import numpy as np

HOST_ALIGNMENT = 64
# Reads above this size go chunk by chunk, so a hostile declared size cannot allocate
# gigabytes before the stream proves it holds that many bytes.
CHUNK = 64 << 20
# Largest alignment a host copy is ever padded to (the format's largest, 2 MiB).
MAX_HOST_ALIGNMENT = 1 << 21
# A buffer gets its declared alignment only while the padding stays below 1/16 of its size.
_PAD_RATIO = 16


def host_alignment(declared: int, nbytes: int) -> int:
    """The alignment a host copy of a buffer is allocated with.

    The declared alignment is a property of the descriptor (what a device or file needs), not
    of the host copy: the host needs only HOST_ALIGNMENT. Larger declared alignments (up to
    2 MiB) are kept only for buffers big enough that the padding is at most 1/16 of their
    size, so many tiny buffers declaring 2 MiB cannot amplify memory.

    Args:
        declared: the buffer handle's declared alignment.
        nbytes: the buffer's size in bytes.

    Returns:
        A power of two, HOST_ALIGNMENT or more.
    """
    align = HOST_ALIGNMENT
    while align < min(declared, MAX_HOST_ALIGNMENT) and align * 2 * _PAD_RATIO <= nbytes:
        align *= 2
    return align


def pool_alignment(nbytes: int) -> int:
    """The cpu allocator's alignment for standard buffers of ``nbytes``: the most
    :func:`host_alignment` asks of that size, so a pooled buffer meets any such request."""
    return host_alignment(MAX_HOST_ALIGNMENT, nbytes)


def aligned_empty(nbytes: int, alignment: int = HOST_ALIGNMENT) -> np.ndarray:
    """Allocate an uninitialised uint8 array whose data pointer is ``alignment``-aligned.

    Padding is ``alignment - 1`` bytes at most; an empty array allocates no padding.

    Args:
        nbytes: size in bytes.
        alignment: a power of two.

    Returns:
        A 1-D writable uint8 array of ``nbytes`` bytes.
    """
    if nbytes == 0:
        return np.empty(0, dtype=np.uint8)
    alignment = max(int(alignment), 1)
    raw = np.empty(nbytes + alignment - 1, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start : start + nbytes]


def aligned_copy(data: np.ndarray, alignment: int = HOST_ALIGNMENT) -> np.ndarray:
    """Return ``data`` (1-D uint8) itself if suitably aligned, else an aligned copy."""
    if data.size == 0 or data.ctypes.data % alignment == 0:
        return data
    out = aligned_empty(data.size, alignment)
    out[...] = data
    return out
