"""Block-paged -> dense kernels: the logical [total_tokens, heads, dim] view gathered through
the block table and seq_ptr, and the validation of both before any page id is used.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.dialect.kernel import KernelDef, buf, scalar

__all__ = ["CHECK_PAGED", "PAGED_GATHERS", "PAGED_IX_HEADER", "paged_gather", "ref_token_slots"]

# Token y belongs to sequence s with ts[s] <= y < ts[s+1] (ts: token starts, host-checked);
# its page is bt[sp[s] + t / ps]; iw = 1 (u32 ids) or 2 (u64 ids, low word first).
_GATHER = """
    u32 x = GLOBAL_ID(0);
    u32 y = GLOBAL_ID(1);
    if (x >= row || y >= ntok) return;
    u32 lo = 0u;
    u32 hi = nseq;
    while (hi - lo > 1u) {
        u32 md = lo + (hi - lo) / 2u;
        if (LOAD(ts, md) <= y) lo = md; else hi = md;
    }
    u32 t = y - LOAD(ts, lo);
    u32 slot = LOAD(sp, lo * iw) + t / ps;
    u32 page = slot < nbt ? LOAD(bt, slot * iw) : npages;
    u32 ok = page < npages ? 1u : 0u;
    u32 src = 0u;
    if (ok != 0u) src = ((page * ps + t % ps) * row + x) * wpe;
    u32 o = (y * row + x) * wpe;
    for (u32 w = 0u; w < wpe; w++) {
        u32 v = 0u;
        if (ok != 0u && src + w < npool) v = LOAD(pool, src + w);
        STORE(dst, o + w, v);
    }
