"""Dequantization kernels: the affine and table-driven schemes, written once as pieces, and the
variant composer that builds every dequant kernel from them (NumPy oracles included).

A :class:`Scheme` holds what is the scheme's own: its parameters, a prelude, the lookup of one
parameter block's values and the element formulas (each reads the storage code ``code`` and
stores element ``k`` through its ``$store`` hole). A :class:`Variant` holds the rest: the index
mapping (which elements a work item visits), where codes are read and how results are stored.
:func:`dequant_kernel` composes the two (checked by hurray_gpu/dialect/compose.py). The dense
kernels are the ``DENSE`` variant; the fused-layout, sparse and paged ones are in
:mod:`hurray_gpu.kernels.dequant_variants`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hurray_gpu.dialect.compose import Piece, compose_kernel
from hurray_gpu.dialect.kernel import FLOAT_TYPES, LONG_ITEMS, KernelDef, Param, buf, scalar
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.dtypes import by_name

__all__ = [
    "AFFINE", "AFFINE_RESULT", "DENSE", "DEQUANT_KERNELS", "DST_TYPES", "ERR_INVALID", "ERR_RANGE",
    "ITEM_START", "LUT", "MAGIC_SCALARS", "MODE_MX", "MODE_NF4", "MODE_NONE", "OUT_DTYPES",
    "SCALE_WIDTH", "SCHEMES", "TABLE_RUN", "Scheme", "Variant", "affine_kernel_name",
    "code_extent", "dequant_kernel", "divmagic", "item_grid", "lut_kernel_name",
    "ref_block_index", "ref_codes", "ref_u32_at", "RESTART"]

# Output element types of every dequant kernel family, by the Hurray name of the result.
OUT_DTYPES = FLOAT_TYPES
# The dst buffer element type per output: 16-bit results are stored as raw bits converted in
# the body by the portable helpers, so every backend rounds and encodes NaN identically (native
# half stores differ in NaN payloads).
DST_TYPES = {"f32": "f32", "f16": "u16", "bf16": "u16"}
_TO_BITS = {"f16": "F32_TO_F16_BITS", "bf16": "F32_TO_BF16_BITS"}
# Values a kernel writes to err[0]: an invalid parameter (bad scale, zero point or e8m0 byte)
# and a parameter index out of range (only possible with inconsistent launch scalars).
ERR_INVALID = 1
ERR_RANGE = 2

# The storage code of element ``$at`` (bits in {1,2,4,6,8,16,32}) from the byte buffer ``data``
# starting at byte ``doff``. Sub-byte elements occupy bits [at*bits, at*bits+bits) of the
# little-endian bit stream (Hurray spec, memory-layout: Sub-Byte Types), which also covers
# 6-bit groups; an element straddles two bytes only when its bits do.
CODE_LOAD = Piece("code load", """
    u32 code = 0u;
    if (bits == 8u) {
        code = LOAD(data, doff + $at);
    } else if (bits < 8u) {
        u32 bit = $at * bits;
        u32 at = doff + (bit >> 3u);
        u32 sh = bit & 7u;
        code = LOAD(data, at) >> sh;
        if (sh + bits > 8u) code = code | (LOAD(data, at + 1u) << (8u - sh));
        code = code & ((1u << bits) - 1u);
    } else if (bits == 16u) {
        u32 at = doff + $at * 2u;
        code = LOAD(data, at) | (LOAD(data, at + 1u) << 8u);
    } else {
        u32 at = doff + $at * 4u;
        code = LOAD(data, at) | (LOAD(data, at + 1u) << 8u) | (LOAD(data, at + 2u) << 16u)
               | (LOAD(data, at + 3u) << 24u);
    }
""", defines=("code",))

# The index mappings promise a work item's element range [first, last), its start i and the
# split of i into (o, a, r) with i = (o * ssize + a) * inner + r.
ITEMS = ("first", "last", "i", "o", "a", "r")
# Dense: each work item handles ``ept`` consecutive elements; the split of ``first`` is done
# once, without a hardware divide: q = i / d is (t + ((i - t) >> s1)) >> s2 with
# t = umulhi(i, m) (Granlund-Montgomery), the shifts packed as s1 | s2 << 8.
ITEM_START = Piece("dense items", """
    u32 first = GLOBAL_ID(0) * ept;
    if (first >= n) return;
    u32 last = UMIN(first + ept, n);
    u32 t1 = UMULHI(first, dm1);
    u32 q1 = (t1 + ((first - t1) >> (dsh1 & 255u))) >> (dsh1 >> 8u);
    u32 r = first - q1 * inner;
    u32 t2 = UMULHI(q1, dm2);
    u32 o = (t2 + ((q1 - t2) >> (dsh2 & 255u))) >> (dsh2 >> 8u);
    u32 a = q1 - o * ssize;
    u32 i = first;
