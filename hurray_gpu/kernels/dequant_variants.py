"""The dequant kernels' variants: each scheme's element formula (written once, in
:mod:`hurray_gpu.kernels.dequant`) composed with another index mapping, code read or store.

- fused layout (``_sep``, ``_hil``): dense work items; each code is read at its layout offset
  ``so`` (the layout's address piece), in the general loop only;
- sparse (``_sparse_coo``, ``_sparse_tree``): one work item per stored value, whose row-major
  index ``fi`` (the sparse scatter's index walk) is the element, so the block/channel parameters
  are the ones of its coordinate; the code is read at its storage position and the store is
  skipped for the ``nparam`` further items, which each evaluate the first element of one
  parameter block so that every scale and zero point is validated, as a dense pass does;
- block-paged (``_paged``): a work item takes ``ept`` elements of one token row, walking the
  row's page-pool elements (codes and parameters at pool positions: a per-page-slot scale is a
  per-channel scale along axis 0 of the pool ``[num_pages * page_size, heads, dim]``) and
  storing each ``shift`` elements away, in the logical view.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.dialect.compose import Piece
from hurray_gpu.dialect.kernel import LONG_ITEMS, KernelDef, Param, buf, scalar
from hurray_gpu.kernels.dequant import (
    DENSE,
    MAGIC_SCALARS,
    OUT_DTYPES,
    RESTART,
    SCHEMES,
    Scheme,
    Variant,
    dequant_kernel,
    item_grid,
    ref_block_index,
    ref_codes,
)
from hurray_gpu.kernels.layout import HILBERT_ADDR, SoFn, ref_hil_so
from hurray_gpu.kernels.layout_paged import PAGED_IX_HEADER, ref_token_slots
from hurray_gpu.kernels.layout_sparse import (
    COO_FLAT,
    TREE_FLAT,
    TREE_REC,
    ref_coo_flat,
    ref_tree_flat,
)

__all__ = ["VARIANT_KERNELS", "fused_kernel", "paged_dequant_kernel", "sparse_dequant_kernel"]


# -- fused layout --------------------------------------------------------------------------------
# Element i's layout offset; so is clamped into the span the host checked against the data
# buffer, so no code read leaves it whatever the tables say.
_LAYOUT_PRE = Piece("layout offset", """
    u32 f = i;
    $addr
    if (so >= $span) so = 0u;
""")
# Vulkan gives 32 push-constant words (the affine kernel alone takes 22) and one word per
# buffer: the sep tables ride in the err buffer after its flag word, as
# [flag | nx, ny | x entries | y entries | z entries] (ntt words); every index is clamped.
_SEP_TABLES = Piece("sep address from err", """
        u32 nx = UMAX(LOAD(err, 1u), 1u);
        u32 ny = UMAX(LOAD(err, 2u), 1u);
        u32 x = f % nx;
        u32 yz = f / nx;
        u32 y = yz % ny;
        u32 top = ntt - 1u;
        u32 so = LOAD(err, UMIN(3u + x, top)) + LOAD(err, UMIN(3u + nx + y, top))
                 + LOAD(err, UMIN(3u + nx + ny + yz / ny, top));
