"""Shared pieces of the dequantization kernels: body snippets, division magic, NumPy helpers.

Snippets are portable-subset text composed into every dequant kernel (written once).
"""

from __future__ import annotations

import re
from typing import Any

import ml_dtypes
import numpy as np

from hurray_gpu.kernels.dialect.kernel import FLOAT_TYPES

__all__ = [
    "CODE_LOAD", "DST_TYPES", "MAGIC_SCALARS", "restart_items", "ERR_INVALID", "ERR_RANGE", "ITEM_ADVANCE", "ITEM_START",
    "OUT_DTYPES", "PARAM_RUN", "STORE_OUT", "code_extent", "divmagic", "item_grid",
    "ref_block_index", "ref_codes", "ref_store", "ref_u32_at", "specialised_loop",
    "fill_store", "table_private",
]

# Output element types of every dequant kernel family, by the Hurray name of the result.
OUT_DTYPES = FLOAT_TYPES
# The dst buffer element type per output: 16-bit results are stored as raw bits converted in
# the body by the portable helpers, so every backend rounds and encodes NaN identically (native
# half stores differ in NaN payloads).
DST_TYPES = {"f32": "f32", "f16": "u16", "bf16": "u16"}
# The element index is ``k`` (see ``specialised_loop``).
STORE_OUT = {"f32": "STORE(dst, k, {v});", "f16": "STORE(dst, k, F32_TO_F16_BITS({v}));",
             "bf16": "STORE(dst, k, F32_TO_BF16_BITS({v}));"}
# Values a kernel writes to err[0]: an invalid parameter (bad scale, zero point or e8m0 byte)
# and a parameter index out of range (only possible with inconsistent launch scalars).
ERR_INVALID = 1
ERR_RANGE = 2

# ``code``: the storage code of element i (bits in {1,2,4,6,8,16,32}) from the byte buffer
# ``data`` starting at byte ``doff``. Sub-byte elements occupy bits [i*bits, i*bits+bits) of
# the little-endian bit stream (hurray-facts §1.3), which also covers 6-bit groups; an
# element straddles two bytes only when its bits do.
CODE_LOAD = """
    u32 code = 0u;
    if (bits == 8u) {
        code = LOAD(data, doff + i);
    } else if (bits < 8u) {
        u32 bit = i * bits;
        u32 at = doff + (bit >> 3u);
        u32 sh = bit & 7u;
        code = LOAD(data, at) >> sh;
        if (sh + bits > 8u) code = code | (LOAD(data, at + 1u) << (8u - sh));
        code = code & ((1u << bits) - 1u);
    } else if (bits == 16u) {
        u32 at = doff + i * 2u;
        code = LOAD(data, at) | (LOAD(data, at + 1u) << 8u);
    } else {
        u32 at = doff + i * 4u;
        code = LOAD(data, at) | (LOAD(data, at + 1u) << 8u) | (LOAD(data, at + 2u) << 16u)
               | (LOAD(data, at + 3u) << 24u);
    }
"""

# Each work item handles ``ept`` consecutive elements [first, last): the split of ``first``
# into (o, a, r) with i = (o * ssize + a) * inner + r is done once, without a hardware divide:
# q = i / d is (t + ((i - t) >> s1)) >> s2 with t = umulhi(i, m) (Granlund-Montgomery), the
# shifts packed as s1 | s2 << 8.
ITEM_START = """
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
"""


# Kernel variants whose work items start at an arbitrary element (a stored sparse value, a
# token row of a page) replace ITEM_START's opening with their own ``head`` (which sets
# ``first`` and ``last``) and split ``first`` with plain divisions, once per item: the
# division-magic scalars are dropped, which keeps them within Vulkan's 32 push-constant words.
_DIVIDE_SPLIT = """\
    u32 q1 = first / inner;
    u32 r = first - q1 * inner;
    u32 o = q1 / ssize;
    u32 a = q1 - o * ssize;
    u32 i = first;
"""
MAGIC_SCALARS = ("dm1", "dsh1", "dm2", "dsh2")