""", defines=ITEMS)
MAGIC_SCALARS = ("dm1", "dsh1", "dm2", "dsh2")
# Variants whose work items start at an arbitrary element (a stored sparse value, a token row
# of a page) set ``first`` and ``last`` in their own ``$head`` and split ``first`` with plain
# divisions, once per item: without the division-magic scalars they stay within Vulkan's 32
# push-constant words.
RESTART = Piece("restarted items", """
    $head
    u32 q1 = first / inner;
    u32 r = first - q1 * inner;
    u32 o = q1 / ssize;
    u32 a = q1 - o * ssize;
    u32 i = first;
""", defines=ITEMS)


# The scheme's run loop: the parameter index p of element (o, a, r), and ``end``, the run of
# elements from i that share p (blocks along the axis when it is innermost, inner == 1, else
# one element); then (o, a, r) moves past the run (runs never cross a row along the axis).
_RUNS = Piece("dequant runs", """
    $items
    $prelude
    while (i < last) {
        u32 end = last;
        if (mode != 0u) {
            u32 p = (o * inner + r) * omul + (a >> kshift);
            if (p >= nparam) {
                STORE(err, 0u, 2u);
                return;
            }
            u32 run = 1u;
            if (inner == 1u) run = UMIN((1u << kshift) - (a & ((1u << kshift) - 1u)), ssize - a);
            end = UMIN(i + run, last);
            $lookup
            if (inner == 1u) {
                a = a + run;
            } else {
                r = r + 1u;
                if (r == inner) {
                    r = 0u;
                    a = a + 1u;
                }
            }
            if (a == ssize) {
                a = 0u;
                o = o + 1u;
            }
        }
        $loops
    }
""")

# One element: its code and output index, then the scheme's formula.
_ELEMENT = Piece("element", """
    {
        u32 code = $code;
        u32 k = $k;
        $formula
    }
""")
# The general loop: any width, codes read at ``$at`` after the variant's ``$pre`` (the layout
# address of element i in the fused variants), the scheme's per-code ``$check`` first.
_GENERAL = Piece("general loop", """
    for (; i < end; i++) {
        $pre
        $code
        {
            u32 k = i;
            $check
            $formula
        }
    }
""")

# Runs at least this long go eight codes at a time through SCALE8 (see ``_SCALED``); shorter
# runs (GPU work items hold a few elements) take the per-element loops. Needs
# ``first <= i < end <= last``, which every index mapping maintains.
TABLE_RUN = 32


_PAIRS = Piece("pair loop", """
    if ((i & 1u) != 0u && i < end) {
        $odd
        i = i + 1u;
    }
    for (; i + 1u < end; i += 2u) {
        u32 pair = LOAD(data, doff + (i >> 1u));
        $lo
        $hi
    }
    if (i < end) {
        $last
        i = i + 1u;
    }
""")
# The hoisted loops carry no per-element width dispatch (compilers do not unswitch loops at
# -O2) and run only when the element's ``fast`` condition holds (under which the scheme's check
# has nothing to find). 8-bit codes are indexed by the loop counter alone when ``doff`` is 0: a
# u32 ``doff + i`` may wrap as far as a compiler knows, which keeps it from vectorising the loop.
_HOISTED = Piece("hoisted loops", """
    if (end - i >= $run && $ifs) {
        $scaled
    }
    else if ($if4) {
        $pairs
    }
    else if ($if8) {
        $run8
        for (; i < end; i++) {
            $byte
        }
    }
    else if ($if6) {
        $sixes
    }
    else {
        $general
    }
""")
# 6-bit codes four at a time from three bytes (a group starts byte-aligned at every fourth
# element), single elements up to the first group and after the last; a single element reads
# its second byte only when its bits reach into it.
_SIXES = Piece("six-bit loop", """
    for (; i < end && (i & 3u) != 0u; i++) {
        $one
    }
    u32 ngroup = (end - i) >> 2u;
    u32 gat = doff + (i >> 2u) * 3u;
    for (u32 j = 0u; j < ngroup; j++) {
        u32 b = gat + 3u * j;
        u32 w = LOAD(data, b) | (LOAD(data, b + 1u) << 8u) | (LOAD(data, b + 2u) << 16u);
        u32 gk = i + 4u * j;
        $g0
        $g1
        $g2
        $g3
    }
    i = i + 4u * ngroup;
    for (; i < end; i++) {
        $one
    }
