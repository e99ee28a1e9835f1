"""Portable-subset snippets shared by the layout kernels (addressing and element movers) and
their NumPy references. ``{ADDR}`` snippets define ``u32 so``: the element offset minus ``lo``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["HILBERT_ADDR", "PACKED_MOVE", "REC_WORDS", "SEP_ADDR", "SEP_WORD_MOVE", "WORD_MOVE",
           "ref_axis_entries", "ref_hilbert_so", "ref_packed", "ref_words"]

# Words per dimension record: extent, kind, nlev, final stride, then 9 (tile, stride) pairs
# (a tiled chain holds at most 8 blocks, hurray-facts §2.5).
REC_WORDS = 22

# Separable layouts: off(x) = tz[outer index] + ty[row] + tx[column] (u32, wrapping; the
# tables already hold the -lo shift, so the sum is the exact non-negative offset).
SEP_ADDR = """
        u32 so = LOAD(tz, z) + LOAD(ty, y) + LOAD(tx, x);
"""

# Skilling's CoordsToHilbert with X[0..r-1] packed in one u32 (field k at bits k*hp): the
# tensor has 2**(hp*hr) < 2**32 elements, so every field fits. Coordinates come from the
# row-major index f (every extent is 2**hp).
HILBERT_ADDR = """
        u32 hm = (1u << hp) - 1u;
        u32 hx = 0u;
        for (u32 k = 0u; k < hr; k++) {
            hx = hx | (((f >> (hp * (hr - 1u - k))) & hm) << (k * hp));
        }
        u32 x0 = hx & hm;
        u32 q = (1u << hp) >> 1u;
        while (q > 1u) {
            u32 p = q - 1u;
            if ((x0 & q) != 0u) x0 = x0 ^ p;
            for (u32 k = 1u; k < hr; k++) {
                u32 sh = k * hp;
                u32 xi = (hx >> sh) & hm;
                if ((xi & q) != 0u) {
                    x0 = x0 ^ p;
                } else {
                    u32 t = (x0 ^ xi) & p;
                    x0 = x0 ^ t;
                    hx = hx ^ (t << sh);
                }
            }
            q = q >> 1u;
        }
        u32 prev = x0;
        for (u32 k = 1u; k < hr; k++) {
            u32 sh = k * hp;
            u32 xi = ((hx >> sh) & hm) ^ prev;
            hx = (hx & ~(hm << sh)) | (xi << sh);
            prev = xi;
        }
        u32 tt = 0u;
        q = (1u << hp) >> 1u;
        while (q > 1u) {
            if ((prev & q) != 0u) tt = tt ^ (q - 1u);
            q = q >> 1u;
        }
        x0 = x0 ^ tt;
        u32 so = 0u;
        for (u32 b = 0u; b < hp; b++) {
            for (u32 d = 0u; d < hr; d++) {
                u32 xd = d == 0u ? x0 : (((hx >> (d * hp)) & hm) ^ tt);
                so = so | (((xd >> b) & 1u) << (b * hr + hr - 1u - d));
            }
        }
"""

# One element of wpe words per work item; reads outside src (nsrc words) yield 0.
WORD_MOVE = """
    u32 x = GLOBAL_ID(0);
    u32 y = GLOBAL_ID(1);
    u32 z = GLOBAL_ID(2);
    if (x >= nx || y >= ny || z >= nz) return;
    u32 f = (z * ny + y) * nx + x;
{ADDR}
    u32 s = woff + so * wpe;
    if (wpe == 1u) {
        // The common case without the word loop: pocl vectorises it across the work-group.
        STORE(dst, f, s < nsrc ? LOAD(src, s) : 0u);
        return;
    }
    u32 o = f * wpe;
    for (u32 w = 0u; w < wpe; w++) {
        u32 v = 0u;
        if (s + w < nsrc && s + w >= s) v = LOAD(src, s + w);
        STORE(dst, o + w, v);
    }
"""

# Separable word mover: a work item copies a bx x by block of elements (GPUs launch bx = by = 1,
# one element per item; host C launches blocks, so the x loop is a plain indexed copy the C
# compiler keeps in registers, and a column-major or tiled source is read in cache-line runs).
# Reads outside src (nsrc words) yield 0.
SEP_WORD_MOVE = """
    u32 x0 = GLOBAL_ID(0) * bx;
    u32 y0 = GLOBAL_ID(1) * by;
    u32 z = GLOBAL_ID(2);
    if (x0 >= nx || y0 >= ny || z >= nz) return;
    u32 x1 = x0 + UMIN(nx - x0, bx);
    u32 y1 = y0 + UMIN(ny - y0, by);
    u32 oz = LOAD(tz, z);
    for (u32 y = y0; y < y1; y++) {
        u32 oy = oz + LOAD(ty, y);
        u32 f = (z * ny + y) * nx;
        if (wpe == 1u) {
            u32 b = woff + oy;
            for (u32 x = x0; x < x1; x++) {
                u32 s = b + LOAD(tx, x);
                STORE(dst, f + x, s < nsrc ? LOAD(src, s) : 0u);
            }
        } else {
            for (u32 x = x0; x < x1; x++) {
                u32 s = woff + (oy + LOAD(tx, x)) * wpe;
                u32 o = (f + x) * wpe;
                for (u32 w = 0u; w < wpe; w++) {
                    u32 v = 0u;
                    if (s + w < nsrc && s + w >= s) v = LOAD(src, s + w);
                    STORE(dst, o + w, v);
                }
            }
        }
    }
