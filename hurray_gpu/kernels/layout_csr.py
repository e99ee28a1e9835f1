"""CSR -> dense row-major in one pass: each work item writes a run of ``seg`` columns of one
row (zeros, then the row's stored values that fall in the run), checking every index it reads.

GPUs launch ``seg = 1`` (one output element per item: coalesced writes, a binary search for
the column); host C launches long runs, so each row is written once while it is in cache.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.kernels.dialect.kernel import KernelDef, buf, scalar

__all__ = ["CSR_ROWS", "csr_rows_kernel"]

# Index buffers are u64 on the wire, read as (lo, hi) u32 word pairs; a set hi word is an
# invalid index. The item holding column 0 of a row also checks the whole row: pointer pair
# (rp[0] = 0, rp[nrows] = nnz, non-decreasing) and strictly increasing in-bounds columns, and
# sets err[0] = 1 on a violation (the host then discards the output and names the position).
# Every other item only trusts the pointer pair it bounds itself: no read or write leaves its
# buffer whatever the indices hold.
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
    u32 ok = 1u;
    if ((LOAD(rp, 2u * r + 1u) | LOAD(rp, 2u * r + 3u)) != 0u || a > b || b > nnz) ok = 0u;
    if (c0 == 0u) {
        if ((r == 0u && a != 0u) || (r + 1u == nrows && b != nnz)) ok = 0u;
        u32 prev = 0u;
        for (u32 k = a; k < b && ok != 0u; k++) {
            u32 v = LOAD(ci, 2u * k);
            if (LOAD(ci, 2u * k + 1u) != 0u || v >= ncols || (k > a && v <= prev)) ok = 0u;
            prev = v;
        }
        if (ok == 0u) STORE(err, 0u, 1u);
    }
    if (ok == 0u) return;
    u32 lo = a;
    u32 hi = b;
    while (lo < hi) {
        u32 md = lo + (hi - lo) / 2u;
        if (LOAD(ci, 2u * md + 1u) == 0u && LOAD(ci, 2u * md) < c0) {
            lo = md + 1u;
        } else {
            hi = md;
        }
    }
    for (u32 k = lo; k < b; k++) {
        u32 v = LOAD(ci, 2u * k);
        if (LOAD(ci, 2u * k + 1u) != 0u || v >= c1) break;
        if (wpe == 1u) {
            STORE(dst, o + v, LOAD(vals, k));
        } else {
            for (u32 w = 0u; w < wpe; w++) STORE(dst, (o + v) * wpe + w, LOAD(vals, k * wpe + w));
        }
    }
"""


def _pairs(words: Any, count: int) -> np.ndarray:
    """``count`` u64 values from u32 (lo, hi) word pairs (missing words read as invalid)."""
    w = np.asarray(words, np.uint32)[: 2 * count].astype(np.uint64)
    if w.size < 2 * count:
        w = np.concatenate([w, np.full(2 * count - w.size, 0xFFFFFFFF, np.uint64)])
    return w[0::2] | (w[1::2] << np.uint64(32))


def _row_ok(rp: np.ndarray, ci: np.ndarray, r: int, nrows: int, ncols: int,
            nnz: int) -> tuple[bool, bool]:
    """(pointer pair usable, whole row valid) for row ``r``, as the kernel decides them."""
    a, b = int(rp[r]), int(rp[r + 1])
    usable = a <= b <= nnz
    valid = usable and not (r == 0 and a != 0) and not (r + 1 == nrows and b != nnz)
    if valid:
        cols = ci[a:b]
        valid = bool((cols < ncols).all() and (cols[1:] > cols[:-1]).all())
    return usable, valid


def _ref_segment(dst: np.ndarray, vals: np.ndarray, ci: np.ndarray, span: tuple[int, ...],
                 wpe: int) -> None:
    """One non-validating item on a usable row: lower bound of c0, then writes below c1."""
    a, b, o, c0, c1 = span
    lo, hi = a, b
    while lo < hi:  # the kernel's binary search, also on an unsorted row
        md = lo + (hi - lo) // 2
        lo, hi = (md + 1, hi) if ci[md] < c0 else (lo, md)
    for k in range(lo, b):
        v = int(ci[k])
        if v >= c1:
            break
        dst[(o + v) * wpe:(o + v + 1) * wpe] = vals[k * wpe:(k + 1) * wpe]


def _ref_csr_rows(a: dict[str, Any]) -> None:
    nrows, ncols, nnz = int(a["nrows"]), int(a["ncols"]), int(a["nnz"])
    wpe, seg = int(a["wpe"]), max(int(a["seg"]), 1)
    rp, ci = _pairs(a["rp"], nrows + 1), _pairs(a["ci"], nnz)
    dst, vals = a["dst"], a["vals"]
    dst[: nrows * ncols * wpe] = 0
    for r in range(nrows):
        usable, valid = _row_ok(rp, ci, r, nrows, ncols, nnz)
        if not valid:
            a["err"][0] = 1
        if valid:
            lo, hi = int(rp[r]), int(rp[r + 1])
            cols = ci[lo:hi].astype(np.int64)  # all below ncols here
            at = (r * ncols + cols)[:, None] * wpe + np.arange(wpe)
            dst[at.reshape(-1)] = vals[lo * wpe:hi * wpe]
        elif usable:
            for c0 in range(seg, ncols, seg):  # the column-0 item of a bad row writes nothing
                span = (int(rp[r]), int(rp[r + 1]), r * ncols, c0, min(c0 + seg, ncols))
                _ref_segment(dst, vals, ci, span, wpe)


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
