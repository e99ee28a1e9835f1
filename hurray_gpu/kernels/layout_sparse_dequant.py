"""Sparse (COO, CSR/CSC/CSF) quantized values -> dense row-major floats, in one scatter pass.

Each dequant kernel's body is reused verbatim (kernel logic exists once): one work item per
stored value finds its row-major index ``fi`` with the sparse scatter's index walk, then runs
the scheme's element formula for logical element ``fi`` (so the block/channel parameters are
the ones of its coordinate) with the code read at its storage position. ``nparam`` further
items each evaluate the first element of one parameter block without storing anything, so
every scale and zero point is validated, as a dense dequantization validates them.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from hurray_gpu.kernels.dequant import DEQUANT_KERNELS
from hurray_gpu.kernels.dequant_common import (
    CODE_LOAD,
    MAGIC_SCALARS,
    ref_codes,
    restart_items,
)
from hurray_gpu.kernels.dialect.kernel import KernelDef, buf, scalar
from hurray_gpu.kernels.layout_fused import _general_only
from hurray_gpu.kernels.layout_sparse import (
    _COO_FLAT,
    _TREE_FLAT,
    TREE_REC,
    ref_coo_flat,
    ref_tree_flat,
)

__all__ = ["SPARSE_DEQUANT_KERNELS", "sparse_dequant_kernel"]

# The item's element is a stored value's coordinate (or the first element of a parameter
# block), one per item, so ``ept`` goes with the division-magic scalars (restart_items).
_SPARSE_HEAD = """
    u32 g = GLOBAL_ID(0);
    if (g >= nnz + nparam) return;
    u32 first = 0u;
    u32 so = 0u;
    if (g < nnz) {
        u32 i = g;
{FLAT}
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
"""
_CODE_AT_SO = re.sub(r"\bi\b", "so", CODE_LOAD)
_STORE = "STORE(dst, k,"


def _pack_codes(codes: np.ndarray, bits: int) -> np.ndarray:
    """Codes (u32, one per element) as the little-endian storage bytes ``CODE_LOAD`` reads."""
    if bits >= 8:
        width = bits // 8
        return codes.astype("<u4").view(np.uint8).reshape(-1, 4)[:, :width].reshape(-1).copy()
    lanes = ((codes[:, None] >> np.arange(bits, dtype=np.uint32)) & 1).astype(np.uint8)
    return np.packbits(lanes.reshape(-1), bitorder="little")


def _reference(base: KernelDef, flat_fn: Any) -> Any:
    """Oracle: scatter the codes into a dense code array, run the base oracle over every
    element (so every parameter is validated), keep the stored elements' results."""
    def run(a: dict[str, Any]) -> None:
        n, nnz, bits = int(a["n"]), int(a["nnz"]), int(a["bits"])
        if n == 0:
            return
        fi, ok = flat_fn(a, nnz)
        ok &= fi < n
        dense = np.zeros(n, np.uint32)
        if nnz:
            codes = ref_codes(a["data"], int(a["doff"]), bits, nnz)
            dense[fi[ok]] = codes[ok]
        moved = dict(a)
        moved.update(data=_pack_codes(dense, bits), doff=0, dst=np.zeros_like(a["dst"]))
        base.reference(moved)
        a["dst"][fi[ok]] = moved["dst"][fi[ok]]
    return run


def _body(base: KernelDef, flat: str) -> tuple[str, tuple[Any, ...]]:
    body, kept = restart_items(base, _general_only(base.body),
                               _SPARSE_HEAD.replace("{FLAT}", flat), ("ept", *MAGIC_SCALARS))
    body = body.replace(CODE_LOAD, _CODE_AT_SO).replace(_STORE, f"if (g < nnz) {_STORE}")
    if "LOAD(data," in body.replace(_CODE_AT_SO, "") or _STORE not in body:
        raise ValueError(f"{base.name} reads codes outside CODE_LOAD or stores elsewhere")
    return body, kept


def _make(base: KernelDef, kind: str) -> KernelDef:
    tree = kind == "tree"
    extra = (scalar("nlev"),) if tree else (scalar("rank"),)
    body, kept = _body(base, _TREE_FLAT if tree else _COO_FLAT)
    params = (*base.buffers, buf("ix", "u32"), buf("mt", "u32"), *kept, scalar("nnz"),
              scalar("nix"), *extra)

    def extents(s: Any) -> dict[str, int]:
        out = dict(base.extents(s))
        # Codes are read at stored positions (position 0 for check items).
        out["data"] = int(s["doff"]) + (max(int(s["nnz"]), 1) * int(s["bits"]) + 7) // 8
        out["ix"] = int(s["nix"])
        out["mt"] = int(s["nlev"]) * TREE_REC if tree else 2 * int(s["rank"])
        return out

    return KernelDef(
        name=f"{base.name}_sparse_{kind}", params=params,
        body=body,
        grid=lambda s: (int(s["nnz"]) + int(s["nparam"]),), extents=extents,
        reference=_reference(base, ref_tree_flat if tree else ref_coo_flat),
        local_size=(64, 1, 1), tags=("layout", "dequant", "sparse"),
        doc=f"{base.doc.rstrip('.')} — scattered from {kind} sparse storage.")


_KERNELS = {(k.name, kind): _make(k, kind) for k in DEQUANT_KERNELS
            if k.name.startswith(("dequant_affine_", "dequant_lut_")) for kind in ("coo", "tree")}


def sparse_dequant_kernel(base: str, kind: str) -> KernelDef:
    """The scatter variant of dequant kernel ``base`` for ``kind`` (``"coo"``/``"tree"``)."""
    return _KERNELS[(base, kind)]


SPARSE_DEQUANT_KERNELS = tuple(_KERNELS.values())