""")
# "Lookup, then scale": when an element's value is s * T(code) (see ``Element.scaled``), eight
# codes at a time go through SCALE8 (after ``$build`` of T where it is not a buffer), single
# elements up to the first multiple of 8 (where the codes start byte-aligned at every width)
# and after the last.
_SCALED = Piece("scaled loop", """
    $build
    u32 stop = end;
    end = UMIN(stop, (i + 7u) & 0xfffffff8u);
    $head
    end = stop;
    u32 ngrp = (end - i) >> 3u;
    u32 gat = doff + (i >> 3u) * bits;
    if (bits == 4u) {
        $s4
    } else if (bits == 6u) {
        $s6
    } else if (bits == 8u) {
        $s8
    }
    i = i + 8u * ngrp;
    $tail
    $more
""")
# After a run, the whole parameter blocks that follow it along the innermost axis (inner == 1)
# in the same row and item: one lookup and one SCALE8 each, without the run loop's
# bookkeeping, which for MX's 32-element blocks cost more than the block's own decoding. A
# loop per code width keeps the width a constant; a block from the first p the lookup would
# reject on range is left to the run loop, which reports it.
_MORE = Piece("whole blocks", """
    if (inner == 1u && mode != 0u && (i & 7u) == 0u && (1u << kshift) >= $run
        && (a & ((1u << kshift) - 1u)) == 0u && a < ssize) {
        u32 p = o * omul + (a >> kshift);
        u32 nblk = UMIN(ssize - a, last - i) >> kshift;
        nblk = UMIN(nblk, nparam - UMIN(p, nparam));
        u32 gb = 1u << (kshift - 3u);
        u32 pend = p + nblk;
        $widths
        a = a + (nblk << kshift);
        if (a == ssize) {
            a = 0u;
            o = o + 1u;
        }
    }
""")
_MORE_WIDTH = Piece("whole blocks of one width", """
    if (bits == $bits) {
        $mx
        for (; p < pend; p++) {
            $lookup
            $build
            u32 bat = doff + (i >> 3u) * bits;
            $scale8
            i = i + 8u * gb;
        }
    } else {
        $rest
    }
""")
_MX_BLOCKS = Piece("whole blocks, one statement", """
    if ($cond) {
        u32 nq = pend - p;
        u32 bat = doff + (i >> 3u) * bits;
        $build
        $call
        i = i + 8u * gb * nq;
        p = pend;
    }
""")
_SIX_CODE = ("((LOAD(data, doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? "
             "LOAD(data, doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u")


@dataclass(frozen=True)
class Element:
    """One element formula of a scheme."""

    formula: Piece  # reads ``code`` (and the run's values); writes only through ``$store``
    value: str  # the expression ``$store`` writes
    fast: str = ""  # a condition under which ``check`` finds nothing: the hoisted loops
    check: str = ""  # (which skip it) run only then; a per-code test of the general loop
    # A condition (on 4- or 8-bit codes) under which ``value`` is ``s * T(code)`` (a NaN T
    # kept): T is ``table``'s buffer (2^bits entries), or when that is "" ``unscaled`` (``value``
    # without the factor s) of the 2^bits codes (16 or 256), built into ``tf`` when ``rebuild``
    # holds (the prelude declares ``built``, set to 1 by a build).
    scaled: str = "0u != 0u"
    table: str = ""
    unscaled: str = ""
    rebuild: str = ""
    byte_kinds: tuple[str, ...] = ()  # outputs whose 8-bit codes keep the byte loop instead
    # When an 8-bit code's value is ``s * F32(I32(U32(q) - U32(z)))`` (q the code, sign-extended
    # by the shift sx): the names "sx, z, s". Whole groups of eight such codes then go through
    # one AFFINE8 statement (dense variants), in the byte loop and in place of SCALE8.
    affine8: str = ""
    # (condition, kind) under which parameter block p's scale s is read as the kind's
    # MX/NF/HFSCALE8 statement reads it ("MX": the e8m0 byte LOAD(scales, p); "NF": the f32
    # word at byte 4p; "HF": the f16 at byte 2p) and reported as it reports it: whole blocks
    # then go through one such statement (dense variants) in place of a lookup and SCALE8 each;
    # for an affine8 element a third item names its "sx, z" for HFAFFINE8.
    blocks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scheme:
    """A dequantization scheme's own parts (see the module docstring)."""

    family: str  # the kernel name stem
    inputs: tuple[Param, ...]  # the buffers after ``dst``: data, parameters, err
    scalars: tuple[Param, ...]  # the dense kernel's, in signature order
    prelude: Piece  # declarations before the run loop
    lookup: Piece  # the values of parameter block ``p`` (when ``mode != 0``)
    loops: Piece  # the choice of element loop: holes ``$e0``, ``$e1``, one per element
    elements: tuple[Element, ...]
    reference: Callable[[dict[str, Any], str], None]  # the dense oracle: (args, out kind)
    extents: Callable[[Any], dict[str, int]]  # the dense kernel's
    tags: tuple[str, ...]  # the dense kernel's
    doc: str  # what the dense kernel does, up to its output type


