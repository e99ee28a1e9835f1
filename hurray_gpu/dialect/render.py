"""CStyleRenderer: the one walk from a KernelDef to source text; dialects are data.

Rendering is a pure function of the kernel: it never touches a device and never optimises.
"""

from __future__ import annotations

import re
import textwrap
from typing import ClassVar

from hurray_gpu.dialect.crmath import CR_FUNCS, crmath_helpers
from hurray_gpu.dialect.helpers import HELPERS, helpers_for
from hurray_gpu.dialect.kernel import KernelDef, Param
from hurray_gpu.errors import UnsupportedOpError

__all__ = ["AFFINE8_CALL", "HFAFFINE8_CALL", "MXSCALE8_CALL", "RENDER_VERSION", "SCALE8_CALL",
           "SCALE8_CONV", "BLOCK8_CALL",
           "COPY8_CALL", "COPY16_CALL", "BLOCK16_CALL", "CStyleRenderer",
           "expand_scale8", "expand_block8", "lint_body", "value_type"]

# Bump whenever rendered semantics change: it is hashed into every kernel cache key.
RENDER_VERSION = 6

# CR_<F>(x): the correctly rounded f32 functions of dialect/crmath.py, the same bits on every
# dialect (they evaluate in f64: F64 converts, SQRT64 is the f64 root, POW2_64(k) 2^k as f64;
# f64 literals carry an ``lf`` suffix, dropped by the C dialects).
CR_INTRINSICS = tuple(f"CR_{name}" for name in CR_FUNCS)
# F64_HI(x)/F64_LO(x): the high/low u32 word of an f64; AS_F64(hi, lo): the f64 of two words.
F64_INTRINSICS = ("F64", "SQRT64", "POW2_64", "F64_HI", "F64_LO", "AS_F64")
_F64_LIT = re.compile(r"\b([0-9][0-9.]*(?:[eE][+-]?[0-9]+)?)lf\b")
# FMA_RN(a, b, c): a*b+c rounded once on every dialect (GLSL: exact integer emulation, since
# Vulkan's fma() may round twice); FMA is whatever the target fuses fastest.
# The intrinsics a body may call (besides LOAD, STORE, GLOBAL_ID and FUNC).
INTRINSICS = ("U32", "I32", "F32", "AS_F32", "AS_U32", "FMA", "FMIN", "FMAX", "UMIN", "UMAX",
              "IMIN", "IMAX", "SQRT", "FLOOR", "FABS", "EXP2", "LOG2", "UMULHI",
              "F16_BITS_TO_F32", "BF16_BITS_TO_F32", "F32_TO_F16_BITS", "F32_TO_BF16_BITS",
              "FMA_RN", *CR_INTRINSICS, *F64_INTRINSICS)
# Intrinsics rendered as a call to a helper function, emitted only when a body uses them.
HELPER_INTRINSICS = {"F16_BITS_TO_F32": "hg_f16_to_f32", "BF16_BITS_TO_F32": "hg_bf16_to_f32",
                     "F32_TO_F16_BITS": "hg_f32_to_f16", "F32_TO_BF16_BITS": "hg_f32_to_bf16"}
# Text that has no portable meaning in every dialect (pointers, arrays, preprocessor...; ``$``
# marks a hole of a composed piece, see compose.py).
_FORBIDDEN = ("[", "]", "#", '"', "'", "->", "__", "\\", "$")
_FORBIDDEN_WORDS = re.compile(
    r"\b(goto|asm|malloc|free|printf|struct|union|typedef|static|"
    r"unsigned|signed|char|short|long|double|int|uint|float|half|hg_\w*)\b")
# Pointer declarations and address-of: C accepts them, GLSL has no pointers.
_POINTERS = re.compile(r"\b(u32|i32|f32|bool)\s*\*|(?:[=(,;{]|\breturn)\s*&(?!&)")
_CALL = re.compile(r"\b([A-Z][A-Z0-9_]*)\s*\(")
_ACCESS = re.compile(r"\b(LOAD|STORE|ATOMIC_[A-Z]+)\(\s*([A-Za-z_]\w*)\s*,\s*")
# Atomic read-modify-writes on rw u32 buffers, returning the old value:
# ATOMIC_<OP>(buf, i, v); ATOMIC_CAS(buf, i, expected, v).
ATOMICS = ("ATOMIC_ADD", "ATOMIC_OR", "ATOMIC_AND", "ATOMIC_XOR", "ATOMIC_MIN", "ATOMIC_MAX",
           "ATOMIC_XCHG", "ATOMIC_CAS")
