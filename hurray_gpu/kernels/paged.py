"""Paged KV cache kernels: scatter rows into pages (reshape_and_cache), gather, copy pages.

Every kernel moves raw words (u32, u16 or u8), so any element type is copied bit-exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from hurray_gpu.kernels.dialect.kernel import KernelDef, buf, scalar

__all__ = [
    "MAX_LANES", "MAX_WIDTH", "PAD_SLOT", "PAGED_KERNELS", "WORDS", "kernel_name", "paged_kernel",
    "word_for",
]

# Slot value the gather kernel turns into a zero row (padding of gather_padded).
PAD_SLOT = 0xFFFFFFFF
# Largest lanes and row width the kernels accept (their guards make larger values no-ops).
MAX_LANES = 4096
MAX_WIDTH = 0xFFFFEFFF
# Word types by byte size, widest first: a row is moved in the widest word dividing it.
WORDS = ((4, "u32"), (2, "u16"), (1, "u8"))


def word_for(row_bytes: int) -> tuple[int, str]:
    """The widest ``(word bytes, kernel dtype)`` that divides ``row_bytes``."""
    for size, dtype in WORDS:
        if row_bytes % size == 0:
            return size, dtype
    raise AssertionError("unreachable: 1 divides every size")


def kernel_name(op: str, word: str) -> str:
    """The registered name of paged kernel ``op`` (scatter, gather, copy_pages) for ``word``."""
    return f"kv_{op}_{word}"


def _items(s: Mapping[str, Any]) -> int:
    """Rows a launch covers: the grid is rows x lanes work items."""
    return int(s["n"]) // max(int(s["lanes"]), 1)


def _runs(a: Mapping[str, Any], width: int) -> bool:
    """Whether the kernel's guards let a launch do anything (see ``_LANE``)."""
    return 1 <= int(a["lanes"]) <= MAX_LANES and 0 < width <= MAX_WIDTH and _items(a) > 0


def _ref_scatter(a: dict[str, Any]) -> None:
    row, rows, limit = int(a["row"]), _items(a), int(a["num_slots"])
    if not _runs(a, row):
        return
    src = a["src"][: rows * row].reshape(rows, row)
    slots = a["slots"][:rows].astype(np.int64)
    keep = slots < limit
    pool = a["pool"][: limit * row].reshape(limit, row)
    pool[slots[keep]] = src[keep]


def _ref_gather(a: dict[str, Any]) -> None:
    row, rows, limit = int(a["row"]), _items(a), int(a["num_slots"])
    if not _runs(a, row):
        return
    dst = a["dst"][: rows * row].reshape(rows, row)
    slots = a["slots"][:rows].astype(np.int64)
    keep = slots < limit
    pool = a["pool"][: limit * row].reshape(limit, row)
    dst[keep] = pool[slots[keep]]
    dst[~keep] = 0


def _ref_copy_pages(a: dict[str, Any]) -> None:
    words, rows, limit = int(a["page_words"]), _items(a), int(a["num_pages"])
    if not _runs(a, words):
        return
    pairs = a["pairs"][: 2 * rows].astype(np.int64).reshape(-1, 2)
    pool = a["pool"][: limit * words].reshape(limit, words)
    for src, dst in pairs:  # sequential: the host forbids a destination that is also a source
        if src < limit and dst < limit:
            pool[dst] = pool[src]


# Each work item copies words lane, lane + lanes, ... of one row: adjacent items touch adjacent
# words (coalesced on GPUs), and with lanes = 1 one item copies a whole row (host C loops).
# The guards keep every loop finite whatever the scalars say: no zero step, no u32 wrap.
_LANE = """
            u32 i = GLOBAL_ID(0);
            if (i >= n || lanes == 0u || lanes > 4096u || {width} > 0xFFFFEFFFu) return;
            u32 t = i / lanes;
            if (t >= n / lanes) return;
            u32 lane = i - t * lanes;
"""