@dataclass(frozen=True)
class Variant:
    """Where a dequant kernel's elements come from and where its results go."""

    items: Piece  # the index mapping; promises ``ITEMS``
    store: Piece  # the output store: holes ``$k`` (element index) and ``$v`` (value bits)
    code_at: str = ""  # "": codes at i, hoisted 4-/8-bit loops; else where the general loop
    pre: Piece | str = ""  # reads them, after this per-element piece
    drops: tuple[str, ...] = ()  # dense scalars the index mapping does not use
    # where ``store`` writes element i when it is a plain ``STORE(dst, ...)``: a run's groups
    # of eight elements then go through one SCALE8 statement
    dst_k: str = ""


_DST_STORE = Piece("store", "STORE(dst, $k, $v);")
DENSE = Variant(ITEM_START, _DST_STORE, dst_k="i")



def _formula(element: Element, store: Piece, kind: str) -> Piece:
    """The element formula writing through ``store``, its value converted to ``kind``."""
    value = Piece(f"{kind} bits", f"{_TO_BITS[kind]}($v)").fill(v=element.value) \
        if kind in _TO_BITS else element.value
    return element.formula.fill(store=store.fill(k="k", v=value))


def _general(element: Element, variant: Variant, kind: str) -> Piece:
    code = CODE_LOAD.fill(at=variant.code_at or "i")
    return _GENERAL.fill(pre=variant.pre, code=code, check=element.check,
                         formula=_formula(element, variant.store, kind))