_GID = re.compile(r"\bGLOBAL_ID\(\s*([0-9]+)\s*\)")
# SCALE8_<T>(dst, k, tab, data, at, B, s, total, g);  a statement: for each of g groups j and
# e = 0..7, code e of group j is bits [e*B, e*B + B) of the little-endian bytes of u8 buffer
# ``data`` from byte ``at + B*j`` (B is 4, 6 or 8), t = LOAD(tab, code) (an f32 buffer or
# private array of 2^B entries) and STORE(dst, k + 8*j + e, CONV(t is NaN ? t : s * t)), CONV
# by <T>: F32 (none), BF16 or F16 (to the bits, as F32_TO_BF16_BITS / F32_TO_F16_BITS):
# "lookup, then scale" for values s * T(code) (NaN entries keep their bits, as MX scaling
# does). ``total`` (the output's element count) is a hint: an output too large to stay in
# cache may bypass it. Host C renders the run as vector code (4-bit codes: T scaled and
# converted once per statement, then shuffled per code; a small float format's table with a
# power-of-two s: exponent arithmetic, no lookups), the other dialects as a loop of the
# eight STOREs; ``k`` is a sum of products of names and literals, the others names, so the
# expansion is plain text.
SCALE8_CALL = re.compile(r"\bSCALE8_(F32|BF16|F16)\(\s*(\w+)\s*,\s*([\w +*]+?)\s*,\s*(\w+)\s*,"
                         r"\s*(\w+)\s*,\s*(\w+)\s*,\s*([468])\s*,\s*(\w+)\s*,\s*(\w+)\s*,"
                         r"\s*(\w+)\s*\)\s*;")
SCALE8_CONV = {"F32": "F32", "BF16": "F32_TO_BF16_BITS", "F16": "F32_TO_F16_BITS"}
# MXSCALE8_<T>(dst, k, tab, data, at, B, scales, p, total, g, nblk, err);  a statement: nblk
# consecutive blocks of g groups, each under its own scale: for q = 0..nblk-1, e = LOAD(scales,
# p + q) (a u8 buffer; an e8m0 byte, MX), STORE(err, 0u, 1u) when e is 0 or 255, then
# SCALE8_<T>(dst, k + 8*g*q, tab, data, at + B*g*q, B, AS_F32(e << 23), total, g).
# NFSCALE8_<T>(...) with the same arguments reads block q's scale as the f32 of the
# little-endian word at byte 4*(p + q) of scales (NF4's absmax), reported when it is not finite
# or below -0.0; HFSCALE8_<T>(...) as the f16 at byte 2*(p + q) (a per-block affine scale),
# reported when it is not finite or is zero. Host C takes the blocks in one vector loop
# (AVX-512 VBMI: a 32-code block per register; MX's scale an exponent add, 4-bit NF and HF
# blocks' 16 table entries scaled and rounded per block); the other dialects, and host C without those instructions, run the loop of SCALE8 statements.
MXSCALE8_CALL = re.compile(r"\b(MX|NF|HF)SCALE8_(F32|BF16|F16)\(\s*(\w+)\s*,\s*([\w +*]+?)\s*,"
                           r"\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*([468])\s*,\s*(\w+)\s*,"
                           r"\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)\s*;")
# AFFINE8_<T>(dst, k, data, at, sx, z, s, total, g);  a statement: for each of g groups j and
# e = 0..7, c = LOAD(data, at + 8*j + e) (a u8 buffer), q = I32(c << sx) >> sx (sx 24: signed
# codes, 0: unsigned) and STORE(dst, k + 8*j + e, CONV(s * F32(I32(U32(q) - U32(z))))), CONV as
# SCALE8's: the affine value of runs of 8-bit codes (z an i32, s an f32, ``total`` the same hint
# as SCALE8's). Host C renders it as vector code (widen, subtract, convert, multiply, convert to
# the output: F16C for f16), streaming large outputs; the other dialects as the eight STOREs.
AFFINE8_CALL = re.compile(r"\bAFFINE8_(F32|BF16|F16)\(\s*(\w+)\s*,\s*([\w +*]+?)\s*,\s*(\w+)\s*,"
                          r"\s*([\w +*]+?)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,"
                          r"\s*(\w+)\s*\)\s*;")
# HFAFFINE8_<T>(dst, k, data, at, sx, z, scales, p, total, g, nblk, err);  AFFINE8's run of
# whole blocks under f16 scales (Q8_0): for q = 0..nblk-1, h = the f16 at byte 2*(p + q) of
# scales (reported as HFSCALE8 reports it), then AFFINE8_<T>(dst, k + 8*g*q, data,
# at + 8*g*q, sx, z, F16_BITS_TO_F32(h), total, g). Host C keeps the blocks in one vector loop;
# the other dialects run the loop of AFFINE8 statements.
HFAFFINE8_CALL = re.compile(r"\bHFAFFINE8_(F32|BF16|F16)\(\s*(\w+)\s*,\s*([\w +*]+?)\s*,"
                            r"\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,"
                            r"\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)\s*;")
