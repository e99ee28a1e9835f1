"""Vectorized Morton and Hilbert index maps (Hilbert: Skilling 2004, as the Hurray spec,
Hilbert Curve Layout gives it).

All functions take int64 coordinate arrays of shape [..., rank] and loop only over bits and
dimensions, never over elements.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .addressing_checks import as_index_array, fail

# h must fit a signed 64-bit offset.
MAX_CODE_BITS = 63


def _coords(coords: object, rank: int, name: str) -> np.ndarray:
    x = as_index_array(coords, name)
    if x.ndim == 0 or x.shape[-1] != rank:
        fail(f"{name} has shape {x.shape}; the last axis must be the rank {rank}", name,
             f"pass {name} as an integer array of shape [..., {rank}].")
    return x


def morton_code(coords: object, bits: Sequence[int]) -> np.ndarray:
    """Morton (Z-order) code: bit b of coordinate d goes to code bit ``b*rank + d``.

    Hurray spec, Morton (Z-Order Curve) Layout.

    Args:
        coords: integer array [..., rank], each coords[..., d] < 2**bits[d].
        bits: morton_bits per dimension (each >= 1).

    Returns:
        int64 array [...] of codes.

    Raises:
        HurrayFormatError: for a coordinate out of range, bits < 1, or a code that would not
            fit in 63 bits.
    """
    rank = len(bits)
    x = _coords(coords, rank, "coords")
    out = np.zeros(x.shape[:-1], dtype=np.int64)
    for d, nb in enumerate(bits):
        if nb < 1:
            fail(f"morton_bits[{d}] = {nb}, must be >= 1", "morton_bits",
                 "use morton_bits[d] >= 1.")
        col = x[..., d]
        # Only bits that some coordinate actually sets need a code position.
        top = int(col.max()).bit_length() if col.size else 0
        if nb < 63 and top > nb:
            flat = np.flatnonzero(col.reshape(-1) >= (1 << nb))
            fail(f"coords[{int(flat[0])}, {d}] = {int(col.reshape(-1)[flat[0]])} needs more "
                 f"than morton_bits[{d}] = {nb} bits", "coords",
                 f"every coordinate along dimension {d} must be < 2**{nb}.")
        if top and (top - 1) * rank + d >= MAX_CODE_BITS:
            fail(f"Morton code bit {(top - 1) * rank + d} does not fit a 63-bit offset",
                 "morton_bits", "use fewer Morton bits (rank * bits must stay below 63).")
        for b in range(top):
            out |= ((col >> b) & 1) << (b * rank + d)
    return out


def _check_hilbert(order: int, rank: int) -> None:
    if rank < 2:
        fail(f"hilbert_rank is {rank}, must be >= 2", "hilbert_rank",
             "Hilbert layouts need rank >= 2.")
    if order < 1:
        fail(f"hilbert_order is {order}, must be >= 1", "hilbert_order",
             "use hilbert_order >= 1.")
    if order * rank > MAX_CODE_BITS:
        fail(f"hilbert_order {order} x rank {rank} = {order * rank} bits exceeds 63",
             "hilbert_order", "Hilbert indices must fit a signed 64-bit offset.")


def _axes_to_transpose(x: np.ndarray, order: int, rank: int) -> None:
    """Skilling's CoordsToHilbert up to (not including) bit packing, in place on x[..., r]."""
    m = 1 << (order - 1)
    q = m
    while q > 1:
        p = q - 1
        for i in range(rank):
            hit = (x[..., i] & q) != 0
            if i == 0:
                x[..., 0] ^= np.where(hit, p, 0)
                continue
            t = np.where(hit, 0, (x[..., 0] ^ x[..., i]) & p)
            x[..., 0] ^= np.where(hit, p, t)
            x[..., i] ^= t
        q >>= 1
    for i in range(1, rank):
        x[..., i] ^= x[..., i - 1]
    t = np.zeros(x.shape[:-1], dtype=np.int64)
    q = m
    while q > 1:
        t ^= np.where((x[..., rank - 1] & q) != 0, q - 1, 0)
        q >>= 1
    x ^= t[..., None]


def _transpose_to_axes(x: np.ndarray, order: int, rank: int) -> None:
    """Skilling's HilbertToCoords after bit unpacking, in place on x[..., r]."""
    t = x[..., rank - 1] >> 1
    for i in range(rank - 1, 0, -1):
        x[..., i] ^= x[..., i - 1]
    x[..., 0] ^= t
    q = 2
    while q != 1 << order:
        p = q - 1
        for i in range(rank - 1, -1, -1):
            hit = (x[..., i] & q) != 0
            if i == 0:
                x[..., 0] ^= np.where(hit, p, 0)
                continue
            t = np.where(hit, 0, (x[..., 0] ^ x[..., i]) & p)
            x[..., 0] ^= np.where(hit, p, t)
            x[..., i] ^= t
        q <<= 1


def hilbert_index(coords: object, order: int, rank: int) -> np.ndarray:
    """Hilbert index h of each coordinate tuple (spec CoordsToHilbert, exactly).

    Bit packing: bit b of the transposed X[d] goes to h bit ``b*r + (r-1-d)``.

    Args:
        coords: integer array [..., rank], every entry in [0, 2**order).
        order: hilbert_order p (>= 1).
        rank: hilbert_rank r (>= 2); order*rank <= 63.

    Returns:
        int64 array [...] of indices in [0, 2**(r*p)).

    Raises:
        HurrayFormatError: for invalid order/rank or out-of-range coordinates.
    """
    _check_hilbert(order, rank)
    x = _coords(coords, rank, "coords").copy()
    if x.size and int(x.max()) >= 1 << order:
        pos = int(np.argmax(x.reshape(-1) >= 1 << order))
        fail(f"coords flat entry {pos} = {int(x.reshape(-1)[pos])} is >= 2**{order}",
             "coords", f"Hilbert coordinates must lie in [0, 2**{order}).")
    _axes_to_transpose(x, order, rank)
    h = np.zeros(x.shape[:-1], dtype=np.int64)
    for b in range(order):
        for d in range(rank):
            h |= ((x[..., d] >> b) & 1) << (b * rank + (rank - 1 - d))
    return h


def hilbert_coords(h: object, order: int, rank: int) -> np.ndarray:
    """Coordinates of Hilbert indices (spec HilbertToCoords, exactly).

    Args:
        h: integer array [...] of indices in [0, 2**(order*rank)).
        order: hilbert_order p (>= 1).
        rank: hilbert_rank r (>= 2); order*rank <= 63.

    Returns:
        int64 array [..., rank].

    Raises:
        HurrayFormatError: for invalid order/rank or an index out of range.
    """
    _check_hilbert(order, rank)
    hv = as_index_array(h, "h")
    total = order * rank
    if hv.size and total < 63 and int(hv.max()) >= 1 << total:
        pos = int(np.argmax(hv.reshape(-1) >= 1 << total))
        fail(f"h[{pos}] = {int(hv.reshape(-1)[pos])} is >= 2**{total}", "h",
             f"Hilbert indices must lie in [0, 2**(order*rank)) = [0, 2**{total}).")
    x = np.zeros((*hv.shape, rank), dtype=np.int64)
    for b in range(order):
        for d in range(rank):
            x[..., d] |= ((hv >> (b * rank + (rank - 1 - d))) & 1) << b
    _transpose_to_axes(x, order, rank)
    return x
