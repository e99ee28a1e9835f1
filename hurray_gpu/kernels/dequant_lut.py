"""Table-driven kernels: NF4, MXFP, and unpacking of sub-byte and small-float tensors.

Each storage code maps to its exact f32 value through a lookup-table buffer (the subset has no
arrays); NF4 then multiplies by an f32 absmax, MXFP by ``2^(e-127)`` from an e8m0 byte.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.kernels.dequant_common import (
    DST_TYPES,
    ERR_INVALID,
    ITEM_ADVANCE,
    ITEM_START,
    OUT_DTYPES,
    PARAM_RUN,
    code_extent,
    fill_store,
    item_grid,
    ref_block_index,
    ref_codes,
    ref_store,
    ref_u32_at,
    specialised_loop,
    table_private,
)
from hurray_gpu.kernels.dialect.kernel import KernelDef, buf, scalar

__all__ = ["LUT_KERNELS", "LUT_SCALARS", "UNPACK_INT_KERNEL", "lut_kernel_name"]

LUT_SCALARS = ("n", "ept", "doff", "bits", "chk", "mode", "nparam", "inner", "dm1", "dsh1", "ssize",
               "dm2", "dsh2", "omul", "kshift")
MODE_NONE, MODE_NF4, MODE_MX = 0, 1, 2

# NaN codes (float8 NaN, e8m0 0xFF in a table) pass through with their table bits, so every
# backend writes the same NaN whatever its multiply does with NaN payloads.
# ``mode`` is loop-invariant: compilers unswitch the loop on it at -O3, so plain unpacking
# (mode 0) runs without the test or the multiply.
_ELEMENT = """
            f32 v = LOAD(lut, code);
            if (mode != 0u && (AS_U32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
            {store}
"""
_CHECK = "if (chk != 0u && (code == 0u || code == 255u)) STORE(err, 0u, 1u);"
# NF4 (mode 1) reads the NF4 table, whose values are all finite: no NaN to pass through.
_NF4_ELEMENT = """
            f32 v = s * LOAD(lut, code);
            {store}
"""

_BODY = ITEM_START + """
    f32 s = 1.0f;
    while (i < last) {
        u32 end = last;
        if (mode != 0u) {
""" + PARAM_RUN + """
            if (mode == 1u) {
                u32 at = p * 4u;
                u32 w = LOAD(scales, at) | (LOAD(scales, at + 1u) << 8u)
                        | (LOAD(scales, at + 2u) << 16u) | (LOAD(scales, at + 3u) << 24u);
                // absmax must be finite and >= 0 (-0.0 included).
                if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) STORE(err, 0u, 1u);
                s = AS_F32(w);
            } else {
                u32 e = LOAD(scales, p);
                if (e == 0u || e == 255u) STORE(err, 0u, 1u);
                s = AS_F32(e << 23u);
            }
""" + ITEM_ADVANCE + """
        }
        if (mode == 1u) {
""" + specialised_loop(_NF4_ELEMENT) + """
        } else {
""" + specialised_loop(_ELEMENT, "chk == 0u", _CHECK) + """
        }
    }
"""

_UNPACK_INT_BODY = """
    u32 i = GLOBAL_ID(0);
    if (i >= n) return;
    u32 bit = i * bits;
    u32 code = (LOAD(data, doff + (bit >> 3u)) >> (bit & 7u)) & ((1u << bits) - 1u);
    if (sgn != 0u && code >= (1u << (bits - 1u))) code = code | ~((1u << bits) - 1u);
    STORE(dst, i, code & 255u);
"""


def lut_kernel_name(out: str) -> str:
    """The registered table-driven kernel for output dtype ``out``."""
    return f"dequant_lut_{OUT_DTYPES[out]}"


def reference_lut(a: dict[str, Any], kind: str = "f32") -> None:
    """NumPy oracle of the table-driven kernels: writes ``dst[:n]`` and ``err[0]``."""
    n = int(a["n"])
    if n == 0:
        return
    codes = ref_codes(a["data"], int(a["doff"]), int(a["bits"]), n)
    bad = (codes == 0) | (codes == 255) if a["chk"] else np.zeros(n, bool)
    v = np.asarray(a["lut"], np.float32)[codes]
    mode = int(a["mode"])
    if mode:
        p = ref_block_index(n, int(a["inner"]), int(a["ssize"]), int(a["omul"]),
                            int(a["kshift"]))
        if mode == MODE_NF4:
            words = ref_u32_at(a["scales"], 0, int(a["nparam"]), 4)[p]
            bad |= ((words & 0x7F800000) == 0x7F800000) | (words > 0x80000000)
            v = words.view(np.float32) * v
        else:
            e = np.asarray(a["scales"][: int(a["nparam"])], np.uint32)[p]
            bad |= (e == 0) | (e == 255)
            scale = (e << np.uint32(23)).view(np.float32)
            keep = (v.view(np.uint32) & 0x7FFFFFFF) > 0x7F800000
            with np.errstate(over="ignore", invalid="ignore"):
                v = np.where(keep, v, scale * v)
    ref_store(a["dst"], v, kind)
    if bad.any():
        a["err"][0] = ERR_INVALID


def reference_unpack_int(a: dict[str, Any]) -> None:
    """NumPy oracle of ``unpack_int_u8``: sign- or zero-extended codes as bytes."""
    n, bits = int(a["n"]), int(a["bits"])
    if n == 0:
        return
    codes = ref_codes(a["data"], int(a["doff"]), bits, n).astype(np.int64)
    if a["sgn"]:
        codes = np.where(codes >= 1 << (bits - 1), codes - (1 << bits), codes)
    a["dst"][:n] = (codes & 0xFF).astype(np.uint8)


def _extents(s: Any) -> dict[str, int]:
    mode = int(s["mode"])
    nparam = int(s["nparam"]) if mode else 0
    return {"dst": int(s["n"]), "data": code_extent(s), "lut": 1 << min(int(s["bits"]), 8),
            "scales": nparam * (4 if mode == MODE_NF4 else 1), "err": 1}


def _make(out: str) -> KernelDef:
    kind = OUT_DTYPES[out]
    params = (buf("dst", DST_TYPES[kind], "w"), buf("data", "u8"), buf("lut", "f32"),
              buf("scales", "u8"), buf("err", "u32", "w"),
              *(scalar(name) for name in LUT_SCALARS))
    return KernelDef(
        name=lut_kernel_name(out), params=params,
        body=fill_store(_BODY, kind, "v"),
        grid=item_grid, extents=_extents, private=table_private(kind),
        reference=lambda a: reference_lut(a, kind),
        # host_isa: AVX-512 vectorises the 16-entry table builds (cpu backend flag).
        tags=("dequant", "host_isa"),
        doc=f"Table-driven NF4 / MXFP dequantization or small-type unpacking to {out}.")


LUT_KERNELS = tuple(_make(out) for out in OUT_DTYPES)

UNPACK_INT_KERNEL = KernelDef(
    name="unpack_int_u8",
    params=(buf("dst", "u8", "w"), buf("data", "u8"), scalar("n"), scalar("doff"),
            scalar("bits"), scalar("sgn")),
    body=_UNPACK_INT_BODY, grid=lambda s: (int(s["n"]),),
    extents=lambda s: {"dst": int(s["n"]), "data": code_extent(s)},
    reference=reference_unpack_int, tags=("dequant",),
    doc="Widen 1/2/4-bit codes to one byte each (sign-extended for signed types).")