""", defines=("so",))


def _sep_so(a: dict[str, Any], f: np.ndarray) -> np.ndarray:
    tt = a["err"]
    nx, ny, last = max(int(tt[1]), 1), max(int(tt[2]), 1), int(a["ntt"]) - 1
    x, yz = f % nx, f // nx
    idx = [np.minimum(3 + x, last), np.minimum(3 + nx + yz % ny, last),
           np.minimum(3 + nx + ny + yz // ny, last)]
    total = tt[idx[0]].astype(np.uint64) + tt[idx[1]] + tt[idx[2]]
    return (total & 0xFFFFFFFF).astype(np.int64)


# Hilbert offsets are indices below n = 2**(hp*hr); sep offsets stay below the span nspan.
_ADDR: dict[str, tuple[Piece, str, SoFn, tuple[Param, ...]]] = {
    "sep": (_SEP_TABLES, "nspan", _sep_so, (scalar("ntt"), scalar("nspan"))),
    "hil": (HILBERT_ADDR, "n", ref_hil_so, (scalar("hp"), scalar("hr")))}


def _pack_codes(codes: np.ndarray, bits: int) -> np.ndarray:
    """Codes (u32, one per element) as the little-endian storage bytes ``CODE_LOAD`` reads."""
    if bits >= 8:
        width = bits // 8
        return codes.astype("<u4").view(np.uint8).reshape(-1, 4)[:, :width].reshape(-1).copy()
    lanes = ((codes[:, None] >> np.arange(bits, dtype=np.uint32)) & 1).astype(np.uint8)
    return np.packbits(lanes.reshape(-1), bitorder="little")


def _gathered(a: dict[str, Any], so_fn: SoFn) -> np.ndarray:
    """Row-major storage bytes: the codes the fused kernel reads, re-packed contiguously."""
    n, bits = int(a["n"]), int(a["bits"])
    so = so_fn(a, np.arange(n, dtype=np.int64))
    so = np.where(so < (int(a["nspan"]) if "nspan" in a else n), so, 0)
    data = np.concatenate([np.asarray(a["data"], np.uint8), np.zeros(8, np.uint8)])
    return _pack_codes(ref_codes(data, int(a["doff"]), bits, int(so.max()) + 1)[so], bits)


def _fused(scheme: Scheme, out: str, addr: str) -> KernelDef:
    kind = OUT_DTYPES[out]
    piece, span, so_fn, extra = _ADDR[addr]
    variant = Variant(DENSE.items, DENSE.store, "so", _LAYOUT_PRE.fill(addr=piece, span=span))

    def extents(s: Any) -> dict[str, int]:
        ext = dict(scheme.extents(s))
        # Codes are read below n (Hilbert) or nspan (sep) elements past doff.
        if addr == "sep":
            ext["err"] = int(s["ntt"])
            ext["data"] = int(s["doff"]) + (int(s["nspan"]) * int(s["bits"]) + 7) // 8
        return ext

    def reference(a: dict[str, Any]) -> None:
        if int(a["n"]) == 0:
            return
        scheme.reference({**a, "data": _gathered(a, so_fn), "doff": 0}, kind)

    # err becomes read-write: the sep variant reads its tables from it.
    inputs = tuple(buf(p.name, p.dtype, "rw") if p.name == "err" else p for p in scheme.inputs)
    return dequant_kernel(
        scheme, kind, variant, suffix=f"_{addr}", inputs=inputs, extra=extra, grid=item_grid,
        extents=extents, reference=reference, local_size=(64, 1, 1), tags=("layout", "dequant", LONG_ITEMS),
        doc=f"{scheme.doc} {out} — reading storage through {addr} addressing.")


# -- sparse ---------------------------------------------------------------------------------------
# The item's element is a stored value's coordinate (or the first element of a parameter
# block), one per item, so ``ept`` goes with the division-magic scalars.
_SPARSE_HEAD = Piece("sparse items", """
    u32 g = GLOBAL_ID(0);
    if (g >= nnz + nparam) return;
    u32 first = 0u;
    u32 so = 0u;
    if (g < nnz) {
        u32 i = g;
        $flat
        if (ok == 0u || fi >= n) return;
        first = fi;
        so = g;
    } else {
        u32 pb = g - nnz;
        u32 ob = 0u;
        u32 rb = 0u;
        u32 ab = pb << kshift;
        if (omul != 0u) {
            u32 rest = pb / omul;
            ab = (pb - rest * omul) << kshift;
            ob = rest / inner;
            rb = rest - ob * inner;
        }
        if (ob >= n || ab >= ssize) return;
        first = (ob * ssize + ab) * inner + rb;
        if (first >= n) return;
    }
    u32 last = first + 1u;
