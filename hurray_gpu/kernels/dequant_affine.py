"""Affine dequantization kernels (schemes 0x01-0x03) and their NumPy reference.

``x = f32(scale) * f32(i32(q - zero_point))``, the subtraction wrapping in 32-bit two's
complement, then rounded to the output type to nearest even (hurray-facts §4).
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

__all__ = ["AFFINE_KERNELS", "AFFINE_RESULT", "AFFINE_SCALARS", "affine_kernel_name"]

# Scale element types by scale_type_tag: f16, bf16, f32 (bytes per entry).
SCALE_WIDTH = {1: 2, 2: 2, 3: 4}

AFFINE_SCALARS = (
    "n", "ept", "doff", "bits", "sgn", "mode", "stype", "zmode", "zoff", "nparam", "inner", "dm1",
    "dsh1", "ssize", "dm2", "dsh2", "omul", "kshift", "zlo", "zhi", "sval", "zval")
_SCALAR_TYPES = {"zlo": "i32", "zhi": "i32", "zval": "i32", "sval": "f32"}

# mode 0: per-tensor (sval, zval); mode 1: scale (and zero point when zmode) per parameter
# index p. Invalid parameters (non-finite or zero scale, zero point outside [zlo, zhi]) set
# err[0]; the host then raises instead of returning the output.
_ELEMENT = """
            // Branch-free sign extension: random signs would mispredict a branch.
            i32 q = I32(code << sx) >> sx;
            {store}
"""

_BODY = ITEM_START + """
    u32 sx = (sgn != 0u && bits < 32u) ? 32u - bits : 0u;
    f32 s = sval;
    i32 z = zval;
    while (i < last) {
        u32 end = last;
        if (mode != 0u) {
""" + PARAM_RUN + """
            if (stype == 3u) {
                u32 at = p * 4u;
                u32 w = LOAD(scales, at) | (LOAD(scales, at + 1u) << 8u)
                        | (LOAD(scales, at + 2u) << 16u) | (LOAD(scales, at + 3u) << 24u);
                if ((w & 0x7f800000u) == 0x7f800000u || (w & 0x7fffffffu) == 0u) {
                    STORE(err, 0u, 1u);
                }
                s = AS_F32(w);
            } else {
                u32 at = p * 2u;
                u32 h = LOAD(scales, at) | (LOAD(scales, at + 1u) << 8u);
                if (stype == 1u) {
                    if ((h & 0x7c00u) == 0x7c00u || (h & 0x7fffu) == 0u) STORE(err, 0u, 1u);
                    s = F16_BITS_TO_F32(h);
                } else {
                    if ((h & 0x7f80u) == 0x7f80u || (h & 0x7fffu) == 0u) STORE(err, 0u, 1u);
                    s = BF16_BITS_TO_F32(h);
                }
            }
            if (zmode != 0u) {
                // Zero points may start at 2 mod 4 in a shared [scales | zero_points] buffer.
                u32 at = zoff + p * 4u;
                z = I32(LOAD(zps, at) | (LOAD(zps, at + 1u) << 8u)
                        | (LOAD(zps, at + 2u) << 16u) | (LOAD(zps, at + 3u) << 24u));
                if (z < zlo || z > zhi) STORE(err, 0u, 1u);
            }
""" + ITEM_ADVANCE + """
        }
""" + specialised_loop(_ELEMENT) + """
    }
"""


# The affine formula itself (spec: int32 q - z, then one float32 multiply); shared by the KV
# cache int8 gather so there is one source of it.
AFFINE_RESULT = "s * F32(I32(U32(q) - U32(z)))"


def affine_kernel_name(out: str) -> str:
    """The registered kernel name for output dtype ``out`` (``float32``/``float16``/...)."""
    return f"dequant_affine_{OUT_DTYPES[out]}"


def _scale_values(a: dict[str, Any], p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scales (f32) and a per-element validity mask, read as the kernel reads them."""
    stype = int(a["stype"])
    width = SCALE_WIDTH[stype]
    words = ref_u32_at(a["scales"], 0, int(a["nparam"]), width)[p]
    if stype == 3:
        bad = ((words & 0x7F800000) == 0x7F800000) | ((words & 0x7FFFFFFF) == 0)
        return words.view(np.float32), bad
    halves = words.astype(np.uint16)
    if stype == 1:
        bad = ((halves & 0x7C00) == 0x7C00) | ((halves & 0x7FFF) == 0)
        return halves.view(np.float16).astype(np.float32), bad
    bad = ((halves & 0x7F80) == 0x7F80) | ((halves & 0x7FFF) == 0)
    return (halves.astype(np.uint32) << np.uint32(16)).view(np.float32), bad


def _signed(codes: np.ndarray, bits: int) -> np.ndarray:
    values = codes.astype(np.int64)
    return np.where(values >= 1 << (bits - 1), values - (1 << bits), values)


def reference_affine(a: dict[str, Any], kind: str = "f32") -> None:
    """NumPy oracle of the affine kernels: writes ``dst[:n]`` and ``err[0]`` in place."""
    n, bits = int(a["n"]), int(a["bits"])
    if n == 0:
        return
    codes = ref_codes(a["data"], int(a["doff"]), bits, n)
    q = _signed(codes, bits) if a["sgn"] else codes.astype(np.int64)
    scale = np.full(n, np.float32(a["sval"]), np.float32)
    zero = np.full(n, int(a["zval"]), np.int64)
    bad = np.zeros(n, bool)
    if a["mode"]:
        p = ref_block_index(n, int(a["inner"]), int(a["ssize"]), int(a["omul"]),
                            int(a["kshift"]))
        scale, bad = _scale_values(a, p)
        if a["zmode"]:
            zero = ref_u32_at(a["zps"], int(a["zoff"]), int(a["nparam"]), 4)[p]
            zero = zero.view(np.int32).astype(np.int64)
            bad |= (zero < int(a["zlo"])) | (zero > int(a["zhi"]))
    # The i32 subtraction wraps (two's complement), exactly as the kernel's u32 arithmetic.
    diff = ((q - zero) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    with np.errstate(over="ignore"):  # huge scales overflow to inf, as IEEE f32 does
        x = scale * diff.astype(np.float32)
    ref_store(a["dst"], x, kind)
    if bad.any():
        a["err"][0] = ERR_INVALID


def _extents(s: Any) -> dict[str, int]:
    width = SCALE_WIDTH.get(int(s["stype"]), 4)
    nparam = int(s["nparam"]) if s["mode"] else 0
    return {"dst": int(s["n"]), "data": code_extent(s), "scales": nparam * width,
            "zps": int(s["zoff"]) + nparam * 4 if s["zmode"] and s["mode"] else 0, "err": 1}


def _make(out: str) -> KernelDef:
    kind = OUT_DTYPES[out]
    params = (buf("dst", DST_TYPES[kind], "w"), buf("data", "u8"), buf("scales", "u8"),
              buf("zps", "u8"), buf("err", "u32", "w"),
              *(scalar(name, _SCALAR_TYPES.get(name, "u32")) for name in AFFINE_SCALARS))
    return KernelDef(
        name=affine_kernel_name(out), params=params,
        body=fill_store(_BODY, kind, AFFINE_RESULT),
        grid=item_grid, extents=_extents, private=table_private(kind),
        reference=lambda a: reference_affine(a, kind),
        local_size=(64, 1, 1), tags=("dequant",),
        doc=f"Affine dequantization (per-tensor/channel/block) of any storage type to {out}.")


AFFINE_KERNELS = tuple(_make(out) for out in OUT_DTYPES)
