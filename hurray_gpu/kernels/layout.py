"""Dense layout-conversion kernels: any dense Hurray layout -> row-major, offsets on the device,
and the composite assembly kernels that write (or add) a row-major member into its box.

Separable layouts (strided, column-major, tiled at any depth, Morton) read per-axis offset
tables that ``layout_axis_table`` computes on the device from the layout parameters; Hilbert
runs Skilling's CoordsToHilbert per element. The address pieces (``SEP_ADDR``, ``HILBERT_ADDR``)
define ``so``, the element's storage offset minus ``lo``; the movers take one in their ``$addr``
hole. Each kernel has a NumPy reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hurray_gpu.dialect.compose import Piece, compose_kernel
from hurray_gpu.dialect.kernel import LONG_ITEMS, KernelDef, Param, buf, scalar
from hurray_gpu.format.dtypes import by_name

__all__ = ["AXIS_TABLE", "HILBERT_ADDR", "LAYOUT_KERNELS", "REC_WORDS", "SoFn",
           "add_kernel", "gather_kernel", "put_kernel", "ref_axis_entries", "ref_hil_so",
           "ref_hilbert_so"]

# Words per dimension record: extent, kind, nlev, final stride, then 9 (tile, stride) pairs
# (the Hurray spec, metadata: Tiled / Blocked, recommends at most 8 nested levels).
REC_WORDS = 22

# A work item computes one table entry: the decomposed region index's offset contribution.
# Record k (REC_WORDS u32 words): extent, kind (0 affine/tiled, 1 Morton), then for kind 0:
# nlev, final stride, (tile, level stride) * nlev; for kind 1: bits, code position, rank.
_AXIS_BODY = Piece("axis table", """
    u32 j = GLOBAL_ID(0);
    if (j >= n) return;
    u32 off = base;
    u32 rest = j;
    u32 k = d0 + nd;
    while (k > d0) {
        k = k - 1u;
        u32 at = k * $recw;
        u32 ext = UMAX(LOAD(lp, at), 1u);
        u32 x = rest % ext;
        rest = rest / ext;
        if (LOAD(lp, at + 1u) == 0u) {
            u32 nlev = UMIN(LOAD(lp, at + 2u), 9u);
            for (u32 l = 0u; l < nlev; l++) {
                u32 t = UMAX(LOAD(lp, at + 4u + 2u * l), 1u);
                u32 q = x / t;
                x = x - q * t;
                off = off + q * LOAD(lp, at + 5u + 2u * l);
            }
            off = off + x * LOAD(lp, at + 3u);
        } else {
            u32 nb = UMIN(LOAD(lp, at + 2u), 32u);
            u32 d = LOAD(lp, at + 3u);
            u32 r = LOAD(lp, at + 4u);
            for (u32 b = 0u; b < nb; b++) {
                u32 pos = b * r + d;
                if (pos < 32u) off = off + (((x >> b) & 1u) << pos);
            }
        }
    }
    STORE(dst, dat + j, off);
""")

# Separable layouts: off(x) = tz[outer index] + ty[row] + tx[column] (u32, wrapping; the
# tables already hold the -lo shift, so the sum is the exact non-negative offset).
SEP_ADDR = Piece("sep address", """
        u32 so = LOAD(tz, z) + LOAD(ty, y) + LOAD(tx, x);
""", defines=("so",))

# Skilling's CoordsToHilbert with X[0..r-1] packed in one u32 (field k at bits k*hp): the
# tensor has 2**(hp*hr) < 2**32 elements, so every field fits. Coordinates come from the
# row-major index f (every extent is 2**hp).
HILBERT_ADDR = Piece("hilbert address", """
        u32 hm = (1u << hp) - 1u;
        u32 hx = 0u;
        for (u32 k = 0u; k < hr; k++) {
            hx = hx | (((f >> (hp * (hr - 1u - k))) & hm) << (k * hp));
        }
        u32 x0 = hx & hm;
        u32 hq = (1u << hp) >> 1u;
        while (hq > 1u) {
            u32 p = hq - 1u;
            if ((x0 & hq) != 0u) x0 = x0 ^ p;
            for (u32 k = 1u; k < hr; k++) {
                u32 sh = k * hp;
                u32 xi = (hx >> sh) & hm;
                if ((xi & hq) != 0u) {
                    x0 = x0 ^ p;
                } else {
                    u32 t = (x0 ^ xi) & p;
                    x0 = x0 ^ t;
                    hx = hx ^ (t << sh);
                }
            }
            hq = hq >> 1u;
        }
        u32 prev = x0;
        for (u32 k = 1u; k < hr; k++) {
            u32 sh = k * hp;
            u32 xi = ((hx >> sh) & hm) ^ prev;
            hx = (hx & ~(hm << sh)) | (xi << sh);
            prev = xi;
        }
        u32 tt = 0u;
        hq = (1u << hp) >> 1u;
        while (hq > 1u) {
            if ((prev & hq) != 0u) tt = tt ^ (hq - 1u);
            hq = hq >> 1u;
        }
        x0 = x0 ^ tt;
        u32 so = 0u;
        for (u32 b = 0u; b < hp; b++) {
            for (u32 d = 0u; d < hr; d++) {
                u32 xd = d == 0u ? x0 : (((hx >> (d * hp)) & hm) ^ tt);
                so = so | (((xd >> b) & 1u) << (b * hr + hr - 1u - d));
            }
        }