""")
_SPARSE_STORE = Piece("sparse store", "if (g < nnz) STORE(dst, $k, $v);")


def _sparse(scheme: Scheme, out: str, tree: str) -> KernelDef:
    kind = OUT_DTYPES[out]
    flat_fn = ref_tree_flat if tree == "tree" else ref_coo_flat
    head = _SPARSE_HEAD.fill(flat=TREE_FLAT if tree == "tree" else COO_FLAT)
    variant = Variant(RESTART.fill(head=head),
                      _SPARSE_STORE, "so", drops=("ept", *MAGIC_SCALARS))

    def extents(s: Any) -> dict[str, int]:
        ext = dict(scheme.extents(s))
        # Codes are read at stored positions (position 0 for check items).
        ext["data"] = int(s["doff"]) + (max(int(s["nnz"]), 1) * int(s["bits"]) + 7) // 8
        ext["ix"] = int(s["nix"])
        ext["mt"] = int(s["nlev"]) * TREE_REC if tree == "tree" else 2 * int(s["rank"])
        return ext

    def reference(a: dict[str, Any]) -> None:
        """Scatter the codes into a dense code array, run the dense oracle over every element
        (so every parameter is validated), keep the stored elements' results."""
        n, nnz, bits = int(a["n"]), int(a["nnz"]), int(a["bits"])
        if n == 0:
            return
        fi, ok = flat_fn(a, nnz)
        ok &= fi < n
        dense = np.zeros(n, np.uint32)
        if nnz:
            codes = ref_codes(a["data"], int(a["doff"]), bits, nnz)
            dense[fi[ok]] = codes[ok]
        moved = {**a, "data": _pack_codes(dense, bits), "doff": 0,
                 "dst": np.zeros_like(a["dst"])}
        scheme.reference(moved, kind)
        a["dst"][fi[ok]] = moved["dst"][fi[ok]]

    return dequant_kernel(
        scheme, kind, variant, suffix=f"_sparse_{tree}",
        inputs=(*scheme.inputs, buf("ix", "u32"), buf("mt", "u32")),
        extra=(scalar("nnz"), scalar("nix"), scalar("nlev" if tree == "tree" else "rank")),
        grid=lambda s: (int(s["nnz"]) + int(s["nparam"]),), extents=extents,
        reference=reference, local_size=(64, 1, 1), tags=("layout", "dequant", "sparse"),
        doc=f"{scheme.doc} {out} — scattered from {tree} sparse storage.")


# -- block-paged ----------------------------------------------------------------------------------
# ``ix`` = [nseq, ps, npages, nbt, iw | token starts (nseq + 1) | seq_ptr | block table],
# concatenated on the device by the host (one lookup buffer keeps the push constants in
# Vulkan's 32 words); every read is clamped below ``nix``.
_PAGED_HEAD = Piece("paged items", """
    u32 first = 0u;
    u32 last = 0u;
    u32 shift = 0u;
    {
        u32 x0 = GLOBAL_ID(0) * ept;
        u32 y = GLOBAL_ID(1);
        if (x0 >= row || y >= ntok || nix <= $hdr) return;
        u32 top = nix - 1u;
        u32 nseq = LOAD(ix, 0u);
        u32 ps = UMAX(LOAD(ix, 1u), 1u);
        u32 npages = LOAD(ix, 2u);
        u32 nbt = LOAD(ix, 3u);
        u32 iw = LOAD(ix, 4u);
        u32 spo = $hdr + nseq + 1u;
        u32 bto = spo + (nseq + 1u) * iw;
        u32 lo = 0u;
        u32 hi = nseq;
        while (hi - lo > 1u) {
            u32 md = lo + (hi - lo) / 2u;
            if (LOAD(ix, UMIN($hdr + md, top)) <= y) lo = md; else hi = md;
        }
        u32 tk = y - LOAD(ix, UMIN($hdr + lo, top));
        u32 bslot = LOAD(ix, UMIN(spo + lo * iw, top)) + tk / ps;
        u32 page = bslot < nbt ? LOAD(ix, UMIN(bto + bslot * iw, top)) : npages;
        // The table was validated before launch; a page out of range still reads nothing.
        if (page >= npages) return;
        first = (page * ps + tk % ps) * row + x0;
        last = first + UMIN(ept, row - x0);
        if (last > n || last < first) return;
        shift = (y * row + x0) - first;
    }
""")
_PAGED_STORE = Piece("paged store", "STORE(dst, $k + shift, $v);")
_PAGED = Variant(RESTART.fill(head=_PAGED_HEAD.fill(hdr=f"{PAGED_IX_HEADER}u")), _PAGED_STORE,
                 drops=MAGIC_SCALARS, dst_k="i + shift")
