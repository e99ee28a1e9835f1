"""Index-buffer validation kernels (run on the device before any scatter or gather reads an
index): u64 hi words, compressed pos/crd invariants, COO bounds/order/duplicates, block tables.
Each sets ``err[0] = 1`` on a violation; the host then names the first bad position.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.kernels.dialect.kernel import KernelDef, Param, buf, scalar
from hurray_gpu.kernels.layout_sparse import ref_coo_flat

__all__ = ["CHECK_KERNELS", "CHECK_COO", "CHECK_HI", "CHECK_TREE", "COO_DUP", "COO_MARK",
           "COPY_WORDS", "ZERO_WORDS"]

_ERR = "STORE(err, 0u, 1u);"
# Large 1-D work-groups: pocl pays a few microseconds per group (64-item groups made a 1.6 MB
# copy take 14 ms).
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
    reference=_ref_copy, local_size=_WIDE, tags=("layout",), doc="dst[dat + j] = src[j]: concatenating words.")


def _ref_hi(a: dict[str, Any]) -> None:
    n = int(a["n"])
    if (np.asarray(a["ix"][1: 2 * n: 2]) != 0).any():
        a["err"][0] = 1


CHECK_HI = KernelDef(
    name="layout_check_hi",
    params=(buf("err", "u32", "w"), buf("ix", "u32"), scalar("n")),
    body=f"""
        u32 j = GLOBAL_ID(0);
        if (j >= n) return;
        if (LOAD(ix, 2u * j + 1u) != 0u) {_ERR}
    """,
    grid=lambda s: (int(s["n"]),), extents=lambda s: {"err": 1, "ix": 2 * s["n"]},
    reference=_ref_hi, local_size=_WIDE, tags=("layout", "check"),
    doc="Every u64 index is below 2**32 (its hi word is zero).")

# Node q of a compressed level owns crd[pos[q] .. pos[q+1]): pos starts at 0, ends at ncrd,
# never decreases, and the owned coordinates are strictly increasing and below extent.
_TREE_BODY = f"""
    u32 q = GLOBAL_ID(0);
    if (q >= nodes) return;
    u32 pa = pos_off + 2u * q;
    if (pa + 2u >= nix) {{ {_ERR} return; }}
    u32 a = LOAD(ix, pa);
    u32 b = LOAD(ix, pa + 2u);
    if (q == 0u && a != 0u) {_ERR}
    if (q + 1u == nodes && b != ncrd) {_ERR}
    if (a > b || b > ncrd) {{ {_ERR} return; }}
    u32 prev = 0u;
    for (u32 k = a; k < b; k++) {{
        u32 c = crd_off + 2u * k;
        u32 v = c < nix ? LOAD(ix, c) : extent;
        if (v >= extent || (k > a && v <= prev)) {{ {_ERR} return; }}
        prev = v;
    }}
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
            scalar("crd_off"), scalar("ncrd"), scalar("extent"), scalar("nix")),
    body=_TREE_BODY, grid=lambda s: (int(s["nodes"]),),
    extents=lambda s: {"err": 1, "ix": s["nix"]}, reference=_ref_tree,
    tags=("layout", "check"), doc="CSR/CSC/CSF pos and crd invariants of one level.")

_COO_BODY = f"""
    u32 i = GLOBAL_ID(0);
    if (i >= nnz) return;
    u32 state = 0u;
    for (u32 d = 0u; d < rank; d++) {{
        u32 c = 2u * (i * rank + d);
        u32 v = LOAD(ix, c);
        if (v >= LOAD(mt, 2u * d)) {_ERR}
        if (srt != 0u && i > 0u && state == 0u) {{
            u32 w = LOAD(ix, c - 2u * rank);
            if (v > w) state = 1u;
            if (v < w) state = 2u;
        }}
    }}
    if (srt != 0u && i > 0u && state != 1u) {_ERR}
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

_FLAT = """
    u32 i = GLOBAL_ID(0);
    if (i >= nnz) return;
    u32 fi = 0u;
    for (u32 d = 0u; d < rank; d++) {
        fi = fi + LOAD(ix, 2u * (i * rank + d)) * LOAD(mt, 2u * d + 1u);
    }
    if (fi >= n) return;
"""


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
    return KernelDef(
        name=name, params=params, body=_FLAT + tail, grid=lambda s: (int(s["nnz"]),),
        extents=lambda s: {"err": 1, "mark": s["n"], "ix": 2 * s["nnz"] * s["rank"],
                           "mt": 2 * s["rank"]},
        reference=ref, local_size=_WIDE, tags=("layout", "check"), doc=doc)


# Duplicates without atomics: every entry writes its id to its cell; an entry that does not
# find its own id there shares the cell with another entry.
COO_MARK = _coo_pass("layout_coo_mark", "w", "    STORE(mark, fi, i + 1u);\n", _ref_mark,
                     "Unsorted COO duplicate check, pass 1: mark[fi] = i + 1.")
COO_DUP = _coo_pass("layout_coo_dup", "r",
                    f"    if (LOAD(mark, fi) != i + 1u) {_ERR}\n", _ref_dup,
                    "Unsorted COO duplicate check, pass 2: flag a lost mark.")

CHECK_KERNELS = (ZERO_WORDS, COPY_WORDS, CHECK_HI, CHECK_TREE, CHECK_COO, COO_MARK, COO_DUP)