""", defines=("so",))

# One element of wpe words per work item; reads outside src (nsrc words) yield 0.
_WORD_MOVE = Piece("word mover", """
    u32 x = GLOBAL_ID(0);
    u32 y = GLOBAL_ID(1);
    u32 z = GLOBAL_ID(2);
    if (x >= nx || y >= ny || z >= nz) return;
    u32 f = (z * ny + y) * nx + x;
    $addr
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
""")

# Separable word mover for host C: a work item copies a bx x by block (GPUs keep the
# per-element kernel). The tables decide per block, exactly: when every aligned 8 columns are
# one storage run (row-major, tiles at least 8 wide), rows are copied in 8-word runs (a run
# not wholly inside src, or that wraps past 2**32, and the rest of its row go element by
# element). Else the block is walked in 8 x 8 groups when every aligned 8 rows are one run
# (column-major: TRANSPOSE8 of 8 evenly spaced runs) or every aligned 8 x 8 group is 64 words
# in rank-2 Morton order (ZORDER8), so the source is read in whole lines; a group not wholly
# inside src (or not evenly spaced, or cut by the block's edge) goes element by element. A
# column-major block wholly inside src, its sides multiples of 16, its columns evenly spaced
# and every aligned 16 rows one run goes in 16 x 16 groups (TRANSPOSE16: whole-line rows, which
# host C streams past the cache for large outputs); so does a Morton block wholly inside src,
# its sides multiples of 16 and every aligned 16 x 16 group 256 words in Morton order
# (ZORDER16). When
# the block's largest offsets sum below nsrc without wrapping, elements are read without a
# bounds test. Reads outside src (nsrc words) yield 0.
_SEP_WORD_MOVE = """
    u32 x0 = GLOBAL_ID(0) * bx;
    u32 y0 = GLOBAL_ID(1) * by;
    u32 z = GLOBAL_ID(2);
    if (x0 >= nx || y0 >= ny || z >= nz) return;
    u32 x1 = x0 + UMIN(nx - x0, bx);
    u32 y1 = y0 + UMIN(ny - y0, by);
    u32 oz = LOAD(tz, z);
    u32 brk = 0u;
    u32 mx = LOAD(tx, x0);
    for (u32 x = x0 + 1u; x < x1; x++) {
        if (LOAD(tx, x) != LOAD(tx, x - 1u) + 1u) brk = brk | (x - x0);
        mx = UMAX(mx, LOAD(tx, x));
    }
    u32 my = 0u;
    for (u32 y = y0; y < y1; y++) my = UMAX(my, LOAD(ty, y));
    u32 hi = woff + oz;
    u32 inb = hi >= woff && hi + my >= hi && hi + my + mx >= hi + my && hi + my + mx < nsrc
        ? 1u : 0u;
    u32 xd = (brk & 7u) | (wpe - 1u);
    u32 yd = xd == 0u ? 1u : wpe - 1u;
    u32 zd = yd;
    for (u32 y = y0; y + 8u <= y1 && (yd == 0u || zd == 0u); y += 8u) {
        for (u32 k = 1u; k < 8u; k++) {
            u32 zk = (k & 1u) | ((k & 2u) << 1u) | ((k & 4u) << 2u);
            yd = yd | (LOAD(ty, y + k) ^ (LOAD(ty, y) + k));
            zd = zd | (LOAD(ty, y + k) ^ (LOAD(ty, y) + zk));
        }
    }
    for (u32 x = x0; x + 8u <= x1 && zd == 0u; x += 8u) {
        for (u32 k = 1u; k < 8u; k++) {
            u32 zk = ((k & 1u) << 1u) | ((k & 2u) << 2u) | ((k & 4u) << 3u);
            zd = zd | (LOAD(tx, x + k) ^ (LOAD(tx, x) + zk));
        }
    }
    u32 yt = y0;
    u32 sc = LOAD(tx, x0 + UMIN(x1 - x0 - 1u, 1u)) - LOAD(tx, x0);
    u32 t16 = yd == 0u && inb == 1u && ((x1 - x0) & 15u) == 0u && ((y1 - y0) & 15u) == 0u ? 1u : 0u;
    for (u32 x = x0; x < x1 && t16 == 1u; x++) {
        if (LOAD(tx, x) != LOAD(tx, x0) + (x - x0) * sc) t16 = 0u;
    }
    for (u32 y = y0; y < y1 && t16 == 1u; y += 16u) {
        if (LOAD(ty, y + 8u) != LOAD(ty, y) + 8u) t16 = 0u;
    }
    u32 z16 = zd == 0u && inb == 1u && ((x1 - x0) & 15u) == 0u && ((y1 - y0) & 15u) == 0u
        ? 1u : 0u;
    for (u32 y = y0; y < y1 && z16 == 1u; y += 16u) {
        if (LOAD(ty, y + 8u) != LOAD(ty, y) + 64u) z16 = 0u;
    }
    for (u32 x = x0; x < x1 && z16 == 1u; x += 16u) {
        if (LOAD(tx, x + 8u) != LOAD(tx, x) + 128u) z16 = 0u;
    }
    u32 nall = nx * ny * nz;
    for (; (t16 == 1u || z16 == 1u) && yt < y1; yt += 16u) {
        u32 sb = hi + LOAD(ty, yt);
        u32 f = (z * ny + yt) * nx;
        for (u32 x = x0; x < x1; x += 16u) {
            u32 s0 = sb + LOAD(tx, x);
            if (t16 == 1u) {
                TRANSPOSE16(dst, f + x, nx, src, s0, sc, nall);
            } else {
                ZORDER16(dst, f + x, nx, src, s0, 0u, nall);
            }
        }
    }
    for (; (yd == 0u || zd == 0u) && yt + 8u <= y1; yt += 8u) {
        u32 sb = hi + LOAD(ty, yt);
        u32 f = (z * ny + yt) * nx;
        for (u32 x = x0; x < x1; x += 8u) {
            u32 xe = UMIN(x1 - x, 8u);
            u32 s0 = sb + LOAD(tx, x);
            u32 sd = xe == 8u ? LOAD(tx, x + 1u) - LOAD(tx, x) : 0u;
            u32 ok = xe == 8u && (yd == 0u || (s0 + 63u < nsrc && s0 + 63u >= s0)) ? 1u : 0u;
            for (u32 k = 0u; k < 8u && ok == 1u && yd == 0u; k++) {
                u32 s = sb + LOAD(tx, x + k);
                if (s != s0 + k * sd || s + 7u >= nsrc || s + 7u < s) ok = 0u;
            }
            if (ok == 1u && yd == 0u) {
                TRANSPOSE8(dst, f + x, nx, src, s0, sd);
            } else if (ok == 1u) {
                ZORDER8(dst, f + x, nx, src, s0, 0u);
            } else {
                for (u32 j = 0u; j < 8u; j++) {
                    for (u32 k = 0u; k < xe; k++) {
                        u32 s = hi + LOAD(ty, yt + j) + LOAD(tx, x + k);
                        STORE(dst, f + j * nx + x + k, s < nsrc ? LOAD(src, s) : 0u);
                    }
                }
            }
        }
    }
    for (u32 y = yt; y < y1; y++) {
        u32 oy = oz + LOAD(ty, y);
        u32 f = (z * ny + y) * nx;
        u32 b = woff + oy;
        u32 x = x0;
        for (; xd == 0u && (brk & 31u) == 0u && x + 32u <= x1; x += 32u) {
            u32 s = b + LOAD(tx, x);
            if (s + 31u >= nsrc || s + 31u < s) break;
            COPY8(dst, f + x, src, s);
            COPY8(dst, f + x + 8u, src, s + 8u);
            COPY8(dst, f + x + 16u, src, s + 16u);
            COPY8(dst, f + x + 24u, src, s + 24u);
        }
        for (; xd == 0u && x + 8u <= x1; x += 8u) {
            u32 s = b + LOAD(tx, x);
            if (s + 7u >= nsrc || s + 7u < s) break;
            COPY8(dst, f + x, src, s);
        }
        for (; x < x1 && wpe == 1u && inb == 1u; x++) STORE(dst, f + x, LOAD(src, b + LOAD(tx, x)));
        for (; x < x1 && wpe == 1u; x++) {
            u32 s = b + LOAD(tx, x);
            STORE(dst, f + x, s < nsrc ? LOAD(src, s) : 0u);
        }
        for (; x < x1; x++) {
            u32 s = woff + (oy + LOAD(tx, x)) * wpe;
            for (u32 w = 0u; w < wpe; w++) {
                u32 v = 0u;
                if (s + w < nsrc && s + w >= s) v = LOAD(src, s + w);
                STORE(dst, (f + x) * wpe + w, v);
            }
        }
    }