def restart_items(base: Any, body: str, head: str, dropped: tuple[str, ...] = MAGIC_SCALARS
                  ) -> tuple[str, tuple[Any, ...]]:
    """``body`` (derived from ``base``'s) with ITEM_START replaced by ``head`` and a plain
    division split, and ``base``'s scalars without ``dropped``.

    Raises:
        ValueError: the body does not open with ITEM_START, or still uses a dropped scalar
            (checked at import).
    """
    if ITEM_START not in body:
        raise ValueError(f"{base.name} does not open with ITEM_START")
    body = body.replace(ITEM_START, head + _DIVIDE_SPLIT, 1)
    used = [name for name in dropped if re.search(rf"\b{name}\b", body)]
    if used:
        raise ValueError(f"{base.name} still uses {used}")
    return body, tuple(p for p in base.scalars if p.name not in dropped)


def _element(body: str, code: str, index: str) -> str:
    """One element of ``body`` (which reads ``code`` and writes element ``k``), scoped."""
    return f"{{\nu32 code = {code};\nu32 k = {index};\n{body}\n}}"


# 4-bit runs at least this long go through ``tab``, the 16 results of the run's parameters,
# built by the element body itself (so the formula stays written once): one evaluation per
# code instead of one per element, then a plain lookup per element. Shorter runs (GPU work
# items hold a few elements) take the per-element loop. Needs ``first <= i < end <= last``
# (ITEM_START's item bounds), which every body that keeps the hoisted loops maintains.
TABLE_RUN = 32


def table_private(kind: str) -> tuple[tuple[str, str, int], ...]:
    """The ``private`` arrays of a kernel whose loops come from ``specialised_loop``."""
    return (("tab", "f32" if DST_TYPES[kind] == "f32" else "u32", 16),)


def _nibble(e: int) -> str:
    """Code ``e`` (0..7) of the little-endian word ``w``."""
    return "w & 15u" if e == 0 else "w >> 28u" if e == 7 else f"(w >> {4 * e}u) & 15u"


def _table_loop(body: str, pairs: str) -> str:
    """The 4-bit loop over ``[i, end)``: ``tab`` when the run is long, else ``pairs``."""
    if body.count("{store}") != 1 or "STORE(" in body or "ATOMIC_" in body:
        # The table evaluates the body for all 16 codes, present or not: side effects other
        # than the element's own store would fire for codes the data never holds.
        raise ValueError("a dequant element body must write only through one {store}")
    lookup = "STORE(dst, {k}, LOAD(tab, {code}));"
    return "\n".join([
        f"if (end - i >= {TABLE_RUN}u) {{",
        # 16 codes: a run lies in the item's [first, last), so last - first >= TABLE_RUN. A
        # bound compilers cannot fold keeps the loop whole for the vectoriser instead of 16
        # unrolled scalar copies (bf16 builds ~1.3x).
        "u32 ncode = UMIN(16u, last - first);",
        "for (u32 c = 0u; c < ncode; c++) {",
        _element(body.replace("{store}", "{store_tab}"), "c", "c"), "}",
        "if ((i & 1u) != 0u) {",
        lookup.format(k="i", code="LOAD(data, doff + (i >> 1u)) >> 4u"),
        "i = i + 1u;", "}",
        # Eight codes per step (four bytes): fewer loop steps in the hot loop (f32 ~1.2x).
        "u32 nquad = (end - i) >> 3u;",
        "u32 qat = doff + (i >> 1u);",
        "for (u32 j = 0u; j < nquad; j++) {",
        "u32 b = qat + 4u * j;",
        "u32 w = LOAD(data, b) | (LOAD(data, b + 1u) << 8u) | (LOAD(data, b + 2u) << 16u)",
        "        | (LOAD(data, b + 3u) << 24u);",
        "u32 k = i + 8u * j;",
        *[lookup.format(k=f"k + {e}u" if e else "k", code=_nibble(e)) for e in range(8)], "}",
        "i = i + 8u * nquad;",
        "u32 npair = (end - i) >> 1u;",
        "u32 at = doff + (i >> 1u);",
        "for (u32 j = 0u; j < npair; j++) {",
        "u32 pair = LOAD(data, at + j);",
        "u32 k = i + 2u * j;",
        lookup.format(k="k", code="pair & 15u"),
        lookup.format(k="k + 1u", code="pair >> 4u"), "}",
        "i = i + 2u * npair;",
        "if (i < end) {",
        lookup.format(k="i", code="LOAD(data, doff + (i >> 1u)) & 15u"),
        "i = i + 1u;", "}",
        "} else {", pairs, "}"])


