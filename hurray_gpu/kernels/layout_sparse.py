"""Sparse -> dense kernels (COO, and CSR/CSC/CSF as one compressed tree) plus the index
validation kernels that run before any index is dereferenced. NumPy references included.

Index arrays are u64 on the wire; kernels read them as u32 word pairs from one concatenated
``ix`` buffer (hi words are checked zero first). Checks set ``err[0] = 1``; the host then names
the first bad position.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.kernels.dialect.kernel import KernelDef, buf, scalar

__all__ = ["PACK_CODES", "SPARSE_KERNELS", "TREE_REC", "code_scatter_kernel",
           "scatter_kernel"]

TREE_REC = 6  # per level: crd_off, pos_off, pos_count, stride, extent, dense (words)
_BAD = "0xffffffffu"

# Row-major fi index of tree leaf i: walk up the levels, finding each parent by binary
# search in pos (largest q with pos[q] <= p); an index outside ix reads as invalid.
_TREE_FLAT = """
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
            coord = c < nix ? LOAD(ix, c) : BAD;
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
                u32 v = c < nix ? LOAD(ix, c) : BAD;
                if (v <= p) lo = md; else hi = md;
            }
            p = lo;
        }
    }
""".replace("BAD", _BAD)

_COO_FLAT = """
    u32 fi = 0u;
    u32 ok = 1u;
    for (u32 d = 0u; d < rank; d++) {
        u32 c = 2u * (i * rank + d);
        u32 coord = c < nix ? LOAD(ix, c) : BAD;
        if (coord >= LOAD(mt, 2u * d)) ok = 0u;
        fi = fi + coord * LOAD(mt, 2u * d + 1u);
    }
""".replace("BAD", _BAD)

_SCATTER = """
    u32 i = GLOBAL_ID(0);
    if (i >= nnz) return;
{FLAT}
    if (ok == 0u || fi >= n) return;
    for (u32 w = 0u; w < wpe; w++) STORE(dst, fi * wpe + w, LOAD(vals, i * wpe + w));
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


def _scatter(kind: str, word: str) -> KernelDef:
    tree = kind == "tree"
    extra = (scalar("nlev"),) if tree else (scalar("rank"),)
    return KernelDef(
        name=f"sparse_{kind}_{word}",
        params=(buf("dst", word, "w"), buf("vals", word), buf("ix", "u32"), buf("mt", "u32"),
                scalar("nnz"), scalar("n"), scalar("wpe"), scalar("nix"), *extra),
        body=_SCATTER.replace("{FLAT}", _TREE_FLAT if tree else _COO_FLAT),
        grid=lambda s: (int(s["nnz"]),),
        extents=lambda s, t=tree: {  # type: ignore[misc]
            "dst": int(s["n"]) * int(s["wpe"]), "vals": int(s["nnz"]) * int(s["wpe"]),
            "ix": int(s["nix"]),
            "mt": (int(s["nlev"]) * TREE_REC) if t else 2 * int(s["rank"])},
        reference=lambda a, t=tree: _ref_scatter(  # type: ignore[misc]
            a, ref_tree_flat if t else ref_coo_flat),
        local_size=(256, 1, 1), tags=("layout", "sparse"),
        doc=f"Scatter {kind} sparse values ({word} words) into a zeroed row-major tensor.")


_SCATTERS = {(k, w): _scatter(k, w) for k in ("tree", "coo") for w in ("u8", "u16", "u32")}

# Sub-byte values: value i is bits [i*bits, i*bits + bits) of the packed stream; it lands as
# one code byte per dense element (packed afterwards by layout_pack_codes, race-free).
_CODE_SCATTER = """
    u32 i = GLOBAL_ID(0);
    if (i >= nnz) return;
{FLAT}
    if (ok == 0u || fi >= n) return;
    u32 bit = i * bits;
    u32 at = bit >> 3u;
    u32 sh = bit & 7u;
    u32 code = LOAD(vals, at) >> sh;
    if (sh + bits > 8u) code = code | (LOAD(vals, at + 1u) << (8u - sh));
    STORE(dst, fi, code & ((1u << bits) - 1u));
"""


def _ref_code_scatter(a: dict[str, Any], flat_fn: Any) -> None:
    nnz, n, bits = int(a["nnz"]), int(a["n"]), int(a["bits"])
    fi, ok = flat_fn(a, nnz)
    ok &= fi < n
    raw = np.concatenate([np.asarray(a["vals"], np.int64), [0, 0]])
    bit = np.flatnonzero(ok) * bits
    pair = raw[bit >> 3] | (raw[(bit >> 3) + 1] << 8)
    a["dst"][fi[ok]] = (pair >> (bit & 7)) & ((1 << bits) - 1)


def _code_scatter(kind: str) -> KernelDef:
    tree = kind == "tree"
    extra = (scalar("nlev"),) if tree else (scalar("rank"),)
    return KernelDef(
        name=f"sparse_{kind}_code",
        params=(buf("dst", "u8", "w"), buf("vals", "u8"), buf("ix", "u32"), buf("mt", "u32"),
                scalar("nnz"), scalar("n"), scalar("bits"), scalar("nix"), *extra),
        body=_CODE_SCATTER.replace("{FLAT}", _TREE_FLAT if tree else _COO_FLAT),
        grid=lambda s: (int(s["nnz"]),),
        extents=lambda s, t=tree: {  # type: ignore[misc]
            "dst": int(s["n"]), "vals": (int(s["nnz"]) * int(s["bits"]) + 7) // 8,
            "ix": int(s["nix"]),
            "mt": (int(s["nlev"]) * TREE_REC) if t else 2 * int(s["rank"])},
        reference=lambda a, t=tree: _ref_code_scatter(  # type: ignore[misc]
            a, ref_tree_flat if t else ref_coo_flat),
        local_size=(256, 1, 1), tags=("layout", "sparse"),
        doc=f"Scatter sub-byte {kind} values as one code byte per dense element.")


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

_CODES = {k: _code_scatter(k) for k in ("tree", "coo")}


def scatter_kernel(kind: str, word: str) -> KernelDef:
    """The scatter kernel for ``kind`` (``"tree"``/``"coo"``) and word type ``word``."""
    return _SCATTERS[(kind, word)]


def code_scatter_kernel(kind: str) -> KernelDef:
    """The sub-byte code scatter kernel for ``kind`` (``"tree"``/``"coo"``)."""
    return _CODES[kind]


SPARSE_KERNELS = (*_SCATTERS.values(), *_CODES.values(), PACK_CODES)
