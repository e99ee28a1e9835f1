"""Sparse -> dense kernels (COO, and CSR/CSC/CSF as one compressed tree; CSR also in one
pass per row run) plus the index validation kernels that run before any index is dereferenced.
NumPy references included.

Index arrays are u64 on the wire; kernels read them as u32 word pairs from one concatenated
``ix`` buffer (hi words are checked zero first). Checks set ``err[0] = 1``; the host then names
the first bad position. ``TREE_FLAT`` and ``COO_FLAT`` find stored value i's row-major index
``fi`` (and ``ok``, whether every coordinate is in bounds): the scatters and the sparse dequant
kernels take one in their ``$flat`` hole.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.dialect.compose import Piece, compose_kernel
from hurray_gpu.dialect.kernel import KernelDef, Param, buf, scalar
from hurray_gpu.kernels.dequant import ref_codes

__all__ = ["CHECK_COO", "CHECK_HI", "CHECK_KERNELS", "CHECK_TREE", "COO_DUP", "COO_FLAT",
           "COO_MARK", "COPY_WORDS", "CSR_ROWS", "PACK_CODES", "SPARSE_KERNELS", "TREE_FLAT",
           "TREE_REC", "ZERO_WORDS", "code_scatter_kernel", "csr_rows_kernel", "ref_coo_flat",
           "ref_tree_flat", "scatter_kernel"]

TREE_REC = 6  # per level: crd_off, pos_off, pos_count, stride, extent, dense (words)

# Row-major fi index of tree leaf i: walk up the levels, finding each parent by binary
# search in pos (largest q with pos[q] <= p); an index outside ix reads as invalid.
TREE_FLAT = Piece("tree index", """
    u32 fi = 0u;
    u32 p = i;
    u32 ok = 1u;
    u32 l = nlev;
    while (l > 0u) {
        l = l - 1u;
        u32 at = l * 6u;
        u32 coord = p;
        if (LOAD(mt, at + 5u) == 0u) {
            u32 c = LOAD(mt, at) + 2u * p;
            coord = c < nix ? LOAD(ix, c) : 0xffffffffu;
        }
        if (coord >= LOAD(mt, at + 4u)) ok = 0u;
        fi = fi + coord * LOAD(mt, at + 3u);
        if (l > 0u) {
            u32 po = LOAD(mt, at + 1u);
            u32 lo = 0u;
            u32 hi = UMAX(LOAD(mt, at + 2u), 1u) - 1u;
            while (hi - lo > 1u) {
                u32 md = lo + (hi - lo) / 2u;
                u32 c = po + 2u * md;
                u32 v = c < nix ? LOAD(ix, c) : 0xffffffffu;
                if (v <= p) lo = md; else hi = md;
            }
            p = lo;
        }
    }
""", defines=("fi", "ok"))

COO_FLAT = Piece("coo index", """
    u32 fi = 0u;
    u32 ok = 1u;
    for (u32 d = 0u; d < rank; d++) {
        u32 c = 2u * (i * rank + d);
        u32 coord = c < nix ? LOAD(ix, c) : 0xffffffffu;
        if (coord >= LOAD(mt, 2u * d)) ok = 0u;
        fi = fi + coord * LOAD(mt, 2u * d + 1u);
    }
""", defines=("fi", "ok"))

# Word values move wpe words each; a sub-byte value i is bits [i*bits, i*bits + bits) of the
# packed stream and lands as one code byte per dense element (packed afterwards by
# layout_pack_codes, race-free).
_SCATTER = Piece("scatter", """
    u32 i = GLOBAL_ID(0);
    if (i >= nnz) return;
    $flat
    if (ok == 0u || fi >= n) return;
    $move
""")
_WORD_MOVE = "for (u32 w = 0u; w < wpe; w++) STORE(dst, fi * wpe + w, LOAD(vals, i * wpe + w));"
_CODE_MOVE = """
    u32 bit = i * bits;
    u32 at = bit >> 3u;
    u32 sh = bit & 7u;
    u32 code = LOAD(vals, at) >> sh;
    if (sh + bits > 8u) code = code | (LOAD(vals, at + 1u) << (8u - sh));
    STORE(dst, fi, code & ((1u << bits) - 1u));