def _hoisted(element: Element, variant: Variant, kind: str, lookup: Piece) -> Piece:
    """The loop over elements ``[i, end)``, with the hot storage widths hoisted: long runs of
    s * T(code) eight codes at a time (``_SCALED``), 4-bit codes one byte per two elements (the
    low nibble is the even element), 8-bit codes one byte each, 6-bit codes four per three
    bytes, any other width through ``CODE_LOAD``."""
    if element.formula.holes != ("store",) or element.formula.calls() & {"STORE", "BARRIER"} \
            or any(c.startswith("ATOMIC_") for c in element.formula.calls()):
        # T's build evaluates the formula for all 16 codes, present or not: side effects other
        # than the element's own store would fire for codes the data never holds.
        raise UnsupportedOpError(f"{element.formula.name} writes other than through its $store",
                                 fix="compute the value in the formula and store it only "
                                 "through $store.")

    def one(code: str, k: str, store: Piece = variant.store, what: Element = element) -> Piece:
        return _ELEMENT.fill(code=code, k=k, formula=_formula(what, store, kind if what is
                                                               element else "f32"))

    odd, last = "LOAD(data, doff + (i >> 1u)) >> 4u", "LOAD(data, doff + (i >> 1u)) & 15u"
    pairs = _PAIRS.fill(odd=one(odd, "i"), lo=one("pair & 15u", "i"),
                        hi=one("pair >> 4u", "i + 1u"), last=one(last, "i"))
    fast = f" && {element.fast}" if element.fast else ""
    sixes = _SIXES.fill(one=one(_SIX_CODE, "i"), **{
        f"g{e}": one(f"(w >> {6 * e}u) & 63u" if e else "w & 63u", f"gk + {e}u" if e else "gk")
        for e in range(4)})
    general = _general(element, variant, kind)
    # 8-bit codes of an ``affine8`` element take AFFINE8, wherever SCALE8 would go and in the
    # byte loop; no table is built for them.
    run8 = (lambda at, g: f"AFFINE8_{kind.upper()}(dst, {variant.dst_k}, data, {at}, "
            f"{element.affine8}, n, {g});") if element.affine8 and variant.dst_k else None
    build = "" if element.table else Piece("table build", """
        if ($rebuild) {
            for (u32 c = 0u; c < (1u << bits); c++) {
                $one
            }
            built = 1u;
        }
    """).fill(rebuild=f"({element.rebuild}) && bits != 8u" if run8 else element.rebuild,
              one=one("c", "c", Piece("tf", "STORE(tf, $k, $v);"),
                      Element(element.formula, element.unscaled)))
    # The code widths SCALE8 (or run8) takes (T is built for 4- or 8-bit codes where it is no
    # buffer).
    s8_bits = [b for b in (4, 6, 8) if (element.table or b != 6)
               and (b != 8 or kind not in element.byte_kinds or run8)]

    def s8(at: str, groups: str) -> dict[str, str]:
        return {f"s{b}": "" if b not in s8_bits else run8(at, groups) if b == 8 and run8 else
                f"SCALE8_{kind.upper()}(dst, {variant.dst_k}, {element.table or 'tf'}, "
                f"data, {at}, {b}, s, n, {groups});" for b in (4, 6, 8)}

    def mx(b: int) -> Piece | str:
        if not element.blocks or b not in s8_bits:
            return ""
        cond, scale = element.blocks[:2]
        if run8 and b == 8:  # AFFINE8's blocks (Q8_0): f16 scales only
            return "" if scale != "HF" else _MX_BLOCKS.fill(
                cond=cond, build="", call=f"HFAFFINE8_{kind.upper()}(dst, {variant.dst_k}, data, "
                f"bat, {element.blocks[2]}, scales, p, n, gb, nq, err);")
        return _MX_BLOCKS.fill(cond=cond, build=build, call=f"{scale}SCALE8_{kind.upper()}("
                               f"dst, {variant.dst_k}, {element.table or 'tf'}, data, bat, {b}, "
                               "scales, p, n, gb, nq, err);")

    widths: Piece | str = ""
    for b, call in reversed(list(zip((4, 6, 8), s8("bat", "gb").values(), strict=True))):
        if call:
            widths = _MORE_WIDTH.fill(bits=f"{b}u", lookup=lookup, build=build, scale8=call,
                                      rest=widths, mx=mx(b))
    more = _MORE.fill(run=f"{TABLE_RUN}u", widths=widths)
    scaled = _SCALED.fill(build=build, head=general, tail=general, more=more,
                          **s8("gat", "ngrp")) if variant.dst_k else ""
    ifs = element.scaled if 8 in s8_bits else f"({element.scaled}) && bits != 8u"
    groups8 = Piece("8-bit groups", """
        u32 ng8 = (end - i) >> 3u;
        $run
        i = i + 8u * ng8;
    """).fill(run=run8("i", "ng8")) if run8 else ""
    return _HOISTED.fill(run=f"{TABLE_RUN}u", ifs=ifs if scaled else "0u != 0u",
                         scaled=scaled, if4=f"bits == 4u{fast}",
                         if8=f"bits == 8u && doff == 0u{fast}", if6=f"bits == 6u{fast}",
                         pairs=pairs, run8=groups8, byte=one("LOAD(data, i)", "i"), sixes=sixes,
                         general=general)


def dequant_kernel(scheme: Scheme, kind: str, variant: Variant, *, suffix: str = "",
                   inputs: tuple[Param, ...] | None = None,
                   extra: tuple[Param, ...] = (), **fields: Any) -> KernelDef:
    """``scheme``'s kernel writing output ``kind`` (f32/f16/bf16) the way ``variant`` says,
    named ``dequant_<family>_<kind><suffix>``, its parameters ``dst``, ``inputs`` (default:
    the scheme's), the scheme's scalars less the variant's drops, then ``extra``; ``fields``
    are the other KernelDef fields.

    Raises:
        UnsupportedOpError: the composition does not check (hurray_gpu/dialect/compose.py).
    """
    loops = scheme.loops.fill(**{f"e{n}": _general(e, variant, kind) if variant.code_at
                                 else _hoisted(e, variant, kind, scheme.lookup)
                                 for n, e in enumerate(scheme.elements)})
    body = _RUNS.fill(items=variant.items, prelude=scheme.prelude, lookup=scheme.lookup,
                      loops=loops)
    params = (buf("dst", DST_TYPES[kind], "w"), *(scheme.inputs if inputs is None else inputs),
              *(p for p in scheme.scalars if p.name not in variant.drops), *extra)
    built = [e for e in scheme.elements if not e.table]
    if not variant.code_at and built:
        # 256 entries only where 8-bit codes build it: a GPU reserves private memory for it.
        wide = any("bits == 8u" in e.scaled and kind not in e.byte_kinds for e in built)
        fields.setdefault("private", (("tf", "f32", 256 if wide else 16),))
    return compose_kernel(body, name=f"dequant_{scheme.family}_{kind}{suffix}", params=params,
                          **fields)