def fill_store(body: str, kind: str, value: str) -> str:
    """``body`` with its ``{store}`` placeholders writing ``value`` as output ``kind``."""
    store = STORE_OUT[kind].format(v=value)
    tab = store.replace("STORE(dst, k, ", "STORE(tab, k, ")
    return body.replace("{store_tab}", tab).replace("{store}", store)


def specialised_loop(body: str, fast: str = "", check: str = "") -> str:
    """The loop over elements ``[i, end)``, with the hot storage widths hoisted.

    ``body`` reads the storage code ``code`` and writes element ``k`` with a ``{store}``
    placeholder (filled by ``fill_store``). 4-bit codes are read
    one byte per two elements (the low nibble is the even element, hurray-facts §1.3), 8-bit
    codes one byte each, indexed by the loop counter alone when ``doff`` is 0 (a u32
    ``doff + i`` may wrap as far as a compiler knows, which keeps it from vectorising the
    loop); any other case goes through ``CODE_LOAD``. Long 4-bit runs use the ``tab`` table
    (see ``TABLE_RUN``; the kernel declares it with ``table_private``). The hoisted loops carry
    no per-element width dispatch (compilers do not unswitch loops at -O2), and run only when
    ``fast`` holds (a kernel-specific condition under which ``check``, a per-code test run
    before ``body`` in the general loop, has nothing to find).
    """
    also = f" && {fast}" if fast else ""
    pairs = "\n".join([
        "if ((i & 1u) != 0u && i < end) {",
        _element(body, "LOAD(data, doff + (i >> 1u)) >> 4u", "i"),
        "i = i + 1u;", "}",
        "for (; i + 1u < end; i += 2u) {",
        "u32 pair = LOAD(data, doff + (i >> 1u));",
        _element(body, "pair & 15u", "i"),
        _element(body, "pair >> 4u", "i + 1u"),
        "}",
        "if (i < end) {",
        _element(body, "LOAD(data, doff + (i >> 1u)) & 15u", "i"),
        "i = i + 1u;", "}"])
    nibbles = "\n".join([f"if (bits == 4u{also}) {{", _table_loop(body, pairs), "}"])
    byte = "\n".join([
        f"else if (bits == 8u && doff == 0u{also}) {{",
        "for (; i < end; i++) {",
        _element(body, "LOAD(data, i)", "i"), "}", "}"])
    general = "\n".join([
        "else {", "for (; i < end; i++) {", CODE_LOAD,
        _element(f"{check}\n{body}", "code", "i").replace("u32 code = code;\n", ""), "}", "}"])
    return "\n".join([nibbles, byte, general])


# The parameter index p of element (o, a, r), and ``end``: the run of elements from i that
# share p. Runs are blocks along the axis when it is innermost (inner == 1), else 1 element.
PARAM_RUN = """
            u32 p = (o * inner + r) * omul + (a >> kshift);
            if (p >= nparam) {
                STORE(err, 0u, 2u);
                return;
            }
            u32 run = 1u;
            if (inner == 1u) run = UMIN((1u << kshift) - (a & ((1u << kshift) - 1u)), ssize - a);
            end = UMIN(i + run, last);
"""
# Move (o, a, r) past a run (runs never cross a row along the axis).
ITEM_ADVANCE = """
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
"""


def divmagic(d: int) -> tuple[int, int]:
    """``(m, s1 | s2 << 8)`` so that ``INDEX_SPLIT`` divides any u32 by ``d`` exactly.

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


_NP_OUT = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def ref_store(dst: np.ndarray, values: np.ndarray, kind: str) -> None:
    """Round f32 ``values`` to the output ``kind`` (nearest even) and write their bits."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = values.astype(np.float32).astype(_NP_OUT[kind])
    dst[: values.size] = out.view(dst.dtype)