"""


def ref_tree_flat(a: dict[str, Any], nnz: int) -> tuple[np.ndarray, np.ndarray]:
    """(fi index, ok) of every tree leaf, as the kernels compute them."""
    mt, ix, nix = np.asarray(a["mt"], np.int64), np.asarray(a["ix"], np.int64), int(a["nix"])
    ixx = np.concatenate([ix[:nix], [0xFFFFFFFF]])
    p = np.arange(nnz, dtype=np.int64)
    fi, ok = np.zeros(nnz, np.int64), np.ones(nnz, bool)
    for lev in range(int(a["nlev"]) - 1, -1, -1):
        rec = mt[lev * TREE_REC:(lev + 1) * TREE_REC]
        coord = p if rec[5] else ixx[np.minimum(rec[0] + 2 * p, nix)]
        ok &= coord < rec[4]
        fi = (fi + coord * rec[3]) & 0xFFFFFFFF
        if lev:
            pos = ixx[np.minimum(rec[1] + 2 * np.arange(max(rec[2], 1)), nix)]
            p = np.maximum(np.searchsorted(pos[:-1], p, "right") - 1, 0)
    return fi, ok


def ref_coo_flat(a: dict[str, Any], nnz: int) -> tuple[np.ndarray, np.ndarray]:
    """(fi index, ok) of every COO entry, as the kernels compute them."""
    rank, nix = int(a["rank"]), int(a["nix"])
    mt = np.asarray(a["mt"], np.int64)
    ixx = np.concatenate([np.asarray(a["ix"], np.int64)[:nix], [0xFFFFFFFF]])
    fi, ok = np.zeros(nnz, np.int64), np.ones(nnz, bool)
    for d in range(rank):
        coord = ixx[np.minimum(2 * (np.arange(nnz) * rank + d), nix)]
        ok &= coord < mt[2 * d]
        fi = (fi + coord * mt[2 * d + 1]) & 0xFFFFFFFF
    return fi, ok


def _ref_scatter(a: dict[str, Any], flat_fn: Any) -> None:
    nnz, wpe, n = int(a["nnz"]), int(a["wpe"]), int(a["n"])
    fi, ok = flat_fn(a, nnz)
    ok &= fi < n
    src = np.flatnonzero(ok)
    for w in range(wpe):
        a["dst"][fi[ok] * wpe + w] = a["vals"][src * wpe + w]


def _ref_code_scatter(a: dict[str, Any], flat_fn: Any) -> None:
    nnz = int(a["nnz"])
    fi, ok = flat_fn(a, nnz)
    ok &= fi < int(a["n"])
    a["dst"][fi[ok]] = ref_codes(a["vals"], 0, int(a["bits"]), nnz)[ok]


def _scatter(kind: str, word: str) -> KernelDef:
    tree, code = kind == "tree", word == "code"
    flat_fn = ref_tree_flat if tree else ref_coo_flat

    def extents(s: Any) -> dict[str, int]:
        n, nnz, w = int(s["n"]), int(s["nnz"]), 0 if code else int(s["wpe"])
        moved = {"dst": n, "vals": (nnz * int(s["bits"]) + 7) // 8} if code else \
            {"dst": n * w, "vals": nnz * w}
        return {**moved, "ix": int(s["nix"]),
                "mt": int(s["nlev"]) * TREE_REC if tree else 2 * int(s["rank"])}

    return compose_kernel(
        _SCATTER.fill(flat=TREE_FLAT if tree else COO_FLAT,
                      move=_CODE_MOVE if code else _WORD_MOVE), name=f"sparse_{kind}_{word}",
        params=(buf("dst", "u8" if code else word, "w"), buf("vals", "u8" if code else word),
                buf("ix", "u32"), buf("mt", "u32"), scalar("nnz"), scalar("n"),
                scalar("bits" if code else "wpe"), scalar("nix"),
                scalar("nlev" if tree else "rank")),
        grid=lambda s: (int(s["nnz"]),), extents=extents,
        reference=lambda a: (_ref_code_scatter if code else _ref_scatter)(a, flat_fn),
        local_size=(256, 1, 1), tags=("layout", "sparse"),
        doc=f"Scatter sub-byte {kind} values as one code byte per dense element." if code else
        f"Scatter {kind} sparse values ({word} words) into a zeroed row-major tensor.")


_SCATTERS = {(k, w): _scatter(k, w) for k in ("tree", "coo") for w in ("u8", "u16", "u32", "code")}


def _ref_pack(a: dict[str, Any]) -> None:
    n, bits, epu, upb = int(a["n"]), int(a["bits"]), int(a["epu"]), int(a["upb"])
    units = -(-n // epu)
    codes = np.zeros(units * epu, np.int64)
    codes[:n] = np.asarray(a["src"][:n], np.int64) & ((1 << bits) - 1)
    acc = (codes.reshape(units, epu) << (np.arange(epu) * bits)).sum(1)
    for b in range(upb):
        a["dst"][b: units * upb: upb] = (acc >> (8 * b)) & 255


PACK_CODES = KernelDef(
    name="layout_pack_codes",
    params=(buf("dst", "u8", "w"), buf("src", "u8"), scalar("n"), scalar("bits"),
            scalar("epu"), scalar("upb")),
    body="""
        u32 u = GLOBAL_ID(0);
        if (u * epu >= n) return;
        u32 acc = 0u;
        for (u32 e = 0u; e < epu; e++) {
            u32 f = u * epu + e;
            if (f < n) acc = acc | ((LOAD(src, f) & ((1u << bits) - 1u)) << (e * bits));
        }
        for (u32 b = 0u; b < upb; b++) STORE(dst, u * upb + b, (acc >> (8u * b)) & 255u);
    """,
    grid=lambda s: (-(-int(s["n"]) // max(int(s["epu"]), 1)),),
    extents=lambda s: {"dst": -(-int(s["n"]) // max(int(s["epu"]), 1)) * int(s["upb"]),
                       "src": s["n"]},
    reference=_ref_pack, local_size=(256, 1, 1), tags=("layout",),
    doc="Pack one code byte per element into LSB-first sub-byte units (whole units).")

def scatter_kernel(kind: str, word: str) -> KernelDef:
    """The scatter kernel for ``kind`` (``"tree"``/``"coo"``) and word type ``word``."""
    return _SCATTERS[(kind, word)]


def code_scatter_kernel(kind: str) -> KernelDef:
    """The sub-byte code scatter kernel for ``kind`` (``"tree"``/``"coo"``)."""
    return _SCATTERS[(kind, "code")]


# -- CSR -> dense in one pass ------------------------------------------------------------
# Each work item zeroes a run of ``seg`` columns of one row, then checks and writes the row's
# stored values that fall in the run in one forward walk. GPUs launch ``seg = 1`` (one output
# element per item: coalesced writes); host C launches long runs, so each row is written once
# while it is in cache.
#
# Index buffers are u64 on the wire, read as (lo, hi) u32 word pairs; a set hi word is an
# invalid index. Every item checks its row's pointer pair (hi words clear, rp[r] <= rp[r+1]
# <= nnz, rp[0] = 0, rp[nrows] = nnz). Its share of the row starts at lower_bound(c0) (the
# row start for column 0); it walks forward, checking each entry (hi word clear, column at
# least c0 and above the previous one) just before writing it, and stops at the first column
# >= c1. The stop must be lower_bound(c1) (the row end for the last run), which the next item
# starts from: the searches are one function of (row, column) in every item, so clean shares
# tile the row in order and the whole row is then valid. Any violation sets err[0] = 1 (the
# host then discards the output and names the position). A walk holds at most seg + 1
# entries, and no write leaves the item's own run, whatever the indices hold. Walking before
# the second search keeps host C's reads of a row sequential (the search then hits cache).
_SEARCH = Piece("column search", """
    lo = a;
    hi = b;
    while (lo < hi) {
        u32 md = lo + (hi - lo) / 2u;
        if (LOAD(ci, 2u * md + 1u) == 0u && LOAD(ci, 2u * md) < $col) {
            lo = md + 1u;
        } else {
            hi = md;
        }
    }""")

_CSR_BODY = Piece("csr rows", """
    u32 c0 = GLOBAL_ID(0) * seg;
    u32 r = GLOBAL_ID(1);
    if (c0 >= ncols || r >= nrows) return;
    u32 c1 = c0 + UMIN(ncols - c0, seg);
    u32 o = r * ncols;
    // The store index is the loop counter itself: a u32 sum (o + c) may wrap as far as a
    // C compiler knows, which keeps it from turning the loop into a memset.
    u32 z1 = (o + c1) * wpe;
    for (u32 j = (o + c0) * wpe; j < z1; j++) STORE(dst, j, 0u);
    u32 a = LOAD(rp, 2u * r);
    u32 b = LOAD(rp, 2u * r + 2u);
    if ((LOAD(rp, 2u * r + 1u) | LOAD(rp, 2u * r + 3u)) != 0u || a > b || b > nnz
            || (r == 0u && a != 0u) || (r + 1u == nrows && b != nnz)) {
        STORE(err, 0u, 1u);
        return;
    }
    u32 lo = a;
    u32 hi = b;
    u32 k = a;
    if (c0 != 0u) {
        $start
        k = lo;
    }
    u32 next = c0;
    for (; k < b; k++) {
        u32 v = LOAD(ci, 2u * k);
        if (LOAD(ci, 2u * k + 1u) != 0u || v < next) {
            STORE(err, 0u, 1u);
            return;
        }
        if (v >= c1) break;
        next = v + 1u;
        if (wpe == 1u) {
            STORE(dst, o + v, LOAD(vals, k));
        } else {
            for (u32 w = 0u; w < wpe; w++) STORE(dst, (o + v) * wpe + w, LOAD(vals, k * wpe + w));
        }
    }
    if (c1 != ncols) {
        $stop
        if (k != lo) STORE(err, 0u, 1u);
    } else if (k != b) {
        STORE(err, 0u, 1u);
    }