"""

# One output unit per work item: epu elements of `bits` bits packed LSB-first into upb bytes
# (8/bits elements in 1 byte, or 4 six-bit elements in 3 bytes), so no two items share a byte.
_PACKED_MOVE = Piece("packed mover", """
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
            $addr
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
""")

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


def _ref_words(a: dict[str, Any], so_fn: SoFn) -> None:
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


def _ref_packed(a: dict[str, Any], so_fn: SoFn) -> None:
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


def _ref_axis_table(a: dict[str, Any]) -> None:
    n = int(a["n"])
    at = int(a["dat"])
    a["dst"][at:at + n] = ref_axis_entries(a["lp"], n, int(a["d0"]), int(a["nd"]),
                                           int(a["base"]))


AXIS_TABLE = compose_kernel(
    _AXIS_BODY.fill(recw=f"{REC_WORDS}u"), name="layout_axis_table",
    params=(buf("dst", "u32", "w"), buf("lp", "u32"), scalar("n"), scalar("d0"), scalar("nd"),
            scalar("base"), scalar("dat")),
    grid=lambda s: (int(s["n"]),),
    extents=lambda s: {"dst": int(s["dat"]) + int(s["n"]),
                       "lp": (int(s["d0"]) + int(s["nd"])) * REC_WORDS},
    reference=_ref_axis_table, tags=("layout",),
    doc="Axis table entry dst[dat+j]: sum of each region dimension's layout contribution.")

_WORDS = {"u8": "u8", "u16": "u16", "u32": "u32"}


def _sep_so(a: dict[str, Any], f: np.ndarray) -> np.ndarray:
    nx, ny = int(a["nx"]), int(a["ny"])
    x, yz = f % nx, f // nx
    y, z = yz % ny, yz // ny
    total = (a["tz"][z].astype(np.uint64) + a["ty"][y] + a["tx"][x])
    return (total & 0xFFFFFFFF).astype(np.int64)


def ref_hil_so(a: dict[str, Any], f: np.ndarray) -> np.ndarray:
    """``HILBERT_ADDR``'s ``so`` of each row-major index ``f`` (scalars ``hp``, ``hr``)."""
    return ref_hilbert_so(f, int(a["hp"]), int(a["hr"]))