# -- helpers shared by the schemes and their oracles ------------------------------------------

def divmagic(d: int) -> tuple[int, int]:
    """``(m, s1 | s2 << 8)`` so that ``ITEM_START`` divides any u32 by ``d`` exactly.

    Args:
        d: the divisor, 1 <= d < 2**32.

    Returns:
        The multiplier and the packed shift pair.

    Raises:
        ValueError: ``d`` is out of range.
    """
    if not 1 <= d < 1 << 32:
        raise ValueError(f"divisor {d} is outside [1, 2**32)")
    ell = (d - 1).bit_length()
    m = ((1 << 32) * ((1 << ell) - d)) // d + 1
    return m & 0xFFFFFFFF, min(ell, 1) | (max(ell - 1, 0) << 8)


def item_grid(scalars: Any) -> tuple[int]:
    """Work items: one per ``ept`` elements."""
    ept = max(1, int(scalars["ept"]))
    return (-(-int(scalars["n"]) // ept),)


def code_extent(scalars: Any) -> int:
    """Bytes of ``data`` the kernel may read: ``doff + ceil(n * bits / 8)``."""
    return int(scalars["doff"]) + (int(scalars["n"]) * int(scalars["bits"]) + 7) // 8


def ref_u32_at(raw: np.ndarray, start: int, count: int, width: int) -> np.ndarray:
    """``count`` little-endian unsigned ``width``-byte values at byte ``start`` (any alignment)."""
    chunk = np.asarray(raw[start:start + count * width], np.uint8).reshape(count, width)
    out = np.zeros(count, np.uint64)
    for k in range(width):
        out |= chunk[:, k].astype(np.uint64) << np.uint64(8 * k)
    return out.astype(np.uint32)


def ref_codes(data: np.ndarray, doff: int, bits: int, n: int) -> np.ndarray:
    """The storage codes of elements 0..n-1 as uint32 (the oracle of ``CODE_LOAD``)."""
    if bits >= 8:
        return ref_u32_at(data, doff, n, bits // 8)
    raw = np.asarray(data[doff:doff + (n * bits + 7) // 8 + 1], np.uint8).astype(np.uint32)
    raw = np.concatenate([raw, np.zeros(2, np.uint32)])
    bit = np.arange(n, dtype=np.int64) * bits
    pair = raw[bit >> 3] | (raw[(bit >> 3) + 1] << np.uint32(8))
    return (pair >> (bit & 7).astype(np.uint32)) & np.uint32((1 << bits) - 1)


def ref_block_index(n: int, inner: int, ssize: int, omul: int, kshift: int) -> np.ndarray:
    """Parameter index of each element, computed with plain integer division."""
    i = np.arange(n, dtype=np.int64)
    q1, r = np.divmod(i, inner)
    o, a = np.divmod(q1, ssize)
    return (o * inner + r) * omul + (a >> kshift)


_NP_OUT = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


def _ref_store(dst: np.ndarray, values: np.ndarray, kind: str) -> None:
    """Round f32 ``values`` to the output ``kind`` (nearest even) and write their bits."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = values.astype(np.float32).astype(by_name(_NP_OUT[kind]).numpy)
    dst[: values.size] = out.view(dst.dtype)


# -- affine (schemes 0x01-0x03) ------------------------------------------------------------------
# ``x = f32(scale) * f32(i32(q - zero_point))``, the subtraction wrapping in 32-bit two's
# complement, then rounded to the output type to nearest even (Hurray spec, quantization:
# per-tensor, per-channel and per-block affine).

# Scale element types by scale_type_tag: f16, bf16, f32 (bytes per entry).
SCALE_WIDTH = {1: 2, 2: 2, 3: 4}
# The affine formula itself (spec: int32 q - z, then one float32 multiply); shared by the KV
# cache int8 gather so there is one source of it.
AFFINE_UNSCALED = "F32(I32(U32(q) - U32(z)))"
AFFINE_RESULT = f"s * {AFFINE_UNSCALED}"
_AFFINE_SCALARS = (
    "n", "ept", "doff", "bits", "sgn", "mode", "stype", "zmode", "zoff", "nparam", "inner", "dm1",
    "dsh1", "ssize", "dm2", "dsh2", "omul", "kshift", "zlo", "zhi", "sval", "zval")
_SCALAR_TYPES = {"zlo": "i32", "zhi": "i32", "zval": "i32", "sval": "f32"}

# mode 0: per-tensor (sval, zval); mode 1: scale (and zero point when zmode) per parameter
# index p. Invalid parameters (non-finite or zero scale, zero point outside [zlo, zhi]) set
# err[0]; the host then raises instead of returning the output.
_AFFINE_PRELUDE = Piece("affine prelude", """
    u32 sx = (sgn != 0u && bits < 32u) ? 32u - bits : 0u;
    f32 s = sval;
    i32 z = zval;
    u32 built = 0u;
""")
_AFFINE_LOOKUP = Piece("affine lookup", """
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
""")
_AFFINE_ELEMENT = Element(Piece("affine element", """
            // Branch-free sign extension: random signs would mispredict a branch.
            i32 q = I32(code << sx) >> sx;
            $store
"""), AFFINE_RESULT, unscaled=AFFINE_UNSCALED,
    # T depends on the zero point only: built once per item without per-block ones. 8-bit
    # codes (Q8_0) only then: 256 entries per block would cost more than the run they scale.
    scaled="bits == 4u || (bits == 8u && zmode == 0u)", rebuild="zmode != 0u || built == 0u",
    # 8-bit codes need no table: AFFINE8 (host C: vector code, streamed past the cache) takes
    # their whole groups of eight, in the byte loop and where SCALE8 would go. SCALE8's eight
    # table loads per group had lost to the byte loop the compiler vectorises (f32 at 1 Mi
    # elements, one thread: 0.35 of copy bandwidth against 0.53; bf16 streamed 0.42 against
    # 0.52), and f16, whose conversion compilers leave scalar, reached only 0.56 of copy
    # through them on two threads.
    byte_kinds=("bf16", "f32", "f16"),
    affine8="sx, z, s", blocks=("stype == 1u && zmode == 0u", "HF", "sx, z"))


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


def reference_affine(a: dict[str, Any], kind: str = "f32") -> None:
    """NumPy oracle of the affine kernels: writes ``dst[:n]`` and ``err[0]`` in place."""
    n, bits = int(a["n"]), int(a["bits"])
    if n == 0:
        return
    codes = ref_codes(a["data"], int(a["doff"]), bits, n).astype(np.int64)
    q = np.where(codes >= 1 << (bits - 1), codes - (1 << bits), codes) if a["sgn"] else codes
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
    _ref_store(a["dst"], x, kind)
    if bad.any():
        a["err"][0] = ERR_INVALID


def _affine_extents(s: Any) -> dict[str, int]:
    width = SCALE_WIDTH.get(int(s["stype"]), 4)
    nparam = int(s["nparam"]) if s["mode"] else 0
    return {"dst": int(s["n"]), "data": code_extent(s), "scales": nparam * width,
            "zps": int(s["zoff"]) + nparam * 4 if s["zmode"] and s["mode"] else 0, "err": 1}


AFFINE = Scheme(
    "affine", (buf("data", "u8"), buf("scales", "u8"), buf("zps", "u8"), buf("err", "u32", "w")),
    tuple(scalar(name, _SCALAR_TYPES.get(name, "u32")) for name in _AFFINE_SCALARS),
    _AFFINE_PRELUDE, _AFFINE_LOOKUP, Piece("affine loops", "$e0"), (_AFFINE_ELEMENT,),
    reference_affine, _affine_extents, ("dequant", "host_isa", LONG_ITEMS),
    "Affine dequantization (per-tensor/channel/block) of any storage type to")

# -- table-driven: NF4, MXFP, and unpacking of sub-byte and small-float tensors -----------------
# Each storage code maps to its exact f32 value through a lookup-table buffer (the subset has
# no arrays); NF4 then multiplies by an f32 absmax, MXFP by ``2^(e-127)`` from an e8m0 byte.

_LUT_SCALARS = ("n", "ept", "doff", "bits", "chk", "mode", "nparam", "inner", "dm1", "dsh1",
                "ssize", "dm2", "dsh2", "omul", "kshift")
MODE_NONE, MODE_NF4, MODE_MX = 0, 1, 2

_LUT_LOOKUP = Piece("lut lookup", """
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
""")
# NF4 (mode 1) reads the NF4 table, whose values are all finite: no NaN to pass through.
_NF4_ELEMENT = Element(Piece("nf4 element", """
            f32 v = s * LOAD(lut, code);
            $store
"""), "v", scaled="mode == 1u", table="lut", blocks=("mode == 1u", "NF"))
# NaN codes (float8 NaN, e8m0 0xFF in a table) pass through with their table bits, so every
# backend writes the same NaN whatever its multiply does with NaN payloads. ``mode`` is
# loop-invariant: compilers unswitch the loop on it at -O3, so plain unpacking (mode 0) runs
# without the test or the multiply.
_LUT_ELEMENT = Element(Piece("lut element", """
            f32 v = LOAD(lut, code);
            if (mode != 0u && (AS_U32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
            $store
"""), "v", "chk == 0u", "if (chk != 0u && (code == 0u || code == 255u)) STORE(err, 0u, 1u);",
    # T = lut (mode 0: s is 1.0, exact for every table value, none of which is subnormal).
    # float8 unpacking too: past HG_STREAM_BYTES SCALE8 streams the output, where the
    # compiler-vectorised byte loop read every output line before writing it (e4m3 -> f32
    # 0.70 of copy bandwidth, 1.29 through SCALE8, one thread).
    scaled="chk == 0u && (bits == 4u || bits == 6u || bits == 8u)", table="lut",
    blocks=("mode == 2u", "MX"))


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
    _ref_store(a["dst"], v, kind)
    if bad.any():
        a["err"][0] = ERR_INVALID


def _lut_extents(s: Any) -> dict[str, int]:
    mode = int(s["mode"])
    nparam = int(s["nparam"]) if mode else 0
    return {"dst": int(s["n"]), "data": code_extent(s), "lut": 1 << min(int(s["bits"]), 8),
            "scales": nparam * (4 if mode == MODE_NF4 else 1), "err": 1}


LUT = Scheme(
    "lut", (buf("data", "u8"), buf("lut", "f32"), buf("scales", "u8"), buf("err", "u32", "w")),
    tuple(scalar(name) for name in _LUT_SCALARS), Piece("lut prelude", "    f32 s = 1.0f;"),
    _LUT_LOOKUP, Piece("lut loops", """
        if (mode == 1u) {
            $e0
        } else {
            $e1
        }
"""), (_NF4_ELEMENT, _LUT_ELEMENT), reference_lut, _lut_extents,
    # host_isa: the host's vector units run SCALE8.
    ("dequant", "host_isa", LONG_ITEMS), "Table-driven NF4 / MXFP dequantization or small-type unpacking to")
SCHEMES = (AFFINE, LUT)


def _dense(scheme: Scheme, out: str) -> KernelDef:
    kind = OUT_DTYPES[out]
    return dequant_kernel(scheme, kind, DENSE, grid=item_grid, extents=scheme.extents,
                          reference=lambda a: scheme.reference(a, kind), local_size=(64, 1, 1),
                          tags=scheme.tags, doc=f"{scheme.doc} {out}.")


def reference_unpack_int(a: dict[str, Any]) -> None:
    """NumPy oracle of ``unpack_int_u8``: sign- or zero-extended codes as bytes."""
    n, bits = int(a["n"]), int(a["bits"])
    if n == 0:
        return
    codes = ref_codes(a["data"], int(a["doff"]), bits, n).astype(np.int64)
    if a["sgn"]:
        codes = np.where(codes >= 1 << (bits - 1), codes - (1 << bits), codes)
    a["dst"][:n] = (codes & 0xFF).astype(np.uint8)


UNPACK_INT_KERNEL = KernelDef(
    name="unpack_int_u8",
    params=(buf("dst", "u8", "w"), buf("data", "u8"), scalar("n"), scalar("doff"),
            scalar("bits"), scalar("sgn")),
    body="""
    u32 i = GLOBAL_ID(0);
    if (i >= n) return;
    u32 bit = i * bits;
    u32 code = (LOAD(data, doff + (bit >> 3u)) >> (bit & 7u)) & ((1u << bits) - 1u);
    if (sgn != 0u && code >= (1u << (bits - 1u))) code = code | ~((1u << bits) - 1u);
    STORE(dst, i, code & 255u);
""", grid=lambda s: (int(s["n"]),),
    extents=lambda s: {"dst": int(s["n"]), "data": code_extent(s)},
    reference=reference_unpack_int, tags=("dequant",),
    doc="Widen 1/2/4-bit codes to one byte each (sign-extended for signed types).")

DEQUANT_KERNELS = (*(_dense(s, out) for s in SCHEMES for out in OUT_DTYPES), UNPACK_INT_KERNEL)
