"""Paged KV cache kernels: scatter rows into pages (reshape_and_cache), gather, copy pages, as
raw words (bit-exact for any dtype); and the quantized caches' append (quantize) and gather
(dequantize) for int8 and float8_e4m3. Each launch moves a layer's key and value together.

int8 is Hurray per-block affine (axis 0, block = page, symmetric) with one f32 scale per page
slot, i.e. per token row. Scales are powers of two, so quantizing is an exact multiply and the
result is bit-identical on every backend (no device division). float8_e4m3 has no scale:
values saturate to +-448, round to nearest even, NaN stays NaN.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from hurray_gpu.dialect.compose import Piece, compose_kernel
from hurray_gpu.dialect.kernel import FLOAT_TYPES, LONG_ITEMS, KernelDef, Param, buf, scalar
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.kernels.dequant import AFFINE_RESULT

__all__ = [
    "FLOAT_WORDS", "MAX_LANES", "MAX_WIDTH", "PAD_SLOT", "PAGED_KERNELS", "QUANT_KERNELS",
    "ROLES", "SIGNED_LIMIT", "SKIP_SLOT", "WORDS", "kernel_name", "paged_kernel", "quant_kernel",
    "ref_q8_rows", "word_for"]

# Slot value the gather kernel turns into a zero row (padding of gather_padded).
PAD_SLOT = 0xFFFFFFFF
# Slot value every kernel leaves alone: a token another launch (pool window) handles.
SKIP_SLOT = 0xFFFFFFFE
# Largest lanes and row width the kernels accept (their guards make larger values no-ops).
MAX_LANES = 4096
MAX_WIDTH = 0xFFFFEFFF
# Word indices below this take the unit-stride path with signed indices, which C compilers
# turn into memcpy (an unsigned index may wrap, so they keep a word-by-word loop).
SIGNED_LIMIT = 0x7FFFFFFF
# Word types by byte size, widest first: a row is moved in the widest word dividing it.
WORDS = ((4, "u32"), (2, "u16"), (1, "u8"))
# The two planes every scatter and gather launch moves: key then value.
ROLES = ("k", "v")


def word_for(row_bytes: int) -> tuple[int, str]:
    """The widest ``(word bytes, kernel dtype)`` that divides ``row_bytes``."""
    for size, dtype in WORDS:
        if row_bytes % size == 0:
            return size, dtype
    raise AssertionError("unreachable: 1 divides every size")


def kernel_name(op: str, word: str) -> str:
    """The registered name of paged kernel ``op`` (scatter, gather, copy_pages) for ``word``."""
    return f"kv_{op}_{word}"


def _items(s: Mapping[str, Any]) -> int:
    """Rows a launch covers: the grid is rows x lanes work items."""
    return int(s["n"]) // max(int(s["lanes"]), 1)


def _runs(a: Mapping[str, Any], width: int) -> bool:
    """Whether the kernel's guards let a launch do anything (see ``_LANE``)."""
    return 1 <= int(a["lanes"]) <= MAX_LANES and 0 < width <= MAX_WIDTH and _items(a) > 0


def _extents(data: str, dense: str, scales: bool = False) -> Any:
    """Extents of a kernel moving rows between ``k``/``v`` + ``data`` (``num_slots`` rows) and
    ``dense`` (one row per slot entry), per-slot f32 ``scales`` when asked, and ``part``: one
    partial amax per item (amax kernels, and int8 scatters with several lanes)."""
    def extents(s: Mapping[str, Any]) -> dict[str, int]:
        out = {"slots": _items(s)}
        parts = int(s["n"]) if data == "part" or scales and int(s["lanes"]) > 1 else 0
        for r in ROLES:
            out[r + data] = int(s["num_slots"]) * int(s["row"])
            out[r + dense] = _items(s) * int(s["row"])
            out[r + "part"] = parts
            if scales:
                out[r + "scales"] = int(s["num_slots"])
        return out
    return extents