# Address piece, offset oracle, and the extra buffers and scalars it reads.
_ADDR: dict[str, tuple[Piece, SoFn, tuple[Param, ...], tuple[Param, ...]]] = {
    "sep": (SEP_ADDR, _sep_so, (buf("tx", "u32"), buf("ty", "u32"), buf("tz", "u32")), ()),
    "hil": (HILBERT_ADDR, ref_hil_so, (), (scalar("hp"), scalar("hr")))}


def _gather_extents(s: Any, addr: str, packed: bool) -> dict[str, int]:
    nx, ny, nz = int(s["nx"]), int(s["ny"]), int(s["nz"])
    dst = int(s["nunits"]) * int(s["upb"]) if packed else nx * ny * nz * int(s["wpe"])
    tables = {"tx": nx, "ty": ny, "tz": nz} if addr != "hil" else {}
    return {"dst": dst, "src": int(s["nsrc"]), **tables}


def _make_words(addr: str, word: str) -> KernelDef:
    piece, so_fn, bufs, scalars = _ADDR[addr]
    return compose_kernel(
        _WORD_MOVE.fill(addr=piece), name=f"layout_{addr}_{word}",
        params=(buf("dst", word, "w"), buf("src", word), *bufs, scalar("nx"), scalar("ny"),
                scalar("nz"), scalar("wpe"), scalar("woff"), scalar("nsrc"), *scalars),
        grid=lambda s: (int(s["nx"]), int(s["ny"]), int(s["nz"])),
        extents=lambda s: _gather_extents(s, addr, False),
        reference=lambda a, fn=so_fn: _ref_words(a, fn),  # type: ignore[misc]
        # 2-D work-groups: a column-major or tiled source is then read in cache-line runs.
        local_size=(32, 8, 1), tags=("layout",),
        doc=f"Row-major gather of {word} words ({addr} addressing); wpe words per element.")