_TYPES = re.compile(r"\b(u32|i32|f32|f64|bool)\b")
# -- TRANSPOSE8 and ZORDER8 (8 x 8 word blocks of the layout kernels; apart from SCALE8) -------
# TRANSPOSE8(dst, di, dn, src, si, sn);  for j, k = 0..7: STORE(dst, di + j * dn + k,
# LOAD(src, si + k * sn + j)): 8 source runs of 8 words become 8 destination runs.
# ZORDER8(dst, di, dn, src, si, 0);  for j, k = 0..7: STORE(dst, di + j * dn + k,
# LOAD(src, si + Z(j, k))), Z interleaving the bits of j (even positions) and of k (odd): 64
# words in rank-2 Morton order become 8 destination runs. No source run may wrap past 2**32.
# Host C renders u32 words as register shuffles (GCC leaves the loops scalar), everything else
# as the loops; di and si are sums of products of names and literals, the others names.
BLOCK8_CALL = re.compile(r"\b(TRANSPOSE8|ZORDER8)\(\s*(\w+)\s*,\s*([\w +*]+?)\s*,\s*(\w+)\s*,"
                         r"\s*(\w+)\s*,\s*([\w +*]+?)\s*,\s*(\w+)\s*\)\s*;")
# TRANSPOSE16(dst, di, dn, src, si, sn, total);  TRANSPOSE8's 16 x 16 form, for j, k = 0..15:
# 16 source runs of 16 words become 16 destination runs; ZORDER16(dst, di, dn, src, si, 0,
# total) is ZORDER8's (Z of j, k < 16: 256 words in rank-2 Morton order). ``total`` (the
# output's word count, a name) is a hint: host C writes the rows of an output too large to stay
# in cache as whole cache lines that bypass it, which only a 16-word row of u32 words fills.
BLOCK16_CALL = re.compile(r"\b(TRANSPOSE16|ZORDER16)\(\s*(\w+)\s*,\s*([\w +*]+?)\s*,\s*(\w+)\s*,"
                          r"\s*(\w+)\s*,\s*([\w +*]+?)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)\s*;")
# COPY8(dst, di, src, si);  for k = 0..7: STORE(dst, di + k, LOAD(src, si + k)) (a run of 8 words
# of one type; no run may wrap past 2**32). Host C copies the 8 words as one block (GCC keeps
# the loop's u32 index arithmetic scalar), everything else runs the loop.
COPY8_CALL = re.compile(r"\bCOPY8\(\s*(\w+)\s*,\s*([\w +*]+?)\s*,\s*(\w+)\s*,\s*([\w +*]+?)\s*\)\s*;")
# COPY16(dst, di, src, si, sj, total);  COPY8(dst, di, src, si) then COPY8(dst, di + 8, src, sj):
# two runs of 8 words make one destination run of 16. ``total`` is TRANSPOSE16's hint: host C
# writes the 16 u32 words (a whole cache line) past the cache for an output too large for it.
COPY16_CALL = re.compile(r"\bCOPY16\(\s*(\w+)\s*,\s*([\w +*]+?)\s*,\s*(\w+)\s*,\s*([\w +*]+?)"
                         r"\s*,\s*([\w +*]+?)\s*,\s*(\w+)\s*\)\s*;")
_BLOCK8_SRC = {"TRANSPOSE8": "t8k * {5} + t8j",
               "ZORDER8": "((t8j & 1u) | ((t8k & 1u) << 1u) | ((t8j & 2u) << 1u) | "
                          "((t8k & 2u) << 2u) | ((t8j & 4u) << 2u) | ((t8k & 4u) << 3u))"}
_BLOCK8_SRC.update(TRANSPOSE16=_BLOCK8_SRC["TRANSPOSE8"], ZORDER16=_BLOCK8_SRC["ZORDER8"][:-1]
                   + " | ((t8j & 8u) << 3u) | ((t8k & 8u) << 4u))")

VALUE_TYPES = {"u8": "u32", "u16": "u32", "u32": "u32", "i8": "i32", "i16": "i32",
               "i32": "i32", "f32": "f32", "f16": "f32", "bf16": "f32"}


def value_type(dtype: str) -> str:
    """The body type a LOAD of ``dtype`` yields and a STORE takes (u32, i32 or f32)."""
    return VALUE_TYPES[dtype]


