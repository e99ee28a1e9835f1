"""CSR -> dense row-major in one pass: each work item zeroes a run of ``seg`` columns of one row,
then checks and writes the row's stored values that fall in the run in one forward walk.

GPUs launch ``seg = 1`` (one output element per item: coalesced writes); host C launches long
runs, so each row is written once while it is in cache.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.kernels.dialect.kernel import KernelDef, buf, scalar

__all__ = ["CSR_ROWS", "csr_rows_kernel"]

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
_SEARCH = """
    lo = a;
    hi = b;
    while (lo < hi) {
        u32 md = lo + (hi - lo) / 2u;
        if (LOAD(ci, 2u * md + 1u) == 0u && LOAD(ci, 2u * md) < COL) {
            lo = md + 1u;
        } else {
            hi = md;
        }
    }"""

_BODY = """
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
    if (c0 != 0u) {""" + _SEARCH.replace("COL", "c0") + """
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
    if (c1 != ncols) {""" + _SEARCH.replace("COL", "c1") + """
        if (k != lo) STORE(err, 0u, 1u);
    } else if (k != b) {
        STORE(err, 0u, 1u);
    }
"""


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
    return KernelDef(
        name=f"sparse_csr_rows_{word}",
        params=(buf("dst", word, "w"), buf("vals", word), buf("ci", "u32"), buf("rp", "u32"),
                buf("err", "u32", "rw"), scalar("nrows"), scalar("ncols"), scalar("nnz"),
                scalar("wpe"), scalar("seg")),
        body=_BODY,
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
