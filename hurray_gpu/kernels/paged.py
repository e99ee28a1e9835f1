"""Paged KV cache kernels: scatter rows into pages (reshape_and_cache), gather, copy pages.

Each launch moves a layer's key and value together, as raw words (bit-exact for any dtype).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from hurray_gpu.kernels.dialect.kernel import KernelDef, buf, scalar

__all__ = [
    "MAX_LANES", "MAX_WIDTH", "PAD_SLOT", "PAGED_KERNELS", "ROLES", "SIGNED_LIMIT", "SKIP_SLOT",
    "WORDS",
    "kernel_name", "paged_kernel", "word_for",
]

# Slot value the gather kernel turns into a zero row (padding of gather_padded).
PAD_SLOT = 0xFFFFFFFF
# Slot value every kernel leaves alone: a token another launch (pool window) handles.
SKIP_SLOT = 0xFFFFFFFE
# Largest lanes and row width the kernels accept (their guards make larger values no-ops).
MAX_LANES = 4096
MAX_WIDTH = 0xFFFFEFFF
# Word indices below this take the unit-stride path with signed indices, which C compilers
# turn into memcpy (an unsigned index may wrap, so they keep a word-by-word loop).
SIGNED_LIMIT = 0x7FFFFFFF
# Word types by byte size, widest first: a row is moved in the widest word dividing it.
WORDS = ((4, "u32"), (2, "u16"), (1, "u8"))
# The two planes every scatter and gather launch moves: key then value.
ROLES = ("k", "v")


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
    slots = a["slots"][:rows].astype(np.int64)
    keep = slots < limit
    for r in ROLES:
        src = a[f"{r}src"][: rows * row].reshape(rows, row)
        a[f"{r}pool"][: limit * row].reshape(limit, row)[slots[keep]] = src[keep]


def _ref_gather(a: dict[str, Any]) -> None:
    row, rows, limit = int(a["row"]), _items(a), int(a["num_slots"])
    if not _runs(a, row):
        return
    slots = a["slots"][:rows].astype(np.int64)
    keep = slots < limit
    zero = ~keep & (slots != SKIP_SLOT)
    for r in ROLES:
        dst = a[f"{r}dst"][: rows * row].reshape(rows, row)
        dst[keep] = a[f"{r}pool"][: limit * row].reshape(limit, row)[slots[keep]]
        dst[zero] = 0


def _ref_copy_pages(a: dict[str, Any]) -> None:
    words, rows, limit = int(a["page_words"]), _items(a), int(a["num_pages"])
    if not _runs(a, words):
        return
    pairs = a["pairs"][: 2 * rows].astype(np.int64).reshape(-1, 2)
    keep = (pairs < limit).all(axis=1)
    for r in ROLES:
        # The host binds each pool twice (as pool and as from) and no destination is also a
        # source, so reading from ``from`` is the same as reading the pool.
        pool = a[f"{r}pool"][: limit * words].reshape(limit, words)
        pool[pairs[keep, 1]] = a[f"{r}from"][: limit * words].reshape(limit, words)[
            pairs[keep, 0]]


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

# lanes == 1 (one item per row): signed word indices let a C compiler see a plain row copy
# (memcpy); the guard keeps every signed index below 2^31, else the strided loop runs.
_WHOLE_ROW = """
            if (lanes == 1u && row <= 0x7fffffffu / UMAX(UMAX(num_slots, n), 1u)) {{
                i32 len = I32(row);
                i32 pos = I32({pos_whole});
                i32 at = I32({at_whole});
{whole}
                return;
            }}
"""


def _per_role(template: str) -> str:
    return "".join(template.lstrip("\n").replace("{r}", r) for r in ROLES)


def _move_row(dst: str, src: str, *, src_row: str, dst_row: str) -> str:
    """Body tail copying row ``src_row`` of ``src`` to row ``dst_row`` of ``dst`` for K and V:
    the whole-row fast path where one item owns the row, else this lane's words of it."""
    return _WHOLE_ROW.format(pos_whole=f"{src_row} * row", at_whole=f"{dst_row} * row",
                             whole=_per_role(f"""
                for (i32 w = 0; w < len; w++) STORE({dst}, at + w, LOAD({src}, pos + w));
""")) + f"""
            u32 from = {src_row} * row;
            u32 to = {dst_row} * row;
            for (u32 w = lane; w < row; w += lanes) {{
""" + _per_role(f"""
                STORE({dst}, to + w, LOAD({src}, from + w));
""") + "            }\n"