_SCALARS = (scalar("n"), scalar("lanes"), scalar("row"), scalar("num_slots"))


def _bufs(name: str, dtype: str, access: str) -> tuple[Param, ...]:
    return tuple(buf(r + name, dtype, access) for r in ROLES)


def _ref_scatter(a: dict[str, Any], fmt: str = "") -> None:
    """Oracle of the scatters: raw words, or quantized to ``fmt`` (q8, f8)."""
    row, rows, limit = int(a["row"]), _items(a), int(a["num_slots"])
    if not _runs(a, row):
        return
    slots = a["slots"][:rows].astype(np.int64)
    keep = slots < limit
    for r in ROLES:
        src = a[f"{r}src"][: rows * row].reshape(rows, row)
        pool = a[f"{r}pool"][: limit * row].reshape(limit, row)
        if fmt == "q8":
            lanes = int(a["lanes"])
            amax = None if lanes == 1 else a[f"{r}part"][: rows * lanes].reshape(
                rows, lanes).max(axis=1)
            q, scale = ref_q8_rows(src.astype(np.float32), amax)
            pool[slots[keep]] = q[keep]
            a[f"{r}scales"][:limit][slots[keep]] = scale[keep]
        elif fmt == "f8":
            with np.errstate(invalid="ignore"):
                codes = np.clip(src[keep].astype(np.float32), -448, 448)
                pool[slots[keep]] = codes.astype(by_name("float8_e4m3").numpy).view(np.uint8)
        else:
            pool[slots[keep]] = src[keep]


def _ref_gather(a: dict[str, Any], fmt: str = "") -> None:
    """Oracle of the gathers: raw words, or dequantized from ``fmt`` (q8, f8)."""
    row, rows, limit = int(a["row"]), _items(a), int(a["num_slots"])
    if not _runs(a, row):
        return
    slots = a["slots"][:rows].astype(np.int64)
    keep = slots < limit
    for r in ROLES:
        dst = a[f"{r}dst"][: rows * row].reshape(rows, row)
        rows_read = a[f"{r}pool"][: limit * row].reshape(limit, row)[slots[keep]]
        if fmt == "q8":
            scales = a[f"{r}scales"][:limit][slots[keep]][:, None]
            rows_read = scales * rows_read.astype(np.float32)
        elif fmt == "f8":
            rows_read = rows_read.view(by_name("float8_e4m3").numpy).astype(np.float32)
        dst[keep] = rows_read.astype(dst.dtype)
        dst[~keep & (slots != SKIP_SLOT)] = 0


def _ref_copy_pages(a: dict[str, Any]) -> None:
    words, rows, limit = int(a["page_words"]), _items(a), int(a["num_pages"])
    if not _runs(a, words):
        return
    pairs = a["pairs"][: 2 * rows].astype(np.int64).reshape(-1, 2)
    keep = (pairs < limit).all(axis=1)
    for r in ROLES:
        # The host binds each pool twice (as pool and as from) and no destination is also a
        # source, so reading from ``from`` is the same as reading the pool.
        pool = a[f"{r}pool"][: limit * words].reshape(limit, words)
        pool[pairs[keep, 1]] = a[f"{r}from"][: limit * words].reshape(limit, words)[
            pairs[keep, 0]]


# Each work item copies words lane, lane + lanes, ... of one row: adjacent items touch adjacent
# words (coalesced on GPUs), and with lanes = 1 one item copies a whole row (host C loops).
# The guards keep every loop finite whatever the scalars say: no zero step, no u32 wrap.
_LANE = Piece("lane", """
            u32 i = GLOBAL_ID(0);
            if (i >= n || lanes == 0u || lanes > 4096u || $width > 0xFFFFEFFFu) return;
            u32 t = i / lanes;
            if (t >= n / lanes) return;
            u32 lane = i - t * lanes;
""")

