"""Block-paged pools -> dense [total_tokens, heads, dim] floats in one pass: the dequant kernels'
bodies, walking page-pool elements and storing each at its logical position.

A work item takes ``ept`` elements of one token row. The row's page comes from the block table
(the paged gather's lookup, with its guards); the body then runs verbatim over the row's pool
elements, so codes are read and parameters indexed at pool positions (a per-page-slot scale is
a per-channel scale along axis 0 of the pool ``[num_pages * page_size, heads, dim]``), and
every store lands ``shift`` elements away, in the logical view.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from hurray_gpu.kernels.dequant import DEQUANT_KERNELS
from hurray_gpu.kernels.dequant_common import ref_block_index, restart_items
from hurray_gpu.kernels.dialect.kernel import KernelDef, buf, scalar
from hurray_gpu.kernels.layout_paged import PAGED_IX_HEADER, ref_token_slots

__all__ = ["PAGED_DEQUANT_KERNELS", "paged_dequant_kernel"]

# ``ix`` = [nseq, ps, npages, nbt, iw | token starts (nseq + 1) | seq_ptr | block table],
# concatenated on the device by the host (one lookup buffer keeps the push constants in
# Vulkan's 32 words); every read is clamped below ``nix``.
_HEAD = """
    u32 first = 0u;
    u32 last = 0u;
    u32 shift = 0u;
    {
        u32 x0 = GLOBAL_ID(0) * ept;
        u32 y = GLOBAL_ID(1);
        if (x0 >= row || y >= ntok || nix <= HDR) return;
        u32 top = nix - 1u;
        u32 nseq = LOAD(ix, 0u);
        u32 ps = UMAX(LOAD(ix, 1u), 1u);
        u32 npages = LOAD(ix, 2u);
        u32 nbt = LOAD(ix, 3u);
        u32 iw = LOAD(ix, 4u);
        u32 spo = HDR + nseq + 1u;
        u32 bto = spo + (nseq + 1u) * iw;
        u32 lo = 0u;
        u32 hi = nseq;
        while (hi - lo > 1u) {
            u32 md = lo + (hi - lo) / 2u;
            if (LOAD(ix, UMIN(HDR + md, top)) <= y) lo = md; else hi = md;
        }
        u32 tk = y - LOAD(ix, UMIN(HDR + lo, top));
        u32 bslot = LOAD(ix, UMIN(spo + lo * iw, top)) + tk / ps;
        u32 page = bslot < nbt ? LOAD(ix, UMIN(bto + bslot * iw, top)) : npages;
        // The table was validated before launch; a page out of range still reads nothing.
        if (page >= npages) return;
        first = (page * ps + tk % ps) * row + x0;
        last = first + UMIN(ept, row - x0);
        if (last > n || last < first) return;
        shift = (y * row + x0) - first;
    }
"""
_STORE = re.compile(r"STORE\(dst, ([^,]+),")


def _body(base: KernelDef) -> tuple[str, tuple[Any, ...]]:
    body, kept = restart_items(base, base.body, _HEAD.replace("HDR", f"{PAGED_IX_HEADER}u"))
    body, stores = _STORE.subn(r"STORE(dst, (\1) + shift,", body)
    if not stores:
        raise ValueError(f"{base.name} stores no element")
    return body, kept


def _reference(base: KernelDef) -> Any:
    """Oracle: run the base oracle over the whole pool, then gather token rows by slot."""
    def run(a: dict[str, Any]) -> None:
        row, ntok, n = int(a["row"]), int(a["ntok"]), int(a["n"])
        if row == 0 or ntok == 0 or n == 0:
            return
        slots, ok = ref_token_slots(np.asarray(a["ix"], np.int64)[: int(a["nix"])], ntok)
        src = slots[:, None] * row + np.arange(row)
        ok = ok[:, None] & (src < n) & np.ones((1, row), bool)
        moved = dict(a)
        moved["dst"] = np.zeros(n, a["dst"].dtype)
        if int(a.get("mode", 0)) and "stype" in a:
            moved.update(_benign_unread(a, src[ok]))
        base.reference(moved)
        out = a["dst"][: ntok * row].reshape(ntok, row)
        out[ok] = moved["dst"][src[ok]]
    return run


# 1.0 in each affine scale type (f16, bf16, f32), little-endian.
_ONE = {1: b"\x00\x3c", 2: b"\x80\x3f", 3: b"\x00\x00\x80\x3f"}


def _benign_unread(a: dict[str, Any], read: np.ndarray) -> dict[str, np.ndarray]:
    """Affine parameters no visited pool element reads, replaced by valid ones: the kernel
    never loads them (slots past a sequence's end are undefined, facts §2.6)."""
    p = ref_block_index(int(a["n"]), int(a["inner"]), int(a["ssize"]), int(a["omul"]),
                        int(a["kshift"]))
    unread = np.ones(int(a["nparam"]), bool)
    unread[np.unique(p[read])] = False
    one, zoff = _ONE[int(a["stype"])], int(a["zoff"])
    out = {"scales": np.array(a["scales"], np.uint8, copy=True)}
    for k in np.flatnonzero(unread):
        out["scales"][k * len(one):(k + 1) * len(one)] = np.frombuffer(one, np.uint8)
    if int(a["zmode"]):
        # A shared [scales | zero points] buffer is bound as both; patch one copy.
        zps = out["scales"] if a["zps"] is a["scales"] else np.array(a["zps"], np.uint8)
        for k in np.flatnonzero(unread):
            zps[zoff + 4 * k:zoff + 4 * k + 4] = np.frombuffer(
                np.int32(a["zlo"]).astype("<i4").tobytes(), np.uint8)
        out["zps"] = zps
    return out


def _make(base: KernelDef) -> KernelDef:
    body, kept = _body(base)
    params = (*base.buffers, buf("ix", "u32"), *kept, scalar("row"), scalar("ntok"),
              scalar("nix"))

    def extents(s: Any) -> dict[str, int]:
        out = dict(base.extents(s))
        out["dst"] = int(s["row"]) * int(s["ntok"])
        out["ix"] = int(s["nix"])
        return out

    def grid(s: Any) -> tuple[int, int]:
        return (-(-int(s["row"]) // max(int(s["ept"]), 1)), int(s["ntok"]))

    # replace() keeps the base's private/shared arrays, which its hoisted loops use.
    return dataclasses.replace(
        base, name=f"{base.name}_paged", params=params, body=body, grid=grid,
        extents=extents, reference=_reference(base), tags=("layout", "dequant", "paged"),
        doc=f"{base.doc.rstrip('.')} — read from a block-paged pool through its block table.")


_KERNELS = {k.name: _make(k) for k in DEQUANT_KERNELS
            if k.name.startswith(("dequant_affine_", "dequant_lut_"))}


def paged_dequant_kernel(base: str) -> KernelDef:
    """The block-paged variant of dequant kernel ``base``."""
    return _KERNELS[base]


PAGED_DEQUANT_KERNELS = tuple(_KERNELS.values())