"""


# Words before the token starts in the ``ix`` lookup buffer of the fused paged dequant
# kernels: nseq, page_size, num_pages, block-table entries, index width; then the token
# starts (nseq + 1), seq_ptr and the block table (see dequant_variants).
PAGED_IX_HEADER = 5


def _ref_slots(ts: np.ndarray, bt: Any, sp: Any, ntok: int, geometry: tuple[int, ...]
               ) -> tuple[np.ndarray, np.ndarray]:
    """(pool slot page * ps + t % ps, valid) of every token, as the kernels find them."""
    nseq, ps, npages, nbt, iw = geometry
    ts = ts[: nseq + 1]
    y = np.arange(ntok, dtype=np.int64)
    s = np.searchsorted(ts[1:-1], y, "right") if ts.size > 2 else np.zeros(ntok, np.int64)
    t = y - ts[s]
    slot = np.asarray(sp, np.int64)[s * iw] + t // ps
    table = np.concatenate([np.asarray(bt, np.int64)[: nbt * iw], [npages]])
    page = table[np.where(slot < nbt, slot * iw, table.size - 1)]
    ok = page < npages
    return np.where(ok, page * ps + t % ps, 0), ok


def ref_token_slots(ix: np.ndarray, ntok: int) -> tuple[np.ndarray, np.ndarray]:
    """``_ref_slots`` over an ``ix`` lookup buffer (PAGED_IX_HEADER geometry first)."""
    nseq, ps, npages, nbt, iw = (int(v) for v in ix[:PAGED_IX_HEADER])
    spo = PAGED_IX_HEADER + nseq + 1
    bto = spo + (nseq + 1) * iw
    return _ref_slots(ix[PAGED_IX_HEADER:spo], ix[bto:], ix[spo:bto], ntok,
                      (nseq, max(ps, 1), npages, nbt, iw))


def _ref_gather(a: dict[str, Any]) -> None:
    row, ntok, wpe = int(a["row"]), int(a["ntok"]), int(a["wpe"])
    geometry = tuple(int(a[k]) for k in ("nseq", "ps", "npages", "nbt", "iw"))
    slot, ok = _ref_slots(np.asarray(a["ts"], np.int64), a["bt"], a["sp"], ntok, geometry)
    x = np.arange(row, dtype=np.int64)
    src = (slot[:, None] * row + x) * wpe
    for w in range(wpe):
        valid = ok[:, None] & (src + w < int(a["npool"]))
        vals = np.where(valid, np.asarray(a["pool"])[np.where(valid, src + w, 0)], 0)
        a["dst"][w: ntok * row * wpe: wpe] = vals.reshape(-1)


def _gather(word: str) -> KernelDef:
    return KernelDef(
        name=f"layout_paged_{word}",
        params=(buf("dst", word, "w"), buf("pool", word), buf("bt", "u32"), buf("sp", "u32"),
                buf("ts", "u32"), scalar("row"), scalar("ntok"), scalar("nseq"), scalar("ps"),
                scalar("npages"), scalar("nbt"), scalar("iw"), scalar("wpe"), scalar("npool")),
        body=_GATHER, grid=lambda s: (int(s["row"]), int(s["ntok"])),
        extents=lambda s: {"dst": int(s["ntok"]) * int(s["row"]) * int(s["wpe"]),
                           "pool": s["npool"], "bt": int(s["nbt"]) * int(s["iw"]),
                           "sp": (int(s["nseq"]) + 1) * int(s["iw"]), "ts": int(s["nseq"]) + 1},
        reference=_ref_gather, local_size=(64, 4, 1), tags=("layout", "paged"),
        doc=f"Block-paged KV pool -> dense [tokens, heads*dim] rows ({word} words).")


PAGED_GATHERS = {w: _gather(w) for w in ("u8", "u16", "u32")}


def paged_gather(word: str) -> KernelDef:
    """The paged gather kernel moving ``word`` words."""
    return PAGED_GATHERS[word]


# Work item j < nbt checks block_table[j]; j <= nseq checks seq_ptr[j] (0 first, monotone,
# last = nbt); u64 ids must have zero high words.
_CHECK = """
    u32 j = GLOBAL_ID(0);
    if (j < nbt) {
        if (LOAD(bt, j * iw) >= npages) STORE(err, 0u, 1u);
        if (iw == 2u && LOAD(bt, j * 2u + 1u) != 0u) STORE(err, 0u, 1u);
    }
    if (j <= nseq) {
        u32 v = LOAD(sp, j * iw);
        if (iw == 2u && LOAD(sp, j * 2u + 1u) != 0u) STORE(err, 0u, 1u);
        if (j == 0u && v != 0u) STORE(err, 0u, 1u);
        if (j == nseq && v != nbt) STORE(err, 0u, 1u);
        if (j > 0u && v < LOAD(sp, (j - 1u) * iw)) STORE(err, 0u, 1u);
    }
"""


def _ref_check(a: dict[str, Any]) -> None:
    iw, nbt, nseq = int(a["iw"]), int(a["nbt"]), int(a["nseq"])
    bt = np.asarray(a["bt"], np.int64)[: nbt * iw].reshape(nbt, iw)
    sp = np.asarray(a["sp"], np.int64)[: (nseq + 1) * iw].reshape(nseq + 1, iw)
    bad = bool((bt[:, 0] >= int(a["npages"])).any()) or (iw == 2 and bool(bt[:, 1].any()))
    bad = bad or (iw == 2 and bool(sp[:, 1].any())) or sp[0, 0] != 0 or sp[-1, 0] != nbt
    if bad or bool((np.diff(sp[:, 0]) < 0).any()):
        a["err"][0] = 1


CHECK_PAGED = KernelDef(
    name="layout_check_paged",
    params=(buf("err", "u32", "w"), buf("bt", "u32"), buf("sp", "u32"), scalar("nbt"),
            scalar("nseq"), scalar("npages"), scalar("iw")),
    body=_CHECK, grid=lambda s: (max(int(s["nbt"]), int(s["nseq"]) + 1),),
    extents=lambda s: {"err": 1, "bt": int(s["nbt"]) * int(s["iw"]),
                       "sp": (int(s["nseq"]) + 1) * int(s["iw"])},
    reference=_ref_check, local_size=(256, 1, 1), tags=("layout", "check"),
    doc="Block table ids < num_pages and the seq_ptr invariants.")
