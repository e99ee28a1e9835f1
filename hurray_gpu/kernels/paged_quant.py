"""Quantized paged KV kernels: append quantizes, gather dequantizes (int8 and float8_e4m3).

int8 is Hurray per-block affine (axis 0, block = page, symmetric) with one f32 scale per page
slot, i.e. per token row. Scales are powers of two, so quantizing is an exact multiply and the
result is bit-identical on every backend (no device division). float8_e4m3 has no scale:
values saturate to +-448, round to nearest even, NaN stays NaN.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ml_dtypes
import numpy as np

from hurray_gpu.kernels.dequant_affine import AFFINE_RESULT
from hurray_gpu.kernels.dialect.kernel import FLOAT_TYPES, KernelDef, buf, scalar
from hurray_gpu.kernels.paged import MAX_LANES, MAX_WIDTH, ROLES, SKIP_SLOT

__all__ = ["FLOAT_WORDS", "QUANT_KERNELS", "quant_kernel", "ref_q8_rows"]

# Cache compute dtypes (Hurray name -> kernel buffer type) that quantized caches accept.
FLOAT_WORDS = FLOAT_TYPES
_NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}


def _rows(s: Mapping[str, Any]) -> int:
    return int(s["n"]) // max(int(s["lanes"]), 1)


def _ok(a: Mapping[str, Any]) -> bool:
    return 1 <= int(a["lanes"]) <= MAX_LANES and 0 < int(a["row"]) <= MAX_WIDTH and _rows(a) > 0


def ref_q8_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and power-of-two f32 scales of rows ``x`` (float32 [rows, row]).

    The scale of a row is 2^e with e the smallest exponent (>= -126) for which every finite
    value / 2^e rounds (half up) into [-127, 127]. Subnormal inputs and NaN quantize to 0,
    +-inf to +-127.
    """
    bits = x.view(np.uint32) & np.uint32(0x7FFFFFFF)
    finite = bits < 0x7F800000
    amax = np.where(finite, bits, 0).max(axis=1, initial=0).astype(np.int64)
    e = np.maximum(np.where(amax >= 0x00800000, (amax >> 23) - 133, -126), -126)
    big = amax.astype(np.uint32).view(np.float32) * np.exp2(-e).astype(np.float32)
    e = np.where((amax >= 0x00800000) & (big >= np.float32(127.5)), e + 1, e)
    inv = np.exp2(-e).astype(np.float32)[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        q = np.floor(x * inv + np.float32(0.5))
    q = np.clip(np.where(bits >= 0x00800000, q, 0), -127, 127)
    q = np.where(finite, q, np.where(bits == 0x7F800000, np.sign(x) * 127, 0))
    return q.astype(np.int8), np.exp2(e).astype(np.float32)


def _slot_rows(a: Mapping[str, Any]) -> tuple[int, int, np.ndarray, np.ndarray]:
    row, limit, rows = int(a["row"]), int(a["num_slots"]), _rows(a)
    slots = a["slots"][:rows].astype(np.int64)
    return row, limit, slots, slots < limit


def _ref_q8_scatter(a: dict[str, Any]) -> None:
    if not _ok(a):
        return
    row, limit, slots, keep = _slot_rows(a)
    for r in ROLES:
        src = a[f"{r}src"][: slots.size * row].astype(np.float32).reshape(-1, row)
        q, scale = ref_q8_rows(src)
        a[f"{r}pool"][: limit * row].reshape(limit, row)[slots[keep]] = q[keep]
        a[f"{r}scales"][:limit][slots[keep]] = scale[keep]


def _ref_q8_gather(a: dict[str, Any]) -> None:
    if not _ok(a):
        return
    row, limit, slots, keep = _slot_rows(a)
    for r in ROLES:
        dst = a[f"{r}dst"][: slots.size * row].reshape(-1, row)
        q = a[f"{r}pool"][: limit * row].reshape(limit, row)[slots[keep]].astype(np.float32)
        dst[keep] = (a[f"{r}scales"][:limit][slots[keep]][:, None] * q).astype(dst.dtype)
        dst[~keep & (slots != SKIP_SLOT)] = 0


def _ref_f8_scatter(a: dict[str, Any]) -> None:
    if not _ok(a):
        return
    row, limit, slots, keep = _slot_rows(a)
    for r in ROLES:
        src = a[f"{r}src"][: slots.size * row].astype(np.float32).reshape(-1, row)[keep]
        with np.errstate(invalid="ignore"):
            codes = np.clip(src, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        a[f"{r}pool"][: limit * row].reshape(limit, row)[slots[keep]] = codes


def _ref_f8_gather(a: dict[str, Any]) -> None:
    if not _ok(a):
        return
    row, limit, slots, keep = _slot_rows(a)
    for r in ROLES:
        dst = a[f"{r}dst"][: slots.size * row].reshape(-1, row)
        codes = a[f"{r}pool"][: limit * row].reshape(limit, row)[slots[keep]]
        dst[keep] = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32).astype(dst.dtype)
        dst[~keep & (slots != SKIP_SLOT)] = 0


_LANE = """
    u32 i = GLOBAL_ID(0);
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    u32 t = i / lanes;
    if (t >= n / lanes) return;
    u32 lane = i - t * lanes;
    u32 slot = LOAD(slots, t);
"""

# One work item per row: the row's largest finite |x| (compared as bits, so NaN and device
# max() semantics never matter) picks the power-of-two scale.
_Q8_SCATTER = """
    {
        u32 amax = 0u;
        for (u32 w = 0u; w < row; w++) {
            u32 a = AS_U32(LOAD({r}src, from + w)) & 0x7fffffffu;
            if (a < 0x7f800000u) amax = UMAX(amax, a);
        }
        i32 e = -126;
        if (amax >= 0x00800000u) {
            e = I32(amax >> 23u) - 133;
            e = IMAX(e, -126);
            if (AS_F32(amax) * AS_F32(U32(127 - e) << 23u) >= 127.5f) e = e + 1;
        }
        f32 inv = AS_F32(U32(127 - e) << 23u);
        STORE({r}scales, slot, AS_F32(U32(127 + e) << 23u));
        for (u32 w = 0u; w < row; w++) {
            f32 v = LOAD({r}src, from + w);
            u32 a = AS_U32(v) & 0x7fffffffu;
            i32 q = 0;
            if (a == 0x7f800000u) {
                q = (AS_U32(v) >> 31u) != 0u ? -127 : 127;
            } else if (a >= 0x00800000u && a < 0x7f800000u) {
                q = IMIN(IMAX(I32(FLOOR(v * inv + 0.5f)), -127), 127);
            }
            STORE({r}pool, to + w, q);
        }
    }
"""

# Dequantization is the Hurray per-block affine formula shared with the dequant kernels
# (AFFINE_RESULT, with zero point 0): scale[slot] * q, bit-identical to every other path.
_Q8_GATHER = """
    {
        f32 s = LOAD({r}scales, slot);
        i32 z = 0;
        for (u32 w = lane; w < row; w += lanes) {
            i32 q = LOAD({r}pool, from + w);
            STORE({r}dst, to + w, """ + AFFINE_RESULT + """);
        }
    }
"""

_F8_SCATTER = """
    for (u32 w = lane; w < row; w += lanes) {
        u32 b = AS_U32(LOAD({r}src, from + w));
        u32 a = b & 0x7fffffffu;
        u32 code = 0u;
        if (a > 0x7f800000u) {
            code = 0x7fu;
        } else if (a >= 0x43e00000u) {
            code = 0x7eu;
        } else if (a >= 0x3c800000u) {
            code = ((a + 0x7ffffu + ((a >> 20u) & 1u)) >> 20u) - 960u;
        } else if ((a >> 23u) >= 117u) {
            // Subnormal e4m3: round m * 2^(e - 141) to nearest even (as hg_f32_to_f16 does).
            u32 m = (a & 0x7fffffu) | 0x800000u;
            u32 s = 141u - (a >> 23u);
            code = (m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s;
        }
        STORE({r}pool, to + w, ((b >> 24u) & 0x80u) | code);
    }
"""

_F8_GATHER = """
    for (u32 w = lane; w < row; w += lanes) {
        u32 c = LOAD({r}pool, from + w);
        u32 sign = (c & 0x80u) << 24u;
        u32 e = (c >> 3u) & 15u;
        u32 m = c & 7u;
        f32 v = AS_F32(sign | ((e + 120u) << 23u) | (m << 20u));
        if (e == 15u && m == 7u) v = AS_F32(sign | 0x7fc00000u);
        if (e == 0u) v = AS_F32(sign | AS_U32(F32(m) * 0.001953125f));
        STORE({r}dst, to + w, v);
    }
"""

# Scatter: slots past the pool write nothing (q8 works one item per row, on lane 0).
_SCATTER_HEAD = """
    if (slot >= num_slots) return;
    u32 from = t * row;
    u32 to = slot * row;
"""
# Gather: slots past the pool (the padding sentinel) read as zero rows; SKIP_SLOT is left.
_GATHER_HEAD = """
    if (slot == 0xFFFFFFFEu) return;  // SKIP_SLOT: another window's token
    u32 to = t * row;
    if (slot >= num_slots) {
        for (u32 w = lane; w < row; w += lanes) {
            STORE(kdst, to + w, 0.0f);
            STORE(vdst, to + w, 0.0f);
        }
        return;
    }
    u32 from = slot * row;
"""


def _per_role(template: str) -> str:
    return "".join(template.replace("{r}", r) for r in ROLES)


def _extents(data: str, dense: str, scales: bool) -> Any:
    def extents(s: Mapping[str, Any]) -> dict[str, int]:
        out = {"slots": _rows(s)}
        for r in ROLES:
            out[r + data] = int(s["num_slots"]) * int(s["row"])
            out[r + dense] = _rows(s) * int(s["row"])
            if scales:
                out[r + "scales"] = int(s["num_slots"])
        return out
    return extents


_SCALARS = (scalar("n"), scalar("lanes"), scalar("row"), scalar("num_slots"))


def _bufs(name: str, dtype: str, access: str) -> tuple[Any, ...]:
    return tuple(buf(r + name, dtype, access) for r in ROLES)


def _make(op: str, fmt: str, word: str) -> KernelDef:
    q8 = fmt == "q8"
    store = "i8" if q8 else "u8"
    if op == "scatter":
        params = _bufs("pool", store, "w") + (_bufs("scales", "f32", "w") if q8 else ()) + \
            _bufs("src", word, "r") + (buf("slots", "u32", "r"),)
        head = _SCATTER_HEAD.replace("return;", "return;\n    if (lane != 0u) return;") \
            if q8 else _SCATTER_HEAD
        body, ref = (_Q8_SCATTER, _ref_q8_scatter) if q8 else (_F8_SCATTER, _ref_f8_scatter)
        extents = _extents("pool", "src", q8)
        doc = f"quantize k/v rows of {word} to {'int8 + scale' if q8 else 'float8_e4m3'} slots"
    else:
        params = _bufs("dst", word, "w") + _bufs("pool", store, "r") + \
            (_bufs("scales", "f32", "r") if q8 else ()) + (buf("slots", "u32", "r"),)
        head = _GATHER_HEAD
        body, ref = (_Q8_GATHER, _ref_q8_gather) if q8 else (_F8_GATHER, _ref_f8_gather)
        extents = _extents("pool", "dst", q8)
        doc = f"dequantize slots to k/v {word} rows (zeros for slots past the pool)"
    return KernelDef(name=f"kv_{fmt}_{op}_{word}", params=params + _SCALARS,
                     body=_LANE + head + _per_role(body), grid=lambda s: (int(s["n"]),),
                     extents=extents, reference=ref, tags=("kv_cache",), doc=doc + ".")


QUANT_KERNELS = tuple(_make(op, fmt, word) for fmt in ("q8", "f8") for op in ("scatter", "gather")
                      for word in ("f16", "bf16", "f32"))
_BY_NAME = {k.name: k for k in QUANT_KERNELS}


def quant_kernel(op: str, fmt: str, word: str) -> KernelDef:
    """The KernelDef of ``op`` (scatter, gather) for ``fmt`` (q8, f8) and ``word`` (f16...)."""
    return _BY_NAME[f"kv_{fmt}_{op}_{word}"]
