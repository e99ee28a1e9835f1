"""The kernel dialect layer: kernels are written once in a portable C subset and rendered.

The subset (checked by :func:`lint_body`):

- types ``u32``, ``i32``, ``f32``, ``bool``; integer literals mixed with u32 take a ``u``
  suffix, float literals an ``f`` suffix;
- ``GLOBAL_ID(d)`` (d = 0, 1, 2) is the work item's u32 id on axis d;
- ``LOAD(buf, i)`` reads element ``i`` (a u32) of a buffer parameter, widened to u32 (u8,
  u16, u32), i32 (i8, i16, i32) or f32 (f32, f16, bf16); ``STORE(buf, i, v)`` narrows and
  writes it (16-bit floats round to nearest even);
- intrinsics ``U32 I32 F32`` (conversions), ``AS_F32 AS_U32`` (bit casts), ``FMA FMIN FMAX
  UMIN UMAX IMIN IMAX SQRT FLOOR FABS EXP2 LOG2``; ``FMA`` is fused on CUDA, HIP, OpenCL
  and host C, but Vulkan does not require OpFma to be fused (lavapipe rounds twice);
  ``FMA_RN`` rounds once on every dialect (GLSL: an exact integer emulation, slower);
  ``CR_EXP CR_EXP2 CR_LOG CR_LOG2 CR_RSQRT CR_SINH CR_COSH CR_TANH CR_ATAN CR_ASIN CR_ACOS
  CR_SIN CR_COS CR_TAN``
  (correctly rounded f32 functions, the same bits on every dialect; they compute in ``f64``,
  a type bodies may use too, with ``F64`` conversions, ``SQRT64``, ``POW2_64(k)`` = 2^k,
  ``F64_HI(x)``/``F64_LO(x)`` (its u32 words), ``AS_F64(hi, lo)`` and ``lf``-suffixed
  literals; the device needs f64, except on WGSL, which emulates it exactly: see
  :mod:`hurray_gpu.dialect.crmath` and :mod:`hurray_gpu.dialect.softf64`);
  ``UMULHI(a, b)`` (high 32 bits of the u32 product); ``F16_BITS_TO_F32``/``BF16_BITS_TO_F32``
  (widen raw 16-bit patterns) and ``F32_TO_F16_BITS``/``F32_TO_BF16_BITS`` (round to nearest
  even, NaN payloads as NumPy/ml_dtypes), the same portable helpers on every dialect;
- ``SCALE8_<F32|BF16|F16>(buf, k, tab, data, at, B, s, total, g);`` stores ``t`` if NaN else
  ``s * t``, converted to the output (bits), for ``t = LOAD(tab, code)`` to elements ``k + 8j +
  e`` (j < g, e = 0..7) of ``buf``, code e of group j being bits [e*B, e*B + B) (B = 4, 6 or 8)
  of the bytes of ``data`` from ``at + B*j``; ``total`` is the output's size (a hint); host C
  renders it as vector code (4-bit runs of four or more groups: the 16 entries scaled and
  converted once, then byte shuffles per 32 codes), the other dialects as a loop of the eight
  STOREs;
- ``MXSCALE8_<F32|BF16|F16>(buf, k, tab, data, at, B, scales, p, total, g, nblk, err);``: nblk
  blocks of g groups, block q a SCALE8 with ``s = AS_F32(e << 23)`` for the e8m0 byte ``e =
  LOAD(scales, p + q)`` (e of 0 or 255 sets ``err[0]`` to 1); host C runs the blocks in one
  vector loop (AVX-512 VBMI: a 32-code block per register), the other dialects the SCALE8 loop;
- ``TRANSPOSE8(dst, di, dn, src, si, sn);`` stores ``LOAD(src, si + k*sn + j)`` to
  ``di + j*dn + k`` and ``ZORDER8(dst, di, dn, src, si, 0);`` ``LOAD(src, si + Z(j, k))`` (j's
  bits at even, k's at odd positions), j, k = 0..7; host C shuffles u32 words in registers;
- ``TRANSPOSE16(dst, di, dn, src, si, sn, total);`` is TRANSPOSE8 for j, k = 0..15, and
  ``ZORDER16(dst, di, dn, src, si, 0, total);`` ZORDER8; ``total`` (the output's word count)
  is a hint: host C streams the rows (whole cache lines of u32 words) of an output too large
  to stay in cache;
- ``COPY8(dst, di, src, si);`` stores ``LOAD(src, si + k)`` to ``di + k``, k = 0..7 (buffers of
  one word type); host C copies the 8 words as one block;
- ``COPY16(dst, di, src, si, sj, total);`` is ``COPY8(dst, di, src, si)`` then
  ``COPY8(dst, di + 8, src, sj)``; ``total`` is TRANSPOSE16's hint: host C writes the 16 u32
  words as one cache line, streamed past the cache for an output too large for it;
- ``KernelDef.private`` arrays (per work item, u32/i32/f32, small) and ``shared`` arrays are
  reached with ``LOAD``/``STORE`` like buffers;
- ``if``/``else``, ``for``, ``while``, ``break``, ``continue``, ``return;``, declarations,
  ``?:`` and C operators; no pointers, arrays, ``[]``, preprocessor, strings or functions.
"""

from __future__ import annotations

from hurray_gpu.dialect.cstyle import (
    CUDARenderer,
    HIPRenderer,
    HostCRenderer,
    OpenCLRenderer,
)
from hurray_gpu.dialect.glsl import GLSLRenderer
from hurray_gpu.dialect.kernel import KernelDef, Param, buf, scalar
from hurray_gpu.dialect.render import RENDER_VERSION, CStyleRenderer, lint_body
from hurray_gpu.dialect.wgsl import WGSLRenderer
from hurray_gpu.errors import UnsupportedOpError

__all__ = [
    "DIALECTS",
    "RENDER_VERSION",
    "CStyleRenderer",
    "CUDARenderer",
    "GLSLRenderer",
    "HIPRenderer",
    "HostCRenderer",
    "KernelDef",
    "OpenCLRenderer",
    "WGSLRenderer",
    "Param",
    "buf",
    "get_renderer",
    "lint_body",
    "render",
    "scalar",
]

DIALECTS: dict[str, CStyleRenderer] = {
    r.dialect: r for r in (CUDARenderer(), HIPRenderer(), OpenCLRenderer(), GLSLRenderer(),
                           HostCRenderer(), WGSLRenderer())
}


def get_renderer(dialect: str) -> CStyleRenderer:
    """Return the renderer for ``dialect`` (``cuda``, ``hip``, ``opencl``, ``glsl``, ``c``,
    ``wgsl``).

    Raises:
        UnsupportedOpError: unknown dialect.
    """
    renderer = DIALECTS.get(dialect)
    if renderer is None:
        raise UnsupportedOpError(f"unknown kernel dialect {dialect!r}",
                                 fix=f"use one of {sorted(DIALECTS)}.")
    return renderer


def render(kernel: KernelDef, dialect: str) -> str:
    """Render ``kernel`` as source text in ``dialect`` (a pure function).

    Raises:
        UnsupportedOpError: unknown dialect, or a body outside the portable subset.
    """
    return get_renderer(dialect).render(kernel)