# 1.0 in each affine scale type (f16, bf16, f32), little-endian.
_ONE = {1: b"\x00\x3c", 2: b"\x80\x3f", 3: b"\x00\x00\x80\x3f"}


def _benign_unread(a: dict[str, Any], read: np.ndarray) -> dict[str, np.ndarray]:
    """Affine parameters no visited pool element reads, replaced by valid ones: the kernel
    never loads them (page slots past a sequence's valid token count are undefined, Hurray
    spec: Block-Paged)."""
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


def _paged(scheme: Scheme, out: str) -> KernelDef:
    kind = OUT_DTYPES[out]

    def extents(s: Any) -> dict[str, int]:
        ext = dict(scheme.extents(s))
        ext["dst"] = int(s["row"]) * int(s["ntok"])
        ext["ix"] = int(s["nix"])
        return ext

    def reference(a: dict[str, Any]) -> None:
        """Run the dense oracle over the whole pool, then gather token rows by slot."""
        row, ntok, n = int(a["row"]), int(a["ntok"]), int(a["n"])
        if row == 0 or ntok == 0 or n == 0:
            return
        slots, ok = ref_token_slots(np.asarray(a["ix"], np.int64)[: int(a["nix"])], ntok)
        src = slots[:, None] * row + np.arange(row)
        ok = ok[:, None] & (src < n) & np.ones((1, row), bool)
        moved = {**a, "dst": np.zeros(n, a["dst"].dtype)}
        if int(a.get("mode", 0)) and "stype" in a:
            moved.update(_benign_unread(a, src[ok]))
        scheme.reference(moved, kind)
        a["dst"][: ntok * row].reshape(ntok, row)[ok] = moved["dst"][src[ok]]

    return dequant_kernel(
        scheme, kind, _PAGED, suffix="_paged", inputs=(*scheme.inputs, buf("ix", "u32")),
        extra=(scalar("row"), scalar("ntok"), scalar("nix")),
        grid=lambda s: (-(-int(s["row"]) // max(int(s["ept"]), 1)), int(s["ntok"])),
        extents=extents, reference=reference, local_size=(64, 1, 1),
        tags=("layout", "dequant", "paged", LONG_ITEMS),
        doc=f"{scheme.doc} {out} — read from a block-paged pool through its block table.")


_DENSE = [(f"dequant_{s.family}_{OUT_DTYPES[out]}", s, out) for s in SCHEMES for out in OUT_DTYPES]
_FUSED = {(name, addr): _fused(s, out, addr) for name, s, out in _DENSE for addr in _ADDR}
_SPARSE = {(name, tree): _sparse(s, out, tree) for name, s, out in _DENSE for tree in ("coo", "tree")}
_PAGED_KERNELS = {name: _paged(s, out) for name, s, out in _DENSE}


def fused_kernel(base: str, addr: str) -> KernelDef:
    """The fused variant of dequant kernel ``base`` for ``addr`` (``"sep"``/``"hil"``)."""
    return _FUSED[(base, addr)]


def sparse_dequant_kernel(base: str, kind: str) -> KernelDef:
    """The scatter variant of dequant kernel ``base`` for ``kind`` (``"coo"``/``"tree"``)."""
    return _SPARSE[(base, kind)]


def paged_dequant_kernel(base: str) -> KernelDef:
    """The block-paged variant of dequant kernel ``base``."""
    return _PAGED_KERNELS[base]


VARIANT_KERNELS = (*_FUSED.values(), *_SPARSE.values(), *_PAGED_KERNELS.values())
