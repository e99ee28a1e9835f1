"""Composite assembly kernels: write (or add) a row-major member into its box of the head's
row-major output. Destination offsets come from ``layout_axis_table`` tables (a strided box).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from hurray_gpu.kernels.dialect.kernel import KernelDef, buf, scalar

__all__ = ["PUT_KERNELS", "add_kernel", "put_kernel"]

_HEAD = """
    u32 x = GLOBAL_ID(0);
    u32 y = GLOBAL_ID(1);
    u32 z = GLOBAL_ID(2);
    if (x >= nx || y >= ny || z >= nz) return;
    u32 f = (z * ny + y) * nx + x;
    u32 d = LOAD(tz, z) + LOAD(ty, y) + LOAD(tx, x);
    if (d >= ndst) return;
"""
_PUT = _HEAD + """
    for (u32 w = 0u; w < wpe; w++) STORE(dst, d * wpe + w, LOAD(src, f * wpe + w));
"""
# The sum is evaluated in f32 and rounded once to the head type: exact IEEE addition in the
# head type for f16/bf16 (f32 holds both sums exactly before the single rounding).
_ADD = {
    "f32": "STORE(dst, d, AS_U32(AS_F32(LOAD(dst, d)) + AS_F32(LOAD(src, f))));",
    "f16": "STORE(dst, d, F32_TO_F16_BITS(F16_BITS_TO_F32(LOAD(dst, d)) "
           "+ F16_BITS_TO_F32(LOAD(src, f))));",
    "bf16": "STORE(dst, d, F32_TO_BF16_BITS(BF16_BITS_TO_F32(LOAD(dst, d)) "
            "+ BF16_BITS_TO_F32(LOAD(src, f))));",
}
_WORD = {"f32": "u32", "f16": "u16", "bf16": "u16"}
_NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def _dest(a: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    nx, ny, nz = int(a["nx"]), int(a["ny"]), int(a["nz"])
    f = np.arange(nx * ny * nz, dtype=np.int64)
    x, yz = f % nx, f // nx
    d = (a["tz"][yz // ny].astype(np.uint64) + a["ty"][yz % ny] + a["tx"][x]) & 0xFFFFFFFF
    keep = d < int(a["ndst"])
    return f[keep], d[keep].astype(np.int64)


def _ref_put(a: dict[str, Any]) -> None:
    f, d = _dest(a)
    wpe = int(a["wpe"])
    for w in range(wpe):
        a["dst"][d * wpe + w] = a["src"][f * wpe + w]


def _ref_add(a: dict[str, Any], kind: str) -> None:
    f, d = _dest(a)
    dt = _NP[kind]
    with np.errstate(over="ignore", invalid="ignore"):
        total = a["dst"][d].view(dt).astype(np.float32) + a["src"][f].view(dt).astype(np.float32)
        a["dst"][d] = total.astype(dt).view(a["dst"].dtype)


def _params(word: str, access: str, extra: tuple[Any, ...]) -> tuple[Any, ...]:
    return (buf("dst", word, access), buf("src", word), buf("tx", "u32"), buf("ty", "u32"),
            buf("tz", "u32"), scalar("nx"), scalar("ny"), scalar("nz"), scalar("ndst"), *extra)


def _extents(s: Any, wpe: int | None) -> dict[str, int]:
    w = int(s["wpe"]) if wpe is None else wpe
    return {"dst": int(s["ndst"]) * w, "src": int(s["nx"]) * int(s["ny"]) * int(s["nz"]) * w,
            "tx": s["nx"], "ty": s["ny"], "tz": s["nz"]}


def _grid(s: Any) -> tuple[int, int, int]:
    return (int(s["nx"]), int(s["ny"]), int(s["nz"]))


_PUTS = {w: KernelDef(
    name=f"layout_put_{w}", params=_params(w, "w", (scalar("wpe"),)), body=_PUT, grid=_grid,
    extents=lambda s: _extents(s, None), reference=_ref_put, local_size=(32, 8, 1),
    tags=("layout",),
    doc=f"dst[box offset of f] = src[f] ({w} words, wpe per element).")
    for w in ("u8", "u16", "u32")}

_ADDS = {k: KernelDef(
    name=f"layout_add_{k}", params=_params(_WORD[k], "rw", ()), body=_HEAD + _ADD[k],
    grid=_grid, extents=lambda s: _extents(s, 1),
    reference=lambda a, kind=k: _ref_add(a, kind),  # type: ignore[misc]
    local_size=(32, 8, 1), tags=("layout",),
    doc=f"dst[box offset of f] += src[f] in {k} (one rounding).") for k in _ADD}


def put_kernel(word: str) -> KernelDef:
    """The box-write kernel for ``word`` (``"u8"``, ``"u16"``, ``"u32"``)."""
    return _PUTS[word]


def add_kernel(kind: str) -> KernelDef:
    """The box-add kernel for head element kind ``"f32"``, ``"f16"`` or ``"bf16"``."""
    return _ADDS[kind]


PUT_KERNELS = (*_PUTS.values(), *_ADDS.values())