""").fill(start=_SEARCH.fill(col="c0"), stop=_SEARCH.fill(col="c1"))


def _pairs(words: Any, count: int) -> np.ndarray:
    """``count`` u64 values from u32 (lo, hi) word pairs (missing words read as invalid)."""
    w = np.asarray(words, np.uint32)[: 2 * count].astype(np.uint64)
    if w.size < 2 * count:
        w = np.concatenate([w, np.full(2 * count - w.size, 0xFFFFFFFF, np.uint64)])
    return w[0::2] | (w[1::2] << np.uint64(32))


def _pointers_ok(rp: np.ndarray, r: int, nrows: int, nnz: int) -> bool:
    """The pointer pair checks every item of row ``r`` makes."""
    a, b = int(rp[r]), int(rp[r + 1])
    return a <= b <= nnz and not (r == 0 and a != 0) and not (r + 1 == nrows and b != nnz)


def _lower_bound(ci: np.ndarray, a: int, b: int, col: int) -> int:
    """The kernel's binary search over ``ci[a:b]``, also on an unsorted row."""
    lo, hi = a, b
    while lo < hi:
        md = lo + (hi - lo) // 2
        lo, hi = (md + 1, hi) if ci[md] < col else (lo, md)
    return lo


def _ref_share(dst: np.ndarray, vals: np.ndarray, ci: np.ndarray, span: tuple[int, ...],
               wpe: int) -> bool:
    """One item on a row that is not valid as a whole: writes what its walk checked; False
    when it meets a violation or stops anywhere but the next run's start."""
    a, b, o, c0, c1, ncols = span
    k = a if c0 == 0 else _lower_bound(ci, a, b, c0)
    nxt = c0
    while k < b:
        v = int(ci[k])
        if v >= 1 << 32 or v < nxt:
            return False
        if v >= c1:
            break
        nxt = v + 1
        dst[(o + v) * wpe:(o + v + 1) * wpe] = vals[k * wpe:(k + 1) * wpe]
        k += 1
    return k == (b if c1 == ncols else _lower_bound(ci, a, b, c1))