def lint_body(kernel: KernelDef) -> None:
    """Reject bodies outside the portable subset.

    Raises:
        UnsupportedOpError: forbidden syntax, an unknown intrinsic, a LOAD of a write-only
            buffer or a STORE to a read-only one.
    """
    text = re.sub(r"//[^\n]*", "", kernel.body)
    bad = [tok for tok in _FORBIDDEN if tok in text]
    words = _FORBIDDEN_WORDS.findall(text) + [m.group(0) for m in _POINTERS.finditer(text)]
    if bad or words:
        raise UnsupportedOpError(f"kernel {kernel.name}: {bad + words} are not in the portable "
                                 "subset", fix="use LOAD/STORE and the u32/i32/f32 types.")
    # BARRIER(): a work-group barrier for buffers and shared arrays (uniform control flow).
    known = set(INTRINSICS) | set(ATOMICS) | {"LOAD", "STORE", "GLOBAL_ID", "BARRIER",
                                              "TRANSPOSE8", "ZORDER8", "COPY8", "TRANSPOSE16",
                                              "ZORDER16", "COPY16",
                                              *(f"{op}SCALE8_{t}" for t in SCALE8_CONV
                                                for op in ("", "MX", "NF", "HF")),
                                              *(f"{op}AFFINE8_{t}" for t in SCALE8_CONV
                                                for op in ("", "HF"))}
    unknown = sorted({n for n in _CALL.findall(text) if n not in known})
    if unknown:
        raise UnsupportedOpError(f"kernel {kernel.name}: unknown intrinsics {unknown}",
                                 fix=f"call only {sorted(known)}.")
    for dim in _GID.findall(text):
        if dim not in ("0", "1", "2"):
            raise UnsupportedOpError(f"kernel {kernel.name}: GLOBAL_ID({dim}) is not 0, 1 or 2",
                                     fix="index the grid with GLOBAL_ID(0), (1) or (2).")
    buffers = {p.name: p for p in kernel.buffers}
    buffers.update({name: Param(name, "u32", "buffer", "rw") for name, _ in kernel.shared})
    private = {name: Param(name, dtype, "buffer", "rw") for name, dtype, _ in kernel.private}
    buffers.update(private)
    if len(re.findall(r"\bSCALE8_\w*\(", text)) != len(SCALE8_CALL.findall(text)):
        raise UnsupportedOpError(f"kernel {kernel.name}: a SCALE8_<F32|BF16|F16> is not "
                                 "SCALE8_<T>(buffer, index, table, data, byte, 4|6|8, scale, "
                                 "hint, groups);", fix="pass names, an index sum and a literal code "
                                 "width 4, 6 or 8.")
    if len(re.findall(r"\b(?:MX|NF|HF)SCALE8_\w*\(", text)) != len(MXSCALE8_CALL.findall(text)):
        raise UnsupportedOpError(f"kernel {kernel.name}: an MX/NF/HFSCALE8_<F32|BF16|F16> is "
                                 "not <OP>_<T>(buffer, index, table, data, byte, 4|6|8, scales, "
                                 "block, hint, groups, blocks, err);", fix="pass names, an index "
                                 "sum and a literal code width 4, 6 or 8.")
    if len(re.findall(r"\bHFAFFINE8_\w*\(", text)) != len(HFAFFINE8_CALL.findall(text)):
        raise UnsupportedOpError(f"kernel {kernel.name}: an HFAFFINE8_<F32|BF16|F16> is not "
                                 "HFAFFINE8_<T>(buffer, index, data, byte, sx, z, scales, block, "
                                 "hint, groups, blocks, err);", fix="pass names and an index sum.")
    if len(re.findall(r"\bAFFINE8_\w*\(", text)) != len(AFFINE8_CALL.findall(text)):
        raise UnsupportedOpError(f"kernel {kernel.name}: an AFFINE8_<F32|BF16|F16> is not "
                                 "AFFINE8_<T>(buffer, index, data, index, sx, z, s, hint, "
                                 "groups);", fix="pass names and index sums of names and "
                                 "literals.")
    if len(re.findall(r"\b(?:TRANSPOSE8|ZORDER8)\(", text)) != len(BLOCK8_CALL.findall(text)):
        raise UnsupportedOpError(f"kernel {kernel.name}: a TRANSPOSE8/ZORDER8 is not "
                                 "<OP>(dst, index, stride, src, index, stride);", fix="pass "
                                 "buffer and stride names and index sums of names and literals.")
    if len(re.findall(r"\b(?:TRANSPOSE16|ZORDER16)\(", text)) != len(BLOCK16_CALL.findall(text)):
        raise UnsupportedOpError(f"kernel {kernel.name}: a TRANSPOSE16/ZORDER16 is not <OP>(dst, "
                                 "index, stride, src, index, stride, total);", fix="pass buffer, "
                                 "stride and total names and index sums of names and literals.")
    if len(re.findall(r"\bCOPY8\(", text)) != len(COPY8_CALL.findall(text)):
        raise UnsupportedOpError(f"kernel {kernel.name}: a COPY8 is not COPY8(dst, index, src, "
                                 "index);", fix="pass buffer names and index sums of names and "
                                 "literals.")
    if len(re.findall(r"\bCOPY16\(", text)) != len(COPY16_CALL.findall(text)):
        raise UnsupportedOpError(f"kernel {kernel.name}: a COPY16 is not COPY16(dst, index, src, "
                                 "index, index, total);", fix="pass buffer and total names and "
                                 "index sums of names and literals.")
    text = expand_block8(expand_scale8(text))
    for op, name in _ACCESS.findall(text):
        param = buffers.get(name)
        if param is None or (op, param.access) in (("LOAD", "w"), ("STORE", "r")) or (
                op.startswith("ATOMIC_") and (name in private or param.dtype != "u32"
                                              or param.access != "rw")):
            what = "no buffer" if param is None else "a private array" if name in private \
                else f"a {param.dtype} buffer of access {param.access!r}"
            raise UnsupportedOpError(f"kernel {kernel.name}: {op} of {name!r}, {what}",
                                     fix="declare it as LOAD (r, rw), STORE (w, rw) or ATOMIC_* "
                                     "(an rw u32 buffer, not a private array) needs.")