def _scatter(word: str) -> KernelDef:
    body = _LANE.format(width="row") + """
            u32 slot = LOAD(slots, t);
            // The host validates every slot; this guard keeps a bad one from writing anywhere.
            if (slot >= num_slots) return;
""" + _move_row("{r}pool", "{r}src", src_row="t", dst_row="slot")
    return KernelDef(
        name=kernel_name("scatter", word),
        params=(buf("kpool", word, "rw"), buf("vpool", word, "rw"), buf("ksrc", word, "r"),
                buf("vsrc", word, "r"), buf("slots", "u32", "r"), scalar("n"), scalar("lanes"),
                scalar("row"), scalar("num_slots")),
        body=body, grid=lambda s: (int(s["n"]),),
        extents=lambda s: {"kpool": int(s["num_slots"]) * int(s["row"]),
                           "vpool": int(s["num_slots"]) * int(s["row"]),
                           "ksrc": _items(s) * int(s["row"]), "vsrc": _items(s) * int(s["row"]),
                           "slots": _items(s)},
        reference=_ref_scatter, tags=("kv_cache",),
        doc="k/v pool row slots[t] = k/v src row t (rows of `row` words; n = rows * lanes).",
    )


def _gather(word: str) -> KernelDef:
    body = _LANE.format(width="row") + """
            u32 slot = LOAD(slots, t);
            if (slot == 0xFFFFFFFEu) return;  // SKIP_SLOT: another window's token
            // Slots past the pool (the padding sentinel) read as zero rows.
            if (slot >= num_slots) {
                for (u32 w = lane; w < row; w += lanes) {
""" + _per_role("""
                    STORE({r}dst, t * row + w, 0u);
""") + """
                }
                return;
            }
""" + _move_row("{r}dst", "{r}pool", src_row="slot", dst_row="t")
    return KernelDef(
        name=kernel_name("gather", word),
        params=(buf("kdst", word, "w"), buf("vdst", word, "w"), buf("kpool", word, "r"),
                buf("vpool", word, "r"), buf("slots", "u32", "r"), scalar("n"), scalar("lanes"),
                scalar("row"), scalar("num_slots")),
        body=body, grid=lambda s: (int(s["n"]),),
        extents=lambda s: {"kdst": _items(s) * int(s["row"]), "vdst": _items(s) * int(s["row"]),
                           "kpool": int(s["num_slots"]) * int(s["row"]),
                           "vpool": int(s["num_slots"]) * int(s["row"]), "slots": _items(s)},
        reference=_ref_gather, tags=("kv_cache",),
        doc="k/v dst row t = k/v pool row slots[t]; zeros past the pool; SKIP_SLOT untouched.",
    )


def _copy_pages(word: str) -> KernelDef:
    # The pools are bound twice, as destination and as read-only source: no page is both
    # (the host checks), and the compiler may then copy a page as one block (memcpy).
    body = _LANE.format(width="page_words") + """
            u32 src = LOAD(pairs, 2u * t);
            u32 dst = LOAD(pairs, 2u * t + 1u);
            if (src >= num_pages || dst >= num_pages) return;
            if (lanes == 1u && page_words <= 0x7fffffffu / num_pages) {
                i32 len = I32(page_words);
                i32 from = I32(src * page_words);
                i32 to = I32(dst * page_words);
""" + _per_role("""
                for (i32 w = 0; w < len; w++) STORE({r}pool, to + w, LOAD({r}from, from + w));
""") + """
                return;
            }
            for (u32 w = lane; w < page_words; w += lanes) {
""" + _per_role("""
                STORE({r}pool, dst * page_words + w, LOAD({r}from, src * page_words + w));
""") + "            }\n"
    return KernelDef(
        name=kernel_name("copy_pages", word),
        params=(buf("kpool", word, "rw"), buf("vpool", word, "rw"), buf("kfrom", word, "r"),
                buf("vfrom", word, "r"), buf("pairs", "u32", "r"), scalar("n"),
                scalar("lanes"), scalar("page_words"), scalar("num_pages")),
        body=body, grid=lambda s: (int(s["n"]),),
        extents=lambda s: {**{r + p: int(s["num_pages"]) * int(s["page_words"])
                              for r in ROLES for p in ("pool", "from")}, "pairs": 2 * _items(s)},
        reference=_ref_copy_pages, tags=("kv_cache",),
        doc="k/v page pairs[2t+1] = page pairs[2t] (kfrom/vfrom: the same pools, read-only).",
    )


PAGED_KERNELS = tuple(make(word) for make in (_scatter, _gather, _copy_pages)
                      for _, word in WORDS)
_BY_NAME = {k.name: k for k in PAGED_KERNELS}


def paged_kernel(op: str, word: str) -> KernelDef:
    """The KernelDef of ``op`` (scatter, gather, copy_pages) moving ``word`` (u32, u16, u8)."""
    return _BY_NAME[kernel_name(op, word)]