"""

# One output unit per work item: epu elements of `bits` bits packed LSB-first into upb bytes
# (8/bits elements in 1 byte, or 4 six-bit elements in 3 bytes), so no two items share a byte.
PACKED_MOVE = """
    u32 u = GLOBAL_ID(0);
    if (u >= nunits) return;
    u32 acc = 0u;
    for (u32 e = 0u; e < epu; e++) {
        u32 f = u * epu + e;
        if (f < n) {
            u32 x = f % nx;
            u32 yz = f / nx;
            u32 y = yz % ny;
            u32 z = yz / ny;
{ADDR}
            u32 bit = so * bits;
            u32 at = doff + (bit >> 3u);
            u32 sh = bit & 7u;
            u32 code = 0u;
            if (at < nsrc) code = LOAD(src, at) >> sh;
            if (sh + bits > 8u && at + 1u < nsrc) code = code | (LOAD(src, at + 1u) << (8u - sh));
            acc = acc | ((code & ((1u << bits) - 1u)) << (e * bits));
        }
    }
    for (u32 b = 0u; b < upb; b++) {
        STORE(dst, u * upb + b, (acc >> (8u * b)) & 255u);
    }
"""

SoFn = Callable[[dict[str, Any], np.ndarray], np.ndarray]


def _spread(x: np.ndarray, nb: int, d: int, r: int) -> np.ndarray:
    out = np.zeros_like(x)
    for b in range(min(nb, 32)):
        pos = b * r + d
        if pos < 32:
            out += ((x >> b) & 1) << pos
    return out


def ref_axis_entries(lp: np.ndarray, n: int, d0: int, nd: int, base: int) -> np.ndarray:
    """The ``layout_axis_table`` entries 0..n-1 as uint32 (plain integer arithmetic)."""
    rec = np.asarray(lp, np.int64)
    rest = np.arange(n, dtype=np.int64)
    off = np.full(n, base, np.int64)
    for k in range(d0 + nd - 1, d0 - 1, -1):
        at = k * REC_WORDS
        ext = max(int(rec[at]), 1)
        x, rest = rest % ext, rest // ext
        if rec[at + 1] == 0:
            for lev in range(min(int(rec[at + 2]), 9)):
                t = max(int(rec[at + 4 + 2 * lev]), 1)
                off += (x // t) * int(rec[at + 5 + 2 * lev])
                x = x % t
            off += x * int(rec[at + 3])
        else:
            off += _spread(x, int(rec[at + 2]), int(rec[at + 3]), int(rec[at + 4]))
        off &= 0xFFFFFFFF
    return off.astype(np.uint32)


def ref_hilbert_so(f: np.ndarray, hp: int, hr: int) -> np.ndarray:
    """Hilbert index of each row-major index ``f`` of a [2**hp]*hr tensor (Skilling)."""
    from hurray_gpu.format.addressing_curves import hilbert_index

    coords = np.stack([(f >> (hp * (hr - 1 - k))) & ((1 << hp) - 1) for k in range(hr)], -1)
    return hilbert_index(coords, hp, hr)


def ref_words(a: dict[str, Any], so_fn: SoFn) -> None:
    """Oracle of the word movers: ``dst[f*wpe + w] = src[woff + so(f)*wpe + w]`` (0 outside)."""
    n = int(a["nx"]) * int(a["ny"]) * int(a["nz"])
    wpe, nsrc = int(a["wpe"]), int(a["nsrc"])
    f = np.arange(n, dtype=np.int64)
    s = int(a["woff"]) + so_fn(a, f) * wpe
    for w in range(wpe):
        at = s + w
        ok = at < nsrc
        vals = np.zeros(n, a["dst"].dtype)
        vals[ok] = a["src"][at[ok]]
        a["dst"][w: n * wpe: wpe] = vals


def ref_packed(a: dict[str, Any], so_fn: SoFn) -> None:
    """Oracle of the packed mover (sub-byte elements, LSB-first, whole output units)."""
    n, bits, epu, upb = int(a["n"]), int(a["bits"]), int(a["epu"]), int(a["upb"])
    nunits, nsrc = int(a["nunits"]), int(a["nsrc"])
    src = np.concatenate([np.asarray(a["src"][:nsrc], np.int64), np.zeros(2, np.int64)])
    f = np.arange(n, dtype=np.int64)
    bit = so_fn(a, f) * bits
    at = int(a["doff"]) + (bit >> 3)
    sh = bit & 7
    safe = np.where(at < nsrc, at, nsrc)
    code = (src[safe] >> sh)
    hi = np.where((sh + bits > 8) & (at + 1 < nsrc), src[np.minimum(safe + 1, nsrc)], 0)
    code = (code | (hi << (8 - sh))) & ((1 << bits) - 1)
    acc = np.zeros(nunits, np.int64)
    np.add.at(acc, f // epu, code << ((f % epu) * bits))
    for b in range(upb):
        a["dst"][b: nunits * upb: upb] = (acc >> (8 * b)) & 255