def expand_scale8(text: str) -> str:
    """``text`` with every SCALE8_<T>, MX/NF/HFSCALE8_<T>, AFFINE8_<T> and HFAFFINE8_<T>
    statement written out as loops of their STOREs."""
    def affine(m: re.Match[str]) -> str:
        to, dst, k, data, at, sx, z, s, _, groups = m.groups()
        stores = " ".join(
            f"STORE({dst}, hg_k + {e}u, {SCALE8_CONV[to]}({s} * F32(I32(U32(I32(LOAD({data}, "
            f"hg_at + {e}u) << {sx}) >> {sx}) - U32({z})))));" for e in range(8))
        return (f"for (u32 hg_j = 0u; hg_j < {groups}; hg_j++) {{ u32 hg_at = {at} + 8u * hg_j; "
                f"u32 hg_k = {k} + 8u * hg_j; {stores} }}")

    def scaled(m: re.Match[str]) -> str:
        to, dst, k, tab, data, at, width, s, _, groups = m.groups()
        bits, conv, lines = int(width), SCALE8_CONV[to], []
        for e in range(8):
            byte, sh = divmod(e * bits, 8)
            code = f"LOAD({data}, hg_at + {byte}u)" if byte else f"LOAD({data}, hg_at)"
            if sh + bits > 8:
                code = f"({code} | (LOAD({data}, hg_at + {byte + 1}u) << 8u))"
            code = f"({code} >> {sh}u) & {(1 << bits) - 1}u" if sh else f"{code} & {(1 << bits) - 1}u"
            lines += [f"f32 t{e} = LOAD({tab}, {code});",
                      f"STORE({dst}, hg_k{f' + {e}u' if e else ''}, {conv}((AS_U32(t{e}) & "
                      f"0x7fffffffu) > 0x7f800000u ? t{e} : {s} * t{e}));"]
        return (f"for (u32 hg_j = 0u; hg_j < {groups}; hg_j++) {{ u32 hg_at = {at} + {bits}u * "
                f"hg_j; u32 hg_k = {k} + 8u * hg_j; " + " ".join(lines) + " }")

    text = MXSCALE8_CALL.sub(expand_mx, HFAFFINE8_CALL.sub(expand_hfa, text))
    return AFFINE8_CALL.sub(affine, SCALE8_CALL.sub(scaled, text))


def _f16_scale(scales: str, p: str, err: str) -> str:
    """Subset text reading block hg_q's f16 scale into hg_s (reported when not finite or 0)."""
    return (f"u32 hg_w4 = ({p} + hg_q) * 2u; u32 hg_e = LOAD({scales}, hg_w4) | "
            f"(LOAD({scales}, hg_w4 + 1u) << 8u); if ((hg_e & 0x7c00u) == 0x7c00u || "
            f"(hg_e & 0x7fffu) == 0u) STORE({err}, 0u, 1u); f32 hg_s = F16_BITS_TO_F32(hg_e);")


def expand_hfa(m: re.Match[str]) -> str:
    """One HFAFFINE8_<T> statement as its loop of AFFINE8_<T> statements."""
    to, dst, k, data, at, sx, z, scales, p, total, g, nblk, err = m.groups()
    return (f"for (u32 hg_q = 0u; hg_q < {nblk}; hg_q++) {{ {_f16_scale(scales, p, err)} "
            f"u32 hg_qa = {at} + 8u * {g} * hg_q; u32 hg_qk = ({k}) + 8u * {g} * hg_q; "
            f"AFFINE8_{to}({dst}, hg_qk, {data}, hg_qa, {sx}, {z}, hg_s, {total}, {g}); }}")