# Copies row ``$src_row`` of each role's source to row ``$dst_row`` of its destination (rows
# of ``$row`` words, at most ``$rows`` of them): the whole-row fast path where one item owns the
# row (lanes == 1: signed word indices let a C compiler see a plain row copy, memcpy; the guard
# keeps every signed index below 2^31), else this lane's words of it.
_MOVE_ROW = Piece("row move", """
            if (lanes == 1u && $row <= 0x7fffffffu / $rows) {
                i32 len = I32($row);
                i32 pos = I32($src_row * $row);
                i32 at = I32($dst_row * $row);
                $whole
                return;
            }
            u32 from = $src_row * $row;
            u32 to = $dst_row * $row;
            for (u32 w = lane; w < $row; w += lanes) {
                $strided
            }
""")


def _roles(piece: Piece, **buffers: str) -> Piece:
    """``piece`` once per role (K then V), its buffer holes filled with that role's buffers."""
    return Piece("k and v", "$k\n$v").fill(
        **{r: piece.fill(**{hole: r + name for hole, name in buffers.items()}) for r in ROLES})


def _move_row(dst: str, src: str, *, src_row: str, dst_row: str, row: str = "row",
              rows: str = "UMAX(UMAX(num_slots, n), 1u)") -> Piece:
    whole = Piece("whole row",
                  "for (i32 w = 0; w < len; w++) STORE($d, at + w, LOAD($s, pos + w));")
    strided = Piece("lane words", "STORE($d, to + w, LOAD($s, from + w));")
    return _MOVE_ROW.fill(src_row=src_row, dst_row=dst_row, row=row, rows=rows,
                          whole=_roles(whole, d=dst, s=src), strided=_roles(strided, d=dst, s=src))


_SCATTER = Piece("kv scatter", """
    $lane
    u32 slot = LOAD(slots, t);
    // The host validates every slot; this guard keeps a bad one from writing anywhere.
    if (slot >= num_slots) return;
    $move
""")
_GATHER = Piece("kv gather", """
    $lane
    u32 slot = LOAD(slots, t);
    if (slot == 0xFFFFFFFEu) return;  // SKIP_SLOT: another window's token
    // Slots past the pool (the padding sentinel) read as zero rows.
    if (slot >= num_slots) {
        for (u32 w = lane; w < row; w += lanes) {
            $zero
        }
        return;
    }
    $move
""")
# The pools are bound twice, as destination and as read-only source: no page is both (the
# host checks), and the compiler may then copy a page as one block (memcpy).
_COPY_PAGES = Piece("kv copy pages", """
    $lane
    u32 src = LOAD(pairs, 2u * t);
    u32 dst = LOAD(pairs, 2u * t + 1u);
    if (src >= num_pages || dst >= num_pages) return;
    $move
""")


def _scatter(word: str) -> KernelDef:
    return compose_kernel(
        _SCATTER.fill(lane=_LANE.fill(width="row"),
                      move=_move_row("pool", "src", src_row="t", dst_row="slot")),
        name=kernel_name("scatter", word), params=(
            *_bufs("pool", word, "rw"), *_bufs("src", word, "r"), buf("slots", "u32"), *_SCALARS),
        grid=lambda s: (int(s["n"]),), extents=_extents("pool", "src"),
        reference=_ref_scatter, tags=("kv_cache",),
        doc="k/v pool row slots[t] = k/v src row t (rows of `row` words; n = rows * lanes).")


def _gather(word: str) -> KernelDef:
    zero = Piece("zero row word", "STORE($d, t * row + w, 0u);")
    return compose_kernel(
        _GATHER.fill(lane=_LANE.fill(width="row"), zero=_roles(zero, d="dst"),
                     move=_move_row("dst", "pool", src_row="slot", dst_row="t")),
        name=kernel_name("gather", word), params=(
            *_bufs("dst", word, "w"), *_bufs("pool", word, "r"), buf("slots", "u32"), *_SCALARS),
        grid=lambda s: (int(s["n"]),), extents=_extents("pool", "dst"),
        reference=_ref_gather, tags=("kv_cache", LONG_ITEMS),
        doc="k/v dst row t = k/v pool row slots[t]; zeros past the pool; SKIP_SLOT untouched.")


