"""Small built-in kernels that run on every backend: fills, copies, axpy, float conversions.

Each has a NumPy reference that writes its outputs in place, exactly as the kernel does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.dialect.kernel import KernelDef, buf, scalar

__all__ = ["BASIC_KERNELS"]


def _n(s: Any) -> tuple[int, ...]:
    return (int(s["n"]),)


def _ref_fill_u32(a: dict[str, Any]) -> None:
    a["dst"][: a["n"]] = np.uint32(a["value"])


def _ref_copy_bytes(a: dict[str, Any]) -> None:
    a["dst"][: a["n"]] = a["src"][: a["n"]]


def _ref_axpy_f32(a: dict[str, Any]) -> None:
    n = a["n"]
    # a*x is exact in f64, so this is one rounding away from the kernel's fused multiply-add.
    with np.errstate(all="ignore"):  # inf - inf = NaN is the intended IEEE result
        exact = np.float64(np.float32(a["a"])) * a["x"][:n].astype(np.float64) + a["y"][:n]
        a["y"][:n] = exact.astype(np.float32)


def _ref_convert(a: dict[str, Any]) -> None:
    n = a["n"]
    with np.errstate(over="ignore", invalid="ignore"):  # inf/NaN conversions are intended
        a["dst"][:n] = a["src"][:n].astype(a["dst"].dtype)


def _ref_transpose_u32(a: dict[str, Any]) -> None:
    rows, cols = a["rows"], a["cols"]
    src = a["src"][: rows * cols].reshape(rows, cols)
    a["dst"][: rows * cols] = src.T.reshape(-1)


def _convert(name: str, src: str, dst: str, doc: str) -> KernelDef:
    return KernelDef(
        name=name,
        params=(buf("dst", dst, "w"), buf("src", src, "r"), scalar("n")),
        body="""
            u32 i = GLOBAL_ID(0);
            if (i >= n) return;
            STORE(dst, i, LOAD(src, i));
        """,
        grid=_n, extents=lambda s: {"dst": s["n"], "src": s["n"]},
        reference=_ref_convert, doc=doc, tags=("convert",))


FILL_U32 = KernelDef(
    name="fill_u32",
    params=(buf("dst", "u32", "w"), scalar("value"), scalar("n")),
    body="""
        u32 i = GLOBAL_ID(0);
        if (i >= n) return;
        STORE(dst, i, value);
    """,
    grid=_n, extents=lambda s: {"dst": s["n"]}, reference=_ref_fill_u32,
    doc="dst[i] = value for i < n.")

COPY_BYTES = KernelDef(
    name="copy_bytes",
    params=(buf("dst", "u8", "w"), buf("src", "u8", "r"), scalar("n")),
    body="""
        u32 i = GLOBAL_ID(0);
        if (i >= n) return;
        STORE(dst, i, LOAD(src, i));
    """,
    grid=_n, extents=lambda s: {"dst": s["n"], "src": s["n"]}, reference=_ref_copy_bytes,
    doc="dst[i] = src[i] for i < n bytes (exercises sub-word stores).")

AXPY_F32 = KernelDef(
    name="axpy_f32",
    params=(buf("y", "f32", "rw"), buf("x", "f32", "r"), scalar("a", "f32"), scalar("n")),
    body="""
        u32 i = GLOBAL_ID(0);
        if (i >= n) return;
        STORE(y, i, FMA(a, LOAD(x, i), LOAD(y, i)));
    """,
    grid=_n, extents=lambda s: {"y": s["n"], "x": s["n"]}, reference=_ref_axpy_f32,
    doc="y[i] = fma(a, x[i], y[i]) for i < n (reference within 1 ulp: f64 then f32).")

TRANSPOSE_U32 = KernelDef(
    name="transpose_u32",
    params=(buf("dst", "u32", "w"), buf("src", "u32", "r"), scalar("rows"), scalar("cols")),
    body="""
        u32 c = GLOBAL_ID(0);
        u32 r = GLOBAL_ID(1);
        if (c >= cols || r >= rows) return;
        STORE(dst, c * rows + r, LOAD(src, r * cols + c));
    """,
    grid=lambda s: (int(s["cols"]), int(s["rows"])),
    extents=lambda s: {"dst": s["rows"] * s["cols"], "src": s["rows"] * s["cols"]},
    reference=_ref_transpose_u32, local_size=(8, 8, 1),
    doc="dst (cols x rows) = transpose of src (rows x cols), row-major u32.")

BASIC_KERNELS = (
    FILL_U32, COPY_BYTES, AXPY_F32, TRANSPOSE_U32,
    _convert("f16_to_f32", "f16", "f32", "dst[i] = f32(src[i]) (f16, exact)."),
    _convert("f32_to_f16", "f32", "f16", "dst[i] = f16(src[i]), round to nearest even."),
    _convert("bf16_to_f32", "bf16", "f32", "dst[i] = f32(src[i]) (bf16, exact)."),
    _convert("f32_to_bf16", "f32", "bf16", "dst[i] = bf16(src[i]), round to nearest even."),
    _convert("u8_to_f32", "u8", "f32", "dst[i] = f32(src[i]) for u8 src."),
    _convert("i16_to_i32", "i16", "i32", "dst[i] = i32(src[i]) (sign extension)."))