def expand_mx(m: re.Match[str]) -> str:
    """One MX/NF/HFSCALE8_<T> statement as its loop of SCALE8_<T> statements."""
    kind, to, dst, k, tab, data, at, bits, scales, p, total, g, nblk, err = m.groups()
    if kind == "MX":
        scale = (f"u32 hg_e = LOAD({scales}, {p} + hg_q); if (hg_e == 0u || hg_e == 255u) "
                 f"STORE({err}, 0u, 1u); f32 hg_s = AS_F32(hg_e << 23u);")
    elif kind == "NF":
        word = " | ".join(f"(LOAD({scales}, hg_w4 + {b}u) << {8 * b}u)" for b in range(4))
        scale = (f"u32 hg_w4 = ({p} + hg_q) * 4u; u32 hg_e = {word}; if ((hg_e & 0x7f800000u) "
                 f"== 0x7f800000u || hg_e > 0x80000000u) STORE({err}, 0u, 1u); "
                 "f32 hg_s = AS_F32(hg_e);")
    else:
        scale = _f16_scale(scales, p, err)
    return (f"for (u32 hg_q = 0u; hg_q < {nblk}; hg_q++) {{ {scale} "
            f"u32 hg_qa = {at} + {bits}u * {g} * hg_q; u32 hg_qk = ({k}) + 8u * {g} * hg_q; "
            f"SCALE8_{to}({dst}, hg_qk, {tab}, {data}, hg_qa, {bits}, hg_s, {total}, {g}); }}")


def expand_block8(text: str) -> str:
    """``text`` with every TRANSPOSE8, ZORDER8, TRANSPOSE16, ZORDER16, COPY8 and COPY16
    statement written out as its loops."""
    text = COPY16_CALL.sub(lambda m: "for (u32 c8k = 0u; c8k < 8u; c8k++) {{ STORE({0}, ({1}) + "
                           "c8k, LOAD({2}, ({3}) + c8k)); STORE({0}, ({1}) + 8u + c8k, "
                           "LOAD({2}, ({4}) + c8k)); }}".format(*m.groups()), text)
    text = BLOCK16_CALL.sub(lambda m: (
        "for (u32 t8j = 0u; t8j < 16u; t8j++) {{ for (u32 t8k = 0u; t8k < 16u; t8k++) {{ "
        "STORE({0}, ({1}) + t8j * {2} + t8k, LOAD({3}, ({4}) + " + _BLOCK8_SRC[m[1]] + ")); }} }}"
        ).format(*m.groups()[1:]), text)
    text = COPY8_CALL.sub(lambda m: "for (u32 c8k = 0u; c8k < 8u; c8k++) {{ STORE({}, ({}) + "
                          "c8k, LOAD({}, ({}) + c8k)); }}".format(*m.groups()), text)
    return BLOCK8_CALL.sub(lambda m: (
        "for (u32 t8j = 0u; t8j < 8u; t8j++) {{ for (u32 t8k = 0u; t8k < 8u; t8k++) {{ "
        "STORE({0}, ({1}) + t8j * {2} + t8k, LOAD({3}, ({4}) + " + _BLOCK8_SRC[m[1]] + ")); }} }}"
        ).format(*m.groups()[1:]), text)


def atomics_used(kernel: KernelDef) -> list[tuple[str, str]]:
    """The distinct ``(ATOMIC_<OP>, buffer)`` pairs a body uses, in first-use order."""
    text = re.sub(r"//[^\n]*", "", kernel.body)
    pairs = [(op, name) for op, name in _ACCESS.findall(text) if op.startswith("ATOMIC_")]
    return list(dict.fromkeys(pairs))