def _copy_pages(word: str) -> KernelDef:
    return compose_kernel(
        _COPY_PAGES.fill(lane=_LANE.fill(width="page_words"),
                         move=_move_row("pool", "from", src_row="src", dst_row="dst",
                                        row="page_words", rows="num_pages")),
        name=kernel_name("copy_pages", word),
        params=(*_bufs("pool", word, "rw"), *_bufs("from", word, "r"), buf("pairs", "u32"),
                scalar("n"), scalar("lanes"), scalar("page_words"), scalar("num_pages")),
        grid=lambda s: (int(s["n"]),),
        extents=lambda s: {**{r + p: int(s["num_pages"]) * int(s["page_words"])
                              for r in ROLES for p in ("pool", "from")}, "pairs": 2 * _items(s)},
        reference=_ref_copy_pages, tags=("kv_cache",),
        doc="k/v page pairs[2t+1] = page pairs[2t] (kfrom/vfrom: the same pools, read-only).")


PAGED_KERNELS = tuple(make(word) for make in (_scatter, _gather, _copy_pages)
                      for _, word in WORDS)
_BY_NAME = {k.name: k for k in PAGED_KERNELS}


def paged_kernel(op: str, word: str) -> KernelDef:
    """The KernelDef of ``op`` (scatter, gather, copy_pages) moving ``word`` (u32, u16, u8)."""
    return _BY_NAME[kernel_name(op, word)]


# -- quantized caches (int8, float8_e4m3) ------------------------------------------------------

# Cache compute dtypes (Hurray name -> kernel buffer type) that quantized caches accept.
FLOAT_WORDS = FLOAT_TYPES