def _ref_csr_rows(a: dict[str, Any]) -> None:
    nrows, ncols, nnz = int(a["nrows"]), int(a["ncols"]), int(a["nnz"])
    wpe, seg = int(a["wpe"]), max(int(a["seg"]), 1)
    rp, ci = _pairs(a["rp"], nrows + 1), _pairs(a["ci"], nnz)
    dst, vals = a["dst"], a["vals"]
    dst[: nrows * ncols * wpe] = 0
    for r in range(nrows):
        if not _pointers_ok(rp, r, nrows, nnz):
            a["err"][0] = 1
            continue
        lo, hi = int(rp[r]), int(rp[r + 1])
        cols = ci[lo:hi]
        if bool((cols < ncols).all() and (cols[1:] > cols[:-1]).all()):
            at = (r * ncols + cols.astype(np.int64))[:, None] * wpe + np.arange(wpe)
            dst[at.reshape(-1)] = vals[lo * wpe:hi * wpe]
            continue
        for c0 in range(0, ncols, seg):  # an invalid row: replay each item's share
            span = (lo, hi, r * ncols, c0, min(c0 + seg, ncols), ncols)
            if not _ref_share(dst, vals, ci, span, wpe):
                a["err"][0] = 1


def _make(word: str) -> KernelDef:
    return compose_kernel(
        _CSR_BODY, name=f"sparse_csr_rows_{word}",
        params=(buf("dst", word, "w"), buf("vals", word), buf("ci", "u32"), buf("rp", "u32"),
                buf("err", "u32", "rw"), scalar("nrows"), scalar("ncols"), scalar("nnz"),
                scalar("wpe"), scalar("seg")),
        grid=lambda s: (-(-int(s["ncols"]) // max(int(s["seg"]), 1)), int(s["nrows"])),
        extents=lambda s: {"dst": int(s["nrows"]) * int(s["ncols"]) * int(s["wpe"]),
                           "vals": int(s["nnz"]) * int(s["wpe"]), "ci": 2 * int(s["nnz"]),
                           "rp": 2 * (int(s["nrows"]) + 1), "err": 1},
        reference=_ref_csr_rows, local_size=(64, 4, 1), tags=("layout", "sparse"),
        doc=f"CSR -> dense ({word} words): runs of seg columns per item, indices checked.")


CSR_ROWS = {w: _make(w) for w in ("u8", "u16", "u32")}


def csr_rows_kernel(word: str) -> KernelDef:
    """The one-pass CSR -> dense kernel for ``word`` (``"u8"``/``"u16"``/``"u32"``)."""
    return CSR_ROWS[word]


# -- index validation ----------------------------------------------------------------------
# Index-buffer validation kernels (run on the device before any scatter or gather reads an
# index): u64 hi words, compressed pos/crd invariants, COO bounds/order/duplicates, block tables.
# Each sets ``err[0] = 1`` on a violation; the host then names the first bad position.

# Large 1-D work-groups: pocl pays a cost per work-group that small groups multiply.
_WIDE = (256, 1, 1)


def _ref_zero(a: dict[str, Any]) -> None:
    a["dst"][: int(a["n"])] = 0


ZERO_WORDS = KernelDef(
    name="layout_zero_words",
    params=(buf("dst", "u32", "w"), scalar("n")),
    body="""
        u32 j = GLOBAL_ID(0);
        if (j >= n) return;
        STORE(dst, j, 0u);
    """,
    grid=lambda s: (int(s["n"]),), extents=lambda s: {"dst": s["n"]}, reference=_ref_zero,
    local_size=_WIDE, tags=("layout",), doc="dst[j] = 0 for j < n (sparse outputs).")


def _ref_copy(a: dict[str, Any]) -> None:
    n, at = int(a["n"]), int(a["dat"])
    a["dst"][at:at + n] = a["src"][:n]


COPY_WORDS = KernelDef(
    name="layout_copy_words",
    params=(buf("dst", "u32", "w"), buf("src", "u32"), scalar("n"), scalar("dat")),
    body="""
        u32 j = GLOBAL_ID(0);
        if (j >= n) return;
        STORE(dst, dat + j, LOAD(src, j));
    """,
    grid=lambda s: (int(s["n"]),), extents=lambda s: {"dst": s["dat"] + s["n"], "src": s["n"]},
    reference=_ref_copy, local_size=_WIDE, tags=("layout",),
    doc="dst[dat + j] = src[j]: concatenating words.")


def _ref_hi(a: dict[str, Any]) -> None:
    n = int(a["n"])
    if (np.asarray(a["ix"][1: 2 * n: 2]) != 0).any():
        a["err"][0] = 1


CHECK_HI = KernelDef(
    name="layout_check_hi",
    params=(buf("err", "u32", "w"), buf("ix", "u32"), scalar("n")),
    body="""
        u32 j = GLOBAL_ID(0);
        if (j >= n) return;
        if (LOAD(ix, 2u * j + 1u) != 0u) STORE(err, 0u, 1u);
    """,
    grid=lambda s: (int(s["n"]),), extents=lambda s: {"err": 1, "ix": 2 * s["n"]},
    reference=_ref_hi, local_size=_WIDE, tags=("layout", "check"),
    doc="Every u64 index is below 2**32 (its hi word is zero).")

# Node q of a compressed level owns crd[pos[q] .. pos[q+1]): pos starts at 0, ends at ncrd,
# never decreases, and the owned coordinates are strictly increasing and below extent. Item
# (q, c) checks the pointers and coordinates c * span .. of node q: span bounds the loop (a
# device's loop budget), and grid y needs cover only extent + 1 of them, since a longer run
# cannot be strictly increasing below extent.
_TREE_BODY = """
    u32 q = GLOBAL_ID(0);
    if (q >= nodes) return;
    u32 pa = pos_off + 2u * q;
    if (pa + 2u >= nix) { STORE(err, 0u, 1u); return; }
    u32 a = LOAD(ix, pa);
    u32 b = LOAD(ix, pa + 2u);
    if (q == 0u && a != 0u) STORE(err, 0u, 1u);
    if (q + 1u == nodes && b != ncrd) STORE(err, 0u, 1u);
    if (a > b || b > ncrd) { STORE(err, 0u, 1u); return; }
    u32 sp = UMAX(span, 1u);
    if (GLOBAL_ID(1) > (b - a) / sp) return;
    u32 k0 = a + GLOBAL_ID(1) * sp;
    u32 k1 = k0 + UMIN(b - k0, sp);
    u32 prev = 0u;
    if (k0 > a && crd_off + 2u * k0 - 2u < nix) prev = LOAD(ix, crd_off + 2u * k0 - 2u);
    for (u32 k = k0; k < k1; k++) {
        u32 c = crd_off + 2u * k;
        u32 v = c < nix ? LOAD(ix, c) : extent;
        if (v >= extent || (k > a && v <= prev)) { STORE(err, 0u, 1u); return; }
        prev = v;
    }
"""


def _ref_tree(a: dict[str, Any]) -> None:
    nodes, ncrd, nix = int(a["nodes"]), int(a["ncrd"]), int(a["nix"])
    ix = np.asarray(a["ix"], np.int64)[:nix]
    pos = ix[int(a["pos_off"]): int(a["pos_off"]) + 2 * (nodes + 1): 2]
    crd = ix[int(a["crd_off"]): int(a["crd_off"]) + 2 * ncrd: 2]
    bad = pos.size < nodes + 1 or pos[0] != 0 or pos[nodes] != ncrd
    bad = bad or bool((np.diff(pos) < 0).any()) or crd.size < ncrd
    if not bad:
        owner = np.repeat(np.arange(nodes), np.diff(pos))
        same = owner[1:] == owner[:-1]
        bad = bool((crd >= int(a["extent"])).any() or (same & (crd[1:] <= crd[:-1])).any())
    if bad:
        a["err"][0] = 1


CHECK_TREE = KernelDef(
    name="layout_check_tree",
    params=(buf("err", "u32", "w"), buf("ix", "u32"), scalar("nodes"), scalar("pos_off"),
            scalar("crd_off"), scalar("ncrd"), scalar("extent"), scalar("nix"), scalar("span")),
    body=_TREE_BODY, grid=lambda s: (int(s["nodes"]), max(1, -(-min(
        int(s["ncrd"]), int(s["extent"]) + 1) // max(int(s["span"]), 1)))),
    extents=lambda s: {"err": 1, "ix": s["nix"]}, reference=_ref_tree,
    tags=("layout", "check"), doc="CSR/CSC/CSF pos and crd invariants of one level.")

_COO_BODY = """
    u32 i = GLOBAL_ID(0);
    if (i >= nnz) return;
    u32 state = 0u;
    for (u32 d = 0u; d < rank; d++) {
        u32 c = 2u * (i * rank + d);
        u32 v = LOAD(ix, c);
        if (v >= LOAD(mt, 2u * d)) STORE(err, 0u, 1u);
        if (srt != 0u && i > 0u && state == 0u) {
            u32 w = LOAD(ix, c - 2u * rank);
            if (v > w) state = 1u;
            if (v < w) state = 2u;
        }
    }
    if (srt != 0u && i > 0u && state != 1u) STORE(err, 0u, 1u);
"""


def _ref_coo(a: dict[str, Any]) -> None:
    nnz, rank = int(a["nnz"]), int(a["rank"])
    if nnz == 0:
        return
    idx = np.asarray(a["ix"], np.int64)[: 2 * nnz * rank: 2].reshape(nnz, rank)
    bad = bool((idx >= np.asarray(a["mt"], np.int64)[0: 2 * rank: 2]).any())
    if a["srt"] and nnz > 1:
        diff = np.sign(idx[1:] - idx[:-1])
        first = diff[np.arange(nnz - 1), np.argmax(diff != 0, axis=1)]
        bad = bad or bool((first != 1).any())
    if bad:
        a["err"][0] = 1


CHECK_COO = KernelDef(
    name="layout_check_coo",
    params=(buf("err", "u32", "w"), buf("ix", "u32"), buf("mt", "u32"), scalar("nnz"),
            scalar("rank"), scalar("srt")),
    body=_COO_BODY, grid=lambda s: (int(s["nnz"]),),
    extents=lambda s: {"err": 1, "ix": 2 * s["nnz"] * s["rank"], "mt": 2 * s["rank"]},
    reference=_ref_coo, local_size=_WIDE, tags=("layout", "check"),
    doc="COO coordinates in bounds and, when sorted, strictly increasing.")

_COO_PASS = Piece("coo pass", """
    u32 i = GLOBAL_ID(0);
    if (i >= nnz) return;
    u32 fi = 0u;
    for (u32 d = 0u; d < rank; d++) {
        fi = fi + LOAD(ix, 2u * (i * rank + d)) * LOAD(mt, 2u * d + 1u);
    }
    if (fi >= n) return;
    $tail
""")


def _coo_flat(a: dict[str, Any]) -> np.ndarray:
    fi, _ = ref_coo_flat({**a, "nix": 2 * int(a["nnz"]) * int(a["rank"])}, int(a["nnz"]))
    return fi


def _ref_mark(a: dict[str, Any]) -> None:
    fi = _coo_flat(a)
    keep = fi < int(a["n"])
    a["mark"][fi[keep]] = np.flatnonzero(keep) + 1  # the last writer wins, like one race


def _ref_dup(a: dict[str, Any]) -> None:
    fi = _coo_flat(a)
    keep = fi < int(a["n"])
    if (np.asarray(a["mark"])[fi[keep]] != np.flatnonzero(keep) + 1).any():
        a["err"][0] = 1


def _coo_pass(name: str, access: str, tail: str, ref: Any, doc: str) -> KernelDef:
    params: tuple[Param, ...] = (buf("mark", "u32", access), buf("ix", "u32"),
                                 buf("mt", "u32"), scalar("nnz"), scalar("rank"), scalar("n"))
    if name.endswith("dup"):
        params = (buf("err", "u32", "w"), *params)
    return compose_kernel(
        _COO_PASS.fill(tail=tail), name=name, params=params, grid=lambda s: (int(s["nnz"]),),
        extents=lambda s: {"err": 1, "mark": s["n"], "ix": 2 * s["nnz"] * s["rank"],
                           "mt": 2 * s["rank"]},
        reference=ref, local_size=_WIDE, tags=("layout", "check"), doc=doc)


# Duplicates without atomics: every entry writes its id to its cell; an entry that does not
# find its own id there shares the cell with another entry.
COO_MARK = _coo_pass("layout_coo_mark", "w", "    STORE(mark, fi, i + 1u);\n", _ref_mark,
                     "Unsorted COO duplicate check, pass 1: mark[fi] = i + 1.")
COO_DUP = _coo_pass("layout_coo_dup", "r",
                    "    if (LOAD(mark, fi) != i + 1u) STORE(err, 0u, 1u);\n", _ref_dup,
                    "Unsorted COO duplicate check, pass 2: flag a lost mark.")

CHECK_KERNELS = (ZERO_WORDS, COPY_WORDS, CHECK_HI, CHECK_TREE, CHECK_COO, COO_MARK, COO_DUP)

SPARSE_KERNELS = (*_SCATTERS.values(), PACK_CODES, *CHECK_KERNELS,
                  *CSR_ROWS.values())