class CStyleRenderer:
    """Renders a KernelDef; subclasses set the class attributes and override few hooks.

    Attributes (data, per dialect):
        dialect: the dialect name (``"cuda"``, ``"hip"``, ``"opencl"``, ``"glsl"``, ``"c"``).
        prelude: text emitted first.
        f16_prelude: text emitted when a buffer is f16 (headers for native half).
        soft_f16: convert f16 with the portable helpers instead of native instructions.
        kernel_prefix: what precedes the entry name (qualifiers and return type).
        function_prefix: what ``FUNC`` becomes on helper functions.
        buffer_fmt: a buffer parameter, from ``{const}``, ``{type}``, ``{name}``.
        scalar_fmt: a scalar parameter, from ``{type}`` and ``{name}``.
        index_expr: ``GLOBAL_ID(0..2)`` for each axis.
        type_map: body types and buffer element types to dialect types.
        op_map: intrinsic names to the text replacing ``NAME(``.
        intrinsic_helpers: helper source per intrinsic, emitted only when a body uses it.
        load_map / store_map: element access in the subset, from ``{b}``, ``{i}``, ``{v}``
            (``store_map`` entries with ``ST`` cast to the storage type).
        f64_helpers: text emitted before the CR_* functions (f64 enabled, ``hg_pow2_64``).
        f64_suffix: what an f64 literal's ``lf`` suffix becomes.
        soft_f64: f64 is emulated on u32 words (WGSL), so needs no hardware f64.
    """

    dialect: ClassVar[str] = ""
    extension: ClassVar[str] = ""
    prelude: ClassVar[str] = ""
    f16_prelude: ClassVar[str] = ""
    soft_f16: ClassVar[bool] = True
    kernel_prefix: ClassVar[str] = ""
    function_prefix: ClassVar[str] = ""
    buffer_fmt: ClassVar[str] = "{const}{type}* {name}"
    scalar_fmt: ClassVar[str] = "{type} {name}"
    index_expr: ClassVar[tuple[str, str, str]] = ("", "", "")
    type_map: ClassVar[dict[str, str]] = {}
    op_map: ClassVar[dict[str, str]] = {}
    # A shared array's declaration at the top of the entry, from {name} and {count} (u32s).
    shared_decl: ClassVar[str] = ""
    # A private (per-work-item) array's declaration at the top of the body, from {type}
    # (a body type), {name} and {count}; empty where render_accessors declares it.
    private_decl: ClassVar[str] = "{type} {name}[{count}];"
    # ATOMIC_* on element {i} of buffer {b} with value {v} (and {e}, CAS's expected value).
    atomic_map: ClassVar[dict[str, str]] = {}
    # Dialect-specific helper source per intrinsic, emitted when a body calls that intrinsic.
    intrinsic_helpers: ClassVar[dict[str, str]] = {}
    f64_helpers: ClassVar[str] = ""
    f64_suffix: ClassVar[str] = ""
    # f64 is emulated exactly (dialect/softf64.py): kernels compute in f64 on any device.
    soft_f64: ClassVar[bool] = False
    load_map: ClassVar[dict[str, str]] = {
        "u8": "U32({b}[{i}])", "u16": "U32({b}[{i}])", "u32": "{b}[{i}]",
        "i8": "I32({b}[{i}])", "i16": "I32({b}[{i}])", "i32": "{b}[{i}]", "f32": "{b}[{i}]",
        "f16": "hg_f16_to_f32({b}[{i}])", "bf16": "hg_bf16_to_f32({b}[{i}])",
    }
    store_map: ClassVar[dict[str, str]] = {
        **{t: "({b}[{i}] = (ST)({v}))" for t in ("u8", "u16", "u32", "i8", "i16", "i32", "f32")},
        "f16": "({b}[{i}] = (ST)hg_f32_to_f16({v}))",
        "bf16": "({b}[{i}] = (ST)hg_f32_to_bf16({v}))",
    }

    # -- the walk -----------------------------------------------------------------------
    def render(self, kernel: KernelDef) -> str:
        """Return the complete source for ``kernel`` in this dialect.

        Raises:
            UnsupportedOpError: the body is outside the portable subset.
        """
        lint_body(kernel)
        dtypes = {p.dtype for p in kernel.buffers}
        used = [(p.dtype, p.access) for p in kernel.buffers]
        parts = [self.prelude.strip("\n")]
        if "f16" in dtypes and self.f16_prelude:
            parts.append(self.f16_prelude.strip("\n"))
        wanted = helpers_for(used, self.soft_f16)
        text = re.sub(r"//[^\n]*", "", kernel.body)
        called = set(_CALL.findall(text)) | set(_CALL.findall(expand_scale8(text)))
        wanted += [h for name, h in HELPER_INTRINSICS.items()
                   if name in called and h not in wanted]
        parts += [self.translate(HELPERS[h]).strip("\n") for h in HELPERS if h in wanted]
        cr = crmath_helpers(called)
        if cr or called & set(F64_INTRINSICS):
            parts += [self.f64_helpers, *(self.translate(t).strip("\n") for t in cr)]
        # (one text may serve several intrinsics: emitted once)
        parts += [self.translate(text).strip("\n") for text in dict.fromkeys(
            text for name, text in self.intrinsic_helpers.items() if name in called)]
        parts += [self.render_accessors(kernel), self.render_entry(kernel)]
        return "\n\n".join(p for p in parts if p) + "\n"

    def translate(self, text: str) -> str:
        """Rewrite subset text (intrinsics, types, ids, FUNC) into this dialect."""
        text = _ACCESS.sub(lambda m: f"{m.group(1).lower()}_{m.group(2)}(", text)
        func = f"{self.function_prefix} " if self.function_prefix else ""
        text = re.sub(r"\bFUNC\s+", func, text)
        for name in sorted(self.op_map, key=len, reverse=True):
            replacement = self.op_map[name]
            text = re.sub(rf"\b{name}\(", lambda _m, r=replacement: r, text)  # type: ignore[misc]
        text = _TYPES.sub(lambda m: self.type_map[m.group(1)], text)
        text = _F64_LIT.sub(lambda m: m.group(1) + self.f64_suffix, text)
        return _GID.sub(lambda m: self.index_expr[int(m.group(1))], text)

    def body(self, kernel: KernelDef, indent: str = "    ") -> str:
        """The translated body, re-indented."""
        text = self.block8(kernel, self.scale8(kernel))
        text = textwrap.dedent(self.translate(text)).strip()
        decls: list[str] = []
        if kernel.shared and self.shared_decl:
            decls += [self.translate(self.shared_decl.format(name=n, count=c))
                      for n, c in kernel.shared]
        if self.private_decl:
            decls += [self.translate(self.private_decl.format(type=t, name=n, count=c))
                      for n, t, c in kernel.private]
        if decls:
            text = "\n".join([*decls, text])
        return textwrap.indent(text, indent)

    # -- hooks --------------------------------------------------------------------------
    def scale8(self, kernel: KernelDef) -> str:
        """The body with its ``SCALE8_<T>`` statements in this dialect's subset text (here:
        the eight STOREs; host C has vector code)."""
        return expand_scale8(kernel.body)

    def block8(self, kernel: KernelDef, text: str) -> str:
        """``text`` with its ``TRANSPOSE8``/``ZORDER8`` statements in this dialect's subset
        text (the loops; host C shuffles u32 words in vector registers)."""
        return expand_block8(text)

    def render_accessors(self, kernel: KernelDef) -> str:
        """Per-buffer ``load_<b>``/``store_<b>``; C dialects use macros over the params."""
        lines = []
        for param in kernel.buffers:
            storage = self.type_map[param.dtype]
            if param.access != "w":
                expr = self.load_map[param.dtype].format(b=param.name, i="(hg_i)")
                lines.append(f"#define load_{param.name}(hg_i) ({self.translate(expr)})")
            if param.access != "r":
                expr = self.store_map[param.dtype].format(b=param.name, i="(hg_i)", v="(hg_v)")
                expr = self.translate(expr).replace("(ST)", f"({storage})")
                lines.append(f"#define store_{param.name}(hg_i, hg_v) {expr}")
        for name in [n for n, _ in kernel.shared] + [n for n, _, _ in kernel.private]:
            lines.append(f"#define load_{name}(hg_i) ({name}[(hg_i)])")
            lines.append(f"#define store_{name}(hg_i, hg_v) ({name}[(hg_i)] = (hg_v))")
        for op, name in atomics_used(kernel):
            template = self.atomic_map.get(op)
            if template is None:
                raise UnsupportedOpError(f"{op} has no {self.dialect} rendering",
                                         fix="run the kernel on a backend with atomics.")
            expr = template.format(b=name, i="(hg_i)", e="(hg_e)", v="(hg_v)")
            args = "hg_i, hg_e, hg_v" if op == "ATOMIC_CAS" else "hg_i, hg_v"
            lines.append(f"#define {op.lower()}_{name}({args}) ({expr})")
        return "\n".join(lines)

    def render_params(self, kernel: KernelDef) -> str:
        """The entry's parameter list."""
        out = []
        for param in kernel.params:
            out.append(self.render_param(param))
        return ", ".join(out)

    def render_param(self, param: Param) -> str:
        """One parameter declaration."""
        if param.kind == "scalar":
            return self.scalar_fmt.format(type=self.type_map[param.dtype], name=param.name)
        const = "const " if param.access == "r" else ""
        return self.buffer_fmt.format(const=const, type=self.type_map[param.dtype],
                                      name=param.name)

    def render_entry(self, kernel: KernelDef) -> str:
        """The entry point: prefix, name, parameters and the body."""
        prefix = self.kernel_prefix.format(lx=kernel.local_size[0], ly=kernel.local_size[1],
                                           lz=kernel.local_size[2],
                                           threads=kernel.local_size[0] * kernel.local_size[1]
                                           * kernel.local_size[2])
        return f"{prefix} {kernel.name}({self.render_params(kernel)}) {{\n{self.body(kernel)}\n}}"