def ref_q8_rows(x: np.ndarray, amax: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and power-of-two f32 scales of rows ``x`` (float32 [rows, row]).

    The scale of a row is 2^e with e the smallest exponent (>= -126) for which every finite
    value / 2^e rounds (half up) into [-127, 127]. Subnormal inputs and NaN quantize to 0,
    +-inf to +-127. ``amax``: each row's largest finite |x| as bits, when already known.
    """
    bits = x.view(np.uint32) & np.uint32(0x7FFFFFFF)
    finite = bits < 0x7F800000
    if amax is None:
        amax = np.where(finite, bits, 0).max(axis=1, initial=0)
    amax = amax.astype(np.int64)
    e = np.maximum(np.where(amax >= 0x00800000, (amax >> 23) - 133, -126), -126)
    big = amax.astype(np.uint32).view(np.float32) * np.exp2(-e).astype(np.float32)
    e = np.where((amax >= 0x00800000) & (big >= np.float32(127.5)), e + 1, e)
    inv = np.exp2(-e).astype(np.float32)[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        q = np.floor(x * inv + np.float32(0.5))
    q = np.clip(np.where(bits >= 0x00800000, q, 0), -127, 127)
    q = np.where(finite, q, np.where(bits == 0x7F800000, np.sign(x) * 127, 0))
    return q.astype(np.int8), np.exp2(e).astype(np.float32)


def _ref_amax(a: dict[str, Any], fmt: str = "q8") -> None:
    """Oracle of the q8 amax kernels: each lane's largest finite |x| (as bits) of its words."""
    row, lanes, rows = int(a["row"]), int(a["lanes"]), _items(a)
    if not _runs(a, row):
        return
    for r in ROLES:
        bits = a[f"{r}src"][: rows * row].reshape(rows, row).astype(np.float32).view(np.uint32)
        bits = np.where(bits & 0x7FFFFFFF < 0x7F800000, bits & 0x7FFFFFFF, 0)
        bits = np.pad(bits, ((0, 0), (0, -row % lanes)))
        a[f"{r}part"][: rows * lanes] = bits.reshape(rows, -1, lanes).max(axis=1).reshape(-1)


_QLANE = Piece("quant lane", """
    u32 i = GLOBAL_ID(0);
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    u32 t = i / lanes;
    if (t >= n / lanes) return;
    u32 lane = i - t * lanes;
    u32 slot = LOAD(slots, t);
""")

# The row's largest finite |x|, compared as bits (so NaN and device max() semantics never
# matter), over the words $w0, $w0 + $dw, ... of the row.
_AMAX = Piece("row amax", """
        for (u32 w = $w0; w < row; w += $dw) {
            u32 a = AS_U32(LOAD($src, from + w)) & 0x7fffffffu;
            if (a < 0x7f800000u) amax = UMAX(amax, a);
        }""")

# One item per row (lanes == 1, CPUs) finds the row's amax itself; with more lanes (a row
# past the device's loop budget) the amax kernel has left one partial amax per lane in $part.
# The amax picks the power-of-two scale; each lane then quantizes its words.
_Q8_SCATTER = Piece("q8 quantize", """
    {
        u32 amax = 0u;
        if (lanes == 1u) {
            $amax
        } else {
            for (u32 j = 0u; j < lanes; j++) amax = UMAX(amax, LOAD($part, t * lanes + j));
        }
        i32 e = -126;
        if (amax >= 0x00800000u) {
            e = I32(amax >> 23u) - 133;
            e = IMAX(e, -126);
            if (AS_F32(amax) * AS_F32(U32(127 - e) << 23u) >= 127.5f) e = e + 1;
        }
        f32 inv = AS_F32(U32(127 - e) << 23u);
        if (lane == 0u) STORE($scales, slot, AS_F32(U32(127 + e) << 23u));
        if (lanes == 1u) {
            for (u32 w = 0u; w < row; w++) {
                $code
            }
        } else {
            for (u32 w = lane; w < row; w += lanes) {
                $code
            }
        }
    }
""")
# One word: the plain loop of one lane per row stays a unit-stride loop compilers vectorise.
_Q8_CODE = Piece("q8 word", """
            f32 v = LOAD($src, from + w);
            u32 a = AS_U32(v) & 0x7fffffffu;
            i32 q = 0;
            if (a == 0x7f800000u) {
                q = (AS_U32(v) >> 31u) != 0u ? -127 : 127;
            } else if (a >= 0x00800000u && a < 0x7f800000u) {
                q = IMIN(IMAX(I32(FLOOR(v * inv + 0.5f)), -127), 127);
            }
            STORE($pool, to + w, q);
""")
_Q8_AMAX = Piece("q8 partial amax", """
    {
        u32 amax = 0u;
        $amax
        STORE($part, i, amax);
    }
""")

# Dequantization is the Hurray per-block affine formula shared with the dequant kernels
# (AFFINE_RESULT, with zero point 0): scale[slot] * q, bit-identical to every other path.
_Q8_GATHER = Piece("q8 dequantize", """
    {
        f32 s = LOAD($scales, slot);
        i32 z = 0;
        for (u32 w = lane; w < row; w += lanes) {
            i32 q = LOAD($pool, from + w);
            STORE($dst, to + w, $result);
        }
    }
""").fill(result=AFFINE_RESULT)

_F8_SCATTER = Piece("f8 quantize", """
    for (u32 w = lane; w < row; w += lanes) {
        u32 b = AS_U32(LOAD($src, from + w));
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
        STORE($pool, to + w, ((b >> 24u) & 0x80u) | code);
    }
""")

_F8_GATHER = Piece("f8 dequantize", """
    for (u32 w = lane; w < row; w += lanes) {
        u32 c = LOAD($pool, from + w);
        u32 sign = (c & 0x80u) << 24u;
        u32 e = (c >> 3u) & 15u;
        u32 m = c & 7u;
        f32 v = AS_F32(sign | ((e + 120u) << 23u) | (m << 20u));
        if (e == 15u && m == 7u) v = AS_F32(sign | 0x7fc00000u);
        if (e == 0u) v = AS_F32(sign | AS_U32(F32(m) * 0.001953125f));
        STORE($dst, to + w, v);
    }
""")

# Scatter: slots past the pool write nothing.
_SCATTER_HEAD = Piece("quantize head", """
    if (slot >= num_slots) return;
    u32 from = t * row;
    u32 to = slot * row;
""")
# Gather: slots past the pool (the padding sentinel) read as zero rows; SKIP_SLOT is left.
_GATHER_HEAD = Piece("dequantize head", """
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
""")
_QUANT = Piece("quantized kv", """
    $lane
    $head
    $k
    $v
""")


def _make(op: str, fmt: str, word: str) -> KernelDef:
    q8 = fmt == "q8"
    store = "i8" if q8 else "u8"
    lane, slots = _QLANE, (buf("slots", "u32", "r"),)[:1 if op != "amax" else 0]
    if op == "amax":
        params, lane = _bufs("part", "u32", "w") + _bufs("src", word, "r"), _LANE.fill(width="row")
        head, body, ref = Piece("amax head", "u32 from = t * row;"), _Q8_AMAX, _ref_amax
        extents = _extents("part", "src")
        doc = f"partial amax of k/v {word} rows, one per lane (int8 scales of wide rows)"
    elif op == "scatter":
        params = _bufs("pool", store, "w") + (_bufs("scales", "f32", "w") + _bufs(
            "part", "u32", "r") if q8 else ()) + _bufs("src", word, "r")
        head, body, ref = _SCATTER_HEAD, (_Q8_SCATTER if q8 else _F8_SCATTER), _ref_scatter
        extents = _extents("pool", "src", q8)
        doc = f"quantize k/v rows of {word} to {'int8 + scale' if q8 else 'float8_e4m3'} slots"
    else:
        params = _bufs("dst", word, "w") + _bufs("pool", store, "r") + \
            (_bufs("scales", "f32", "r") if q8 else ())
        head = _GATHER_HEAD
        body, ref = (_Q8_GATHER if q8 else _F8_GATHER), _ref_gather
        extents = _extents("pool", "dst", q8)
        doc = f"dequantize slots to k/v {word} rows (zeros for slots past the pool)"
    # The amax loop: each lane's words in the amax kernel, the whole row in a one-lane scatter.
    step = {"w0": "lane", "dw": "lanes"} if op == "amax" else {"w0": "0u", "dw": "1u"}
    subs = {"amax": lambda r: _AMAX.fill(src=r + "src", **step),
            "code": lambda r: _Q8_CODE.fill(src=r + "src", pool=r + "pool")}
    roles = {r: body.fill(**{h: subs[h](r) if h in subs else r + h for h in body.holes})
             for r in ROLES}
    return compose_kernel(_QUANT.fill(lane=lane, head=head, **roles),
                          name=f"kv_{fmt}_{op}_{word}", params=params + slots + _SCALARS,
                          grid=lambda s: (int(s["n"]),), extents=extents,
                          reference=lambda a: ref(a, fmt),
                          tags=("kv_cache",), doc=doc + ".")


QUANT_KERNELS = tuple(_make(op, fmt, word) for fmt in ("q8", "f8")
                      for op in ("scatter", "gather", "amax")[:3 if fmt == "q8" else 2]
                      for word in ("f16", "bf16", "f32"))
_QUANT_BY_NAME = {k.name: k for k in QUANT_KERNELS}


def quant_kernel(op: str, fmt: str, word: str) -> KernelDef:
    """The KernelDef of ``op`` (scatter, gather; amax for q8) for ``fmt`` (q8, f8) and ``word``
    (f16...)."""
    return _QUANT_BY_NAME[f"kv_{fmt}_{op}_{word}"]