def _scatter(word: str) -> KernelDef:
    return KernelDef(
        name=kernel_name("scatter", word),
        params=(buf("pool", word, "rw"), buf("src", word, "r"), buf("slots", "u32", "r"),
                scalar("n"), scalar("lanes"), scalar("row"), scalar("num_slots")),
        body=_LANE.format(width="row") + """
            u32 slot = LOAD(slots, t);
            // The host validates every slot; this guard keeps a bad one from writing anywhere.
            if (slot >= num_slots) return;
            u32 from = t * row;
            u32 to = slot * row;
            if (lanes == 1u) {
                for (u32 w = 0u; w < row; w++) {
                    STORE(pool, to + w, LOAD(src, from + w));
                }
                return;
            }
            for (u32 w = lane; w < row; w += lanes) {
                STORE(pool, to + w, LOAD(src, from + w));
            }
        """,
        grid=lambda s: (int(s["n"]),),
        extents=lambda s: {"pool": int(s["num_slots"]) * int(s["row"]),
                           "src": _items(s) * int(s["row"]), "slots": _items(s)},
        reference=_ref_scatter, tags=("kv_cache",),
        doc="pool row slots[t] = src row t (rows of `row` words; n = rows * lanes).",
    )


def _gather(word: str) -> KernelDef:
    return KernelDef(
        name=kernel_name("gather", word),
        params=(buf("dst", word, "w"), buf("pool", word, "r"), buf("slots", "u32", "r"),
                scalar("n"), scalar("lanes"), scalar("row"), scalar("num_slots")),
        body=_LANE.format(width="row") + """
            u32 slot = LOAD(slots, t);
            // Slots past the pool (the padding sentinel) read as zero rows.
            if (slot >= num_slots) {
                for (u32 w = lane; w < row; w += lanes) {
                    STORE(dst, t * row + w, 0u);
                }
                return;
            }
            u32 from = slot * row;
            u32 to = t * row;
            if (lanes == 1u) {
                // Unit stride (the host's one item per row): a plain row copy.
                for (u32 w = 0u; w < row; w++) {
                    STORE(dst, to + w, LOAD(pool, from + w));
                }
                return;
            }
            for (u32 w = lane; w < row; w += lanes) {
                STORE(dst, to + w, LOAD(pool, from + w));
            }
        """,
        grid=lambda s: (int(s["n"]),),
        extents=lambda s: {"dst": _items(s) * int(s["row"]),
                           "pool": int(s["num_slots"]) * int(s["row"]), "slots": _items(s)},
        reference=_ref_gather, tags=("kv_cache",),
        doc="dst row t = pool row slots[t], or zeros when slots[t] >= num_slots.",
    )


def _copy_pages(word: str) -> KernelDef:
    return KernelDef(
        name=kernel_name("copy_pages", word),
        params=(buf("pool", word, "rw"), buf("pairs", "u32", "r"), scalar("n"),
                scalar("lanes"), scalar("page_words"), scalar("num_pages")),
        body=_LANE.format(width="page_words") + """
            u32 src = LOAD(pairs, 2u * t);
            u32 dst = LOAD(pairs, 2u * t + 1u);
            if (src >= num_pages || dst >= num_pages) return;
            for (u32 w = lane; w < page_words; w += lanes) {
                STORE(pool, dst * page_words + w, LOAD(pool, src * page_words + w));
            }
        """,
        grid=lambda s: (int(s["n"]),),
        extents=lambda s: {"pool": int(s["num_pages"]) * int(s["page_words"]),
                           "pairs": 2 * _items(s)},
        reference=_ref_copy_pages, tags=("kv_cache",),
        doc="page pairs[2t+1] = page pairs[2t] (n = pairs * lanes; no dst is a src).",
    )


PAGED_KERNELS = tuple(make(word) for make in (_scatter, _gather, _copy_pages)
                      for _, word in WORDS)
_BY_NAME = {k.name: k for k in PAGED_KERNELS}


def paged_kernel(op: str, word: str) -> KernelDef:
    """The KernelDef of ``op`` (scatter, gather, copy_pages) moving ``word`` (u32, u16, u8)."""
    return _BY_NAME[kernel_name(op, word)]
