"""Dense layout-conversion kernels: any dense Hurray layout -> row-major, offsets on the device.

Separable layouts (strided, column-major, tiled at any depth, Morton) read per-axis offset
tables that ``layout_axis_table`` computes on the device from the layout parameters; Hilbert
runs Skilling's CoordsToHilbert per element. Each kernel has a NumPy reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.kernels.dialect.kernel import KernelDef, buf, scalar
from hurray_gpu.kernels.layout_common import (
    HILBERT_ADDR,
    PACKED_MOVE,
    REC_WORDS,
    SEP_ADDR,
    SEP_WORD_MOVE,
    WORD_MOVE,
    ref_axis_entries,
    ref_hilbert_so,
    ref_packed,
    ref_words,
)

__all__ = ["AXIS_TABLE", "LAYOUT_KERNELS", "gather_kernel"]

# A work item computes one table entry: the decomposed region index's offset contribution.
# Record k (REC_WORDS u32 words): extent, kind (0 affine/tiled, 1 Morton), then for kind 0:
# nlev, final stride, (tile, level stride) * nlev; for kind 1: bits, code position, rank.
_AXIS_BODY = """
    u32 j = GLOBAL_ID(0);
    if (j >= n) return;
    u32 off = base;
    u32 rest = j;
    u32 k = d0 + nd;
    while (k > d0) {
        k = k - 1u;
        u32 at = k * RECW;
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
""".replace("RECW", f"{REC_WORDS}u")


def _ref_axis_table(a: dict[str, Any]) -> None:
    n = int(a["n"])
    at = int(a["dat"])
    a["dst"][at:at + n] = ref_axis_entries(a["lp"], n, int(a["d0"]), int(a["nd"]),
                                           int(a["base"]))


AXIS_TABLE = KernelDef(
    name="layout_axis_table",
    params=(buf("dst", "u32", "w"), buf("lp", "u32"), scalar("n"), scalar("d0"), scalar("nd"),
            scalar("base"), scalar("dat")),
    body=_AXIS_BODY, grid=lambda s: (int(s["n"]),),
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


def _hil_so(a: dict[str, Any], f: np.ndarray) -> np.ndarray:
    return ref_hilbert_so(f, int(a["hp"]), int(a["hr"]))


_ADDR = {"sep": (SEP_ADDR, _sep_so,
                 (buf("tx", "u32"), buf("ty", "u32"), buf("tz", "u32"))),
         "hil": (HILBERT_ADDR, _hil_so, (scalar("hp"), scalar("hr")))}


def _word_extents(s: Any, addr: str) -> dict[str, int]:
    n = int(s["nx"]) * int(s["ny"]) * int(s["nz"])
    out = {"dst": n * int(s["wpe"]), "src": int(s["nsrc"])}
    if addr == "sep":
        out.update(tx=int(s["nx"]), ty=int(s["ny"]), tz=int(s["nz"]))
    return out


def _packed_extents(s: Any, addr: str) -> dict[str, int]:
    out = {"dst": int(s["nunits"]) * int(s["upb"]), "src": int(s["nsrc"])}
    if addr == "sep":
        out.update(tx=int(s["nx"]), ty=int(s["ny"]), tz=int(s["nz"]))
    return out


def _make_words(addr: str, word: str) -> KernelDef:
    text, so_fn, extra = _ADDR[addr]
    extra_bufs = tuple(p for p in extra if p.kind == "buffer")
    extra_scalars = tuple(p for p in extra if p.kind == "scalar")
    return KernelDef(
        name=f"layout_{addr}_{word}",
        params=(buf("dst", word, "w"), buf("src", word), *extra_bufs, scalar("nx"),
                scalar("ny"), scalar("nz"), scalar("wpe"), scalar("woff"), scalar("nsrc"),
                *extra_scalars),
        body=WORD_MOVE.replace("{ADDR}", text),
        grid=lambda s: (int(s["nx"]), int(s["ny"]), int(s["nz"])),
        extents=lambda s, a=addr: _word_extents(s, a),  # type: ignore[misc]
        reference=lambda a, fn=so_fn: ref_words(a, fn),  # type: ignore[misc]
        # 2-D work-groups: a column-major or tiled source is then read in cache-line runs
        # (measured on pocl: col-major 0.3 -> 1.2 GB/s, tiled 1.2 -> 1.7 GB/s).
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
        body=SEP_WORD_MOVE, grid=_block_grid,
        extents=lambda s: _word_extents(s, "sep"),
        reference=lambda a: ref_words(a, _sep_so),
        local_size=(8, 8, 1), tags=("layout",),
        doc=f"Row-major gather of {word} words (sep addressing), a bx x by block per item.")


def _make_packed(addr: str) -> KernelDef:
    text, so_fn, extra = _ADDR[addr]
    extra_bufs = tuple(p for p in extra if p.kind == "buffer")
    extra_scalars = tuple(p for p in extra if p.kind == "scalar")
    return KernelDef(
        name=f"layout_{addr}_packed",
        params=(buf("dst", "u8", "w"), buf("src", "u8"), *extra_bufs, scalar("n"),
                scalar("nx"), scalar("ny"), scalar("nz"), scalar("bits"), scalar("epu"),
                scalar("upb"), scalar("nunits"), scalar("doff"), scalar("nsrc"),
                *extra_scalars),
        body=PACKED_MOVE.replace("{ADDR}", text),
        grid=lambda s: (int(s["nunits"]),),
        extents=lambda s, a=addr: _packed_extents(s, a),  # type: ignore[misc]
        reference=lambda a, fn=so_fn: ref_packed(a, fn),  # type: ignore[misc]
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


LAYOUT_KERNELS = (AXIS_TABLE, *_GATHERS.values())