def _block_grid(s: Any) -> tuple[int, int, int]:
    bx, by = max(int(s["bx"]), 1), max(int(s["by"]), 1)
    return -(-int(s["nx"]) // bx), -(-int(s["ny"]) // by), int(s["nz"])


def _make_blocked(word: str) -> KernelDef:
    return KernelDef(
        name=f"layout_sepblk_{word}",
        params=(buf("dst", word, "w"), buf("src", word), buf("tx", "u32"), buf("ty", "u32"),
                buf("tz", "u32"), scalar("nx"), scalar("ny"), scalar("nz"), scalar("wpe"),
                scalar("woff"), scalar("nsrc"), scalar("bx"), scalar("by")),
        body=_SEP_WORD_MOVE, grid=_block_grid,
        extents=lambda s: _gather_extents(s, "sep", False),
        reference=lambda a: _ref_words(a, _sep_so),
        # A block is thousands of elements: host C hands out fewer items per chunk.
        # host_isa: TRANSPOSE8 and ZORDER8 become register shuffles where the host has AVX2.
        local_size=(8, 8, 1), tags=("layout", "host_isa", LONG_ITEMS),
        doc=f"Row-major gather of {word} words (sep addressing), a bx x by block per item.")


def _make_packed(addr: str) -> KernelDef:
    piece, so_fn, bufs, scalars = _ADDR[addr]
    return compose_kernel(
        _PACKED_MOVE.fill(addr=piece), name=f"layout_{addr}_packed",
        params=(buf("dst", "u8", "w"), buf("src", "u8"), *bufs, scalar("n"), scalar("nx"),
                scalar("ny"), scalar("nz"), scalar("bits"), scalar("epu"), scalar("upb"),
                scalar("nunits"), scalar("doff"), scalar("nsrc"), *scalars),
        grid=lambda s: (int(s["nunits"]),),
        extents=lambda s: _gather_extents(s, addr, True),
        reference=lambda a, fn=so_fn: _ref_packed(a, fn),  # type: ignore[misc]
        tags=("layout",),
        doc=f"Row-major gather of packed sub-byte elements ({addr} addressing).")


_GATHERS = {(addr, word): _make_words(addr, word) for addr in _ADDR for word in _WORDS}
# Host C runs work items one after another: there a block per item beats an element per item;
# devices that vectorise across work items (GPUs, pocl, lavapipe) keep the per-element form.
_GATHERS.update({("sepblk", word): _make_blocked(word) for word in _WORDS})
_GATHERS.update({(addr, "packed"): _make_packed(addr) for addr in _ADDR})


def gather_kernel(addr: str, mover: str) -> KernelDef:
    """The gather kernel for ``addr`` (``"sep"``/``"sepblk"``/``"hil"``) and ``mover``
    (u8/u16/u32/packed; ``"sepblk"`` takes word movers only)."""
    return _GATHERS[(addr, mover)]


# -- composite assembly: destination offsets from layout_axis_table tables (a strided box) ------

_BOX = Piece("box write", """
    u32 x = GLOBAL_ID(0);
    u32 y = GLOBAL_ID(1);
    u32 z = GLOBAL_ID(2);
    if (x >= nx || y >= ny || z >= nz) return;
    u32 f = (z * ny + y) * nx + x;
    u32 d = LOAD(tz, z) + LOAD(ty, y) + LOAD(tx, x);
    if (d >= ndst) return;
    $op
""")
_PUT = "    for (u32 w = 0u; w < wpe; w++) STORE(dst, d * wpe + w, LOAD(src, f * wpe + w));"
# The sum is evaluated in f32 and rounded once to the head type: exact IEEE addition in the
# head type for f16/bf16 (f32 holds both sums exactly before the single rounding).
_ADD = {
    "f32": "STORE(dst, d, AS_U32(AS_F32(LOAD(dst, d)) + AS_F32(LOAD(src, f))));",
    "f16": "STORE(dst, d, F32_TO_F16_BITS(F16_BITS_TO_F32(LOAD(dst, d)) "
           "+ F16_BITS_TO_F32(LOAD(src, f))));",
    "bf16": "STORE(dst, d, F32_TO_BF16_BITS(BF16_BITS_TO_F32(LOAD(dst, d)) "
            "+ BF16_BITS_TO_F32(LOAD(src, f))));"}
_ADD_WORD = {"f32": "u32", "f16": "u16", "bf16": "u16"}
_NP = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


def _dest(a: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    nx, ny, nz = int(a["nx"]), int(a["ny"]), int(a["nz"])
    f = np.arange(nx * ny * nz, dtype=np.int64)
    x, yz = f % nx, f // nx
    d = (a["tz"][yz // ny].astype(np.uint64) + a["ty"][yz % ny] + a["tx"][x]) & 0xFFFFFFFF
    keep = d < int(a["ndst"])
    return f[keep], d[keep].astype(np.int64)


def _ref_put(a: dict[str, Any]) -> None:
    f, d = _dest(a)
    wpe = int(a["wpe"])
    for w in range(wpe):
        a["dst"][d * wpe + w] = a["src"][f * wpe + w]


def _ref_add(a: dict[str, Any], kind: str) -> None:
    f, d = _dest(a)
    dt = by_name(_NP[kind]).numpy
    with np.errstate(over="ignore", invalid="ignore"):
        total = a["dst"][d].view(dt).astype(np.float32) + a["src"][f].view(dt).astype(np.float32)
        a["dst"][d] = total.astype(dt).view(a["dst"].dtype)


def _box_params(word: str, access: str, extra: tuple[Param, ...]) -> tuple[Param, ...]:
    return (buf("dst", word, access), buf("src", word), buf("tx", "u32"), buf("ty", "u32"),
            buf("tz", "u32"), scalar("nx"), scalar("ny"), scalar("nz"), scalar("ndst"), *extra)


def _box_extents(s: Any, wpe: int | None) -> dict[str, int]:
    w = int(s["wpe"]) if wpe is None else wpe
    return {"dst": int(s["ndst"]) * w, "src": int(s["nx"]) * int(s["ny"]) * int(s["nz"]) * w,
            "tx": s["nx"], "ty": s["ny"], "tz": s["nz"]}


def _grid3(s: Any) -> tuple[int, int, int]:
    return (int(s["nx"]), int(s["ny"]), int(s["nz"]))


_PUTS = {w: compose_kernel(
    _BOX.fill(op=_PUT), name=f"layout_put_{w}", params=_box_params(w, "w", (scalar("wpe"),)),
    grid=_grid3, extents=lambda s: _box_extents(s, None), reference=_ref_put,
    local_size=(32, 8, 1), tags=("layout",),
    doc=f"dst[box offset of f] = src[f] ({w} words, wpe per element).")
    for w in ("u8", "u16", "u32")}

_ADDS = {k: compose_kernel(
    _BOX.fill(op=_ADD[k]), name=f"layout_add_{k}", params=_box_params(_ADD_WORD[k], "rw", ()),
    grid=_grid3, extents=lambda s: _box_extents(s, 1),
    reference=lambda a, kind=k: _ref_add(a, kind),  # type: ignore[misc]
    local_size=(32, 8, 1), tags=("layout",),
    doc=f"dst[box offset of f] += src[f] in {k} (one rounding).") for k in _ADD}


def put_kernel(word: str) -> KernelDef:
    """The box-write kernel for ``word`` (``"u8"``, ``"u16"``, ``"u32"``)."""
    return _PUTS[word]


def add_kernel(kind: str) -> KernelDef:
    """The box-add kernel for head element kind ``"f32"``, ``"f16"`` or ``"bf16"``."""
    return _ADDS[kind]


LAYOUT_KERNELS = (AXIS_TABLE, *_GATHERS.values(), *_PUTS.values(), *_ADDS.values())
