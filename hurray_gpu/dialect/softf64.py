"""IEEE binary64 on u32 words, written once in the portable subset: f64 where a dialect has none.

WGSL has no f64 type, so the WGSL writer (wgsl.py) renders every f64 value as ``vec2<u32>``
(low word, high word) and every f64 operation of a body or helper as a call of these functions:
``+ - * /`` (``hg_d_add`` ...), unary minus, ``SQRT64``, ``POW2_64(k)``, ``F64`` of f32, i32
and u32, ``F32`` and ``I32`` of an f64, and the comparisons. Each rounds once to nearest, ties
to even, with IEEE subnormals, infinities and signed zeros, so a function evaluated through
them gives the bits hardware f64 gives (a NaN result is a NaN, its payload unspecified;
``I32`` of a value out of i32's range saturates, where C leaves it undefined).

The functions reach the words of their arguments through ``F64_HI``/``F64_LO`` and build their
results with ``AS_F64(hi, lo)``; host C renders the same text on ``double`` (memcpy of the
bits), which is how the tests prove every operation against NumPy on millions of inputs.
Division and square root are bit-serial long divisions of 55 steps, unrolled here: lavapipe
counts the loop passes of an invocation in one budget (docs/reliability.md, "Loop budgets"),
which these functions then never touch.
"""

from __future__ import annotations

__all__ = ["HARDWARE_F64", "SOFT_F64", "SOFT_F64_FUNCS"]

_SIGN = "0x80000000u"


def _normalize(h: str, lo: str, e: str, ind: str = "    ") -> str:
    """Shift the nonzero 64-bit ``h:lo`` left until bit 63 is set, lowering ``e`` as much."""
    out = [f"{ind}if ({h} == 0u) {{ {h} = {lo}; {lo} = 0u; {e} = {e} - 32; }}"]
    for bits, below in (
        (16, "0x10000u"),
        (8, "0x1000000u"),
        (4, "0x10000000u"),
        (2, "0x40000000u"),
        (1, _SIGN),
    ):
        out.append(
            f"{ind}if ({h} < {below}) {{ {h} = ({h} << {bits}u) | ({lo} >> {32 - bits}u); "
            f"{lo} = {lo} << {bits}u; {e} = {e} - {bits}; }}"
        )
    return "\n".join(out) + "\n"


def _shift_right_jam(h: str, lo: str, n: str, ind: str = "    ") -> str:
    """``h:lo >> n`` (u32 ``n``), any bit shifted out ORed into bit 0 (the sticky bit)."""
    lines = [
        f"if ({n} >= 64u) {{ {lo} = ({h} | {lo}) != 0u ? 1u : 0u; {h} = 0u; }} else {{",
        f"    if ({n} >= 32u) {{ {lo} = {h} | ({lo} != 0u ? 1u : 0u); {h} = 0u; "
        f"{n} = {n} - 32u; }}",
        f"    if ({n} != 0u) {{",
        f"        u32 st = ({lo} << (32u - {n})) != 0u ? 1u : 0u;",
        f"        {lo} = ({lo} >> {n}) | ({h} << (32u - {n})) | st;",
        f"        {h} = {h} >> {n};",
        "    }",
        "}",
    ]
    return "".join(f"{ind}{line}\n" for line in lines)


def _unpack(x: str) -> str:
    """Declare ``<x>sg`` (sign bit), ``<x>e`` (biased exponent field), ``<x>h:<x>l`` (the
    significand at bit 63, normalized) and ``<x>u`` (the unbiased exponent of bit 63), for a
    finite nonzero ``x`` (the caller has answered NaN, infinities and zeros)."""
    return (
        f"    u32 {x}w = F64_HI({x});\n    u32 {x}l0 = F64_LO({x});\n"
        f"    u32 {x}sg = {x}w & {_SIGN};\n    u32 {x}e = ({x}w >> 20u) & 0x7ffu;\n"
        f"    u32 {x}h = (({x}w & 0xfffffu) << 11u) | ({x}l0 >> 21u);\n"
        f"    u32 {x}l = {x}l0 << 11u;\n    i32 {x}u = I32({x}e) - 1023;\n"
        f"    if ({x}e != 0u) {{ {x}h = {x}h | {_SIGN}; }} else {{\n        {x}u = -1022;\n"
        + _normalize(f"{x}h", f"{x}l", f"{x}u", " " * 8)
        + "    }\n"
    )


def _classify(x: str, zero: bool = True) -> str:
    """``<x>nan``, ``<x>inf`` and (if ``zero``) ``<x>zero`` of the f64 ``x``; ``<x>a`` is its
    high word without the sign."""
    return (
        f"    u32 {x}a = F64_HI({x}) & 0x7fffffffu;\n"
        f"    bool {x}nan = {x}a > 0x7ff00000u || ({x}a == 0x7ff00000u && F64_LO({x}) != 0u);\n"
        f"    bool {x}inf = {x}a == 0x7ff00000u && F64_LO({x}) == 0u;\n"
        + (f"    bool {x}zero = ({x}a | F64_LO({x})) == 0u;\n" if zero else "")
    )


NAN = "AS_F64(0x7ff80000u, 0u)"

# value = (h:l) / 2^63 * 2^e, rounded once (nearest, ties to even) to an f64 of sign s.
PACK = f"""
FUNC f64 hg_d_pack(u32 s, i32 e, u32 h, u32 l) {{
    if ((h | l) == 0u) return AS_F64(s, 0u);
{_normalize("h", "l", "e")}    i32 be = e + 1023;
    if (be >= 2047) return AS_F64(s | 0x7ff00000u, 0u);
    if (be <= 0) {{
        u32 n = U32(1 - be);
{_shift_right_jam("h", "l", "n", " " * 8)}        be = 0;
    }}
    u32 mh = h >> 11u;
    u32 ml = (l >> 11u) | (h << 21u);
    u32 r = l & 0x7ffu;
    if (r > 0x400u || (r == 0x400u && (ml & 1u) != 0u)) {{
        ml = ml + 1u;
        if (ml == 0u) mh = mh + 1u;
    }}
    // The hidden bit (bit 20 of mh) adds one to the field be - 1, and a rounding carry
    // out of the significand one more: a normal result, or the next binade, or inf.
    u32 ef = be > 0 ? U32(be - 1) : 0u;
    return AS_F64(s | ((ef << 20u) + mh), ml);
}}
"""

NEG = """
FUNC f64 hg_d_neg(f64 a) {
    return AS_F64(F64_HI(a) ^ 0x80000000u, F64_LO(a));
}
"""

# Both significands with the hidden bit at bit 62 (10 guard bits under the 53, one carry bit
# over them); the smaller aligned with jamming, then added or subtracted (SoftFloat's method:
# a cancellation that needs more than a 1-bit normalization had exponents within 1, so lost
# no bits).
ADD = f"""
FUNC f64 hg_d_add(f64 a, f64 b) {{
{_classify("a", False)}{_classify("b", False)}    if (anan || bnan || (ainf && binf && (F64_HI(a) ^ F64_HI(b)) >= {_SIGN})) return {NAN};
    if (ainf) return a;
    if (binf) return b;
    u32 asg = F64_HI(a) & {_SIGN};
    u32 bsg = F64_HI(b) & {_SIGN};
    u32 ae = aa >> 20u;
    u32 be = ba >> 20u;
    u32 ah = ((aa & 0xfffffu) << 10u) | (F64_LO(a) >> 22u);
    u32 al = F64_LO(a) << 10u;
    u32 bh = ((ba & 0xfffffu) << 10u) | (F64_LO(b) >> 22u);
    u32 bl = F64_LO(b) << 10u;
    if (ae != 0u) {{ ah = ah | 0x40000000u; }} else {{ ae = 1u; }}
    if (be != 0u) {{ bh = bh | 0x40000000u; }} else {{ be = 1u; }}
    if (be > ae || (be == ae && (bh > ah || (bh == ah && bl > al)))) {{
        u32 t = ae; ae = be; be = t;
        t = ah; ah = bh; bh = t;
        t = al; al = bl; bl = t;
        t = asg; asg = bsg; bsg = t;
    }}
    u32 d = ae - be;
{_shift_right_jam("bh", "bl", "d")}    u32 rl = 0u;
    u32 rh = 0u;
    if (asg == bsg) {{
        rl = al + bl;
        rh = ah + bh + (rl < al ? 1u : 0u);
    }} else {{
        rl = al - bl;
        rh = ah - bh - (al < bl ? 1u : 0u);
    }}
    if ((rh | rl) == 0u) return AS_F64(asg == bsg ? asg : 0u, 0u);
    return hg_d_pack(asg, I32(ae) - 1022, rh, rl);
}}
"""

SUB = """
FUNC f64 hg_d_sub(f64 a, f64 b) {
    return hg_d_add(a, hg_d_neg(b));
}
"""

# The 128-bit product of the significands (at bit 63 each) from 32-bit partial products; its
# top 64 bits, the rest jammed, rounded once.
MUL = f"""
FUNC f64 hg_d_mul(f64 a, f64 b) {{
{_classify("a")}{_classify("b")}    u32 s = (F64_HI(a) ^ F64_HI(b)) & {_SIGN};
    if (anan || bnan || (ainf && bzero) || (azero && binf)) return {NAN};
    if (ainf || binf) return AS_F64(s | 0x7ff00000u, 0u);
    if (azero || bzero) return AS_F64(s, 0u);
{_unpack("a")}{_unpack("b")}    u32 w0 = al * bl;
    u32 c = UMULHI(al, bl);
    u32 t = al * bh;
    u32 w1 = c + t;
    u32 k = w1 < t ? 1u : 0u;
    t = ah * bl;
    w1 = w1 + t;
    k = k + (w1 < t ? 1u : 0u);
    u32 w2 = UMULHI(al, bh);
    t = UMULHI(ah, bl);
    w2 = w2 + t;
    u32 k2 = w2 < t ? 1u : 0u;
    t = ah * bh;
    w2 = w2 + t;
    k2 = k2 + (w2 < t ? 1u : 0u);
    w2 = w2 + k;
    k2 = k2 + (w2 < k ? 1u : 0u);
    u32 w3 = UMULHI(ah, bh) + k2;
    return hg_d_pack(s, au + bu + 1, w3, w2 | ((w1 | w0) != 0u ? 1u : 0u));
}}
"""


def _divide_steps() -> str:
    """55 quotient bits of r / m (r in [m, 2m), both under 2^54), bit 54 first."""
    out = []
    for i in range(55):
        bit = 54 - i
        q = f"qh = qh | {1 << (bit - 32):#x}u" if bit >= 32 else f"ql = ql | {1 << bit:#x}u"
        out.append(
            f"    if (rh > mh || (rh == mh && rl >= ml)) {{\n"
            f"        rh = rh - mh - (rl < ml ? 1u : 0u);\n        rl = rl - ml;\n"
            f"        {q};\n    }}\n"
        )
        if i < 54:
            out.append("    rh = (rh << 1u) | (rl >> 31u);\n    rl = rl << 1u;\n")
    return "".join(out)


DIV = f"""
FUNC f64 hg_d_div(f64 a, f64 b) {{
{_classify("a")}{_classify("b")}    u32 s = (F64_HI(a) ^ F64_HI(b)) & {_SIGN};
    if (anan || bnan || (ainf && binf) || (azero && bzero)) return {NAN};
    if (ainf || bzero) return AS_F64(s | 0x7ff00000u, 0u);
    if (azero || binf) return AS_F64(s, 0u);
{_unpack("a")}{_unpack("b")}    u32 rh = ah >> 11u;
    u32 rl = (al >> 11u) | (ah << 21u);
    u32 mh = bh >> 11u;
    u32 ml = (bl >> 11u) | (bh << 21u);
    i32 e = au - bu;
    if (rh < mh || (rh == mh && rl < ml)) {{
        rh = (rh << 1u) | (rl >> 31u);
        rl = rl << 1u;
        e = e - 1;
    }}
    u32 qh = 0u;
    u32 ql = 0u;
{_divide_steps()}    u32 st = (rh | rl) != 0u ? 1u : 0u;
    return hg_d_pack(s, e, (qh << 9u) | (ql >> 23u), (ql << 9u) | st);
}}
"""


def _sqrt_steps() -> str:
    """55 root bits of m * 2^56 (m: mh:ml under 2^54), two radicand bits per step."""
    out = []
    for i in range(55):
        k = 26 - i  # the radicand pair from m's bits 2k+1, 2k (zeros once k < 0)
        nxt = (
            "0u"
            if k < 0
            else f"(mh >> {2 * k - 32}u) & 3u"
            if 2 * k >= 32
            else f"(ml >> {2 * k}u) & 3u"
        )
        out.append(
            f"    rh = (rh << 2u) | (rl >> 30u);\n    rl = (rl << 2u) | ({nxt});\n"
            "    th = (qh << 2u) | (ql >> 30u);\n    tl = (ql << 2u) | 1u;\n"
            "    qh = (qh << 1u) | (ql >> 31u);\n    ql = ql << 1u;\n"
            "    if (rh > th || (rh == th && rl >= tl)) {\n"
            "        rh = rh - th - (rl < tl ? 1u : 0u);\n        rl = rl - tl;\n"
            "        ql = ql | 1u;\n    }\n"
        )
    return "".join(out)


SQRT = f"""
FUNC f64 hg_d_sqrt(f64 a) {{
{_classify("a")}    if (anan || (F64_HI(a) >= {_SIGN} && !azero)) return {NAN};
    if (azero || ainf) return a;
{_unpack("a")}    u32 mh = ah >> 11u;
    u32 ml = (al >> 11u) | (ah << 21u);
    i32 e = au;
    if ((e & 1) != 0) {{
        mh = (mh << 1u) | (ml >> 31u);
        ml = ml << 1u;
        e = e - 1;
    }}
    u32 rh = 0u;
    u32 rl = 0u;
    u32 th = 0u;
    u32 tl = 0u;
    u32 qh = 0u;
    u32 ql = 0u;
{_sqrt_steps()}    u32 st = (rh | rl) != 0u ? 1u : 0u;
    return hg_d_pack(0u, e / 2, (qh << 9u) | (ql >> 23u), (ql << 9u) | st);
}}
"""

CONVERT = f"""
FUNC f64 hg_d_from_f32(f32 x) {{
    u32 u = AS_U32(x);
    u32 s = u & {_SIGN};
    u32 e = (u >> 23u) & 0xffu;
    u32 m = u & 0x7fffffu;
    if (e == 0xffu) return AS_F64(s | 0x7ff00000u | (m >> 3u) | (m != 0u ? 0x80000u : 0u), m << 29u);
    if (e == 0u) return hg_d_pack(s, -126, m << 8u, 0u);
    return hg_d_pack(s, I32(e) - 127, (m | 0x800000u) << 8u, 0u);
}}

FUNC f64 hg_d_from_u32(u32 x) {{
    return hg_d_pack(0u, 31, x, 0u);
}}

FUNC f64 hg_d_from_i32(i32 x) {{
    u32 s = x < 0 ? {_SIGN} : 0u;
    return hg_d_pack(s, 31, s != 0u ? 0u - U32(x) : U32(x), 0u);
}}

FUNC f64 hg_d_pow2(i32 k) {{
    if (k > 1023) return AS_F64(0x7ff00000u, 0u);
    if (k < -1075) return AS_F64(0u, 0u);
    return hg_d_pack(0u, k, {_SIGN}, 0u);
}}

FUNC f32 hg_d_to_f32(f64 a) {{
{_classify("a")}    if (anan) return AS_F32(0x7fc00000u | (F64_HI(a) & {_SIGN}));
    if (ainf || azero) return AS_F32((F64_HI(a) & {_SIGN}) | (ainf ? 0x7f800000u : 0u));
{_unpack("a")}    i32 be = au + 127;
    if (be >= 255) return AS_F32(asg | 0x7f800000u);
    if (be <= 0) {{
        u32 n = be < -64 ? 65u : U32(1 - be);
{_shift_right_jam("ah", "al", "n", " " * 8)}        be = 0;
    }}
    u32 m = ah >> 8u;
    u32 r = ah & 0xffu;
    if (r > 0x80u || (r == 0x80u && (al != 0u || (m & 1u) != 0u))) m = m + 1u;
    u32 ef = be > 0 ? U32(be - 1) : 0u;
    return AS_F32(asg | ((ef << 23u) + m));
}}

FUNC i32 hg_d_to_i32(f64 a) {{
{_classify("a")}    if (anan || azero) return 0;
    if (ainf) return F64_HI(a) >= {_SIGN} ? -2147483647 - 1 : 2147483647;
{_unpack("a")}    if (au < 0) return 0;
    if (au >= 31) return asg != 0u ? -2147483647 - 1 : 2147483647;
    i32 v = I32(ah >> U32(31 - au));
    return asg != 0u ? -v : v;
}}
"""

# Ordered comparisons: NaN compares false; -0 equals +0; otherwise sign and magnitude.
COMPARE = f"""
FUNC bool hg_d_eq(f64 a, f64 b) {{
{_classify("a")}{_classify("b")}    if (anan || bnan) return false;
    return (azero && bzero) || (F64_HI(a) == F64_HI(b) && F64_LO(a) == F64_LO(b));
}}

FUNC bool hg_d_lt(f64 a, f64 b) {{
{_classify("a")}{_classify("b")}    if (anan || bnan || (azero && bzero)) return false;
    u32 ah = F64_HI(a);
    u32 bh = F64_HI(b);
    u32 al = F64_LO(a);
    u32 bl = F64_LO(b);
    if ((ah ^ bh) >= {_SIGN}) return ah >= {_SIGN};
    bool less = ah < bh || (ah == bh && al < bl);
    bool more = ah > bh || (ah == bh && al > bl);
    return ah >= {_SIGN} ? more : less;
}}

FUNC bool hg_d_le(f64 a, f64 b) {{
    return hg_d_lt(a, b) || hg_d_eq(a, b);
}}
"""

# In dependency order (C needs declaration before use).
SOFT_F64 = PACK + NEG + ADD + SUB + MUL + DIV + SQRT + CONVERT + COMPARE
SOFT_F64_FUNCS = (
    "hg_d_pack",
    "hg_d_neg",
    "hg_d_add",
    "hg_d_sub",
    "hg_d_mul",
    "hg_d_div",
    "hg_d_sqrt",
    "hg_d_from_f32",
    "hg_d_from_u32",
    "hg_d_from_i32",
    "hg_d_pow2",
    "hg_d_to_f32",
    "hg_d_to_i32",
    "hg_d_eq",
    "hg_d_lt",
    "hg_d_le",
)


# What the C-style dialects with hardware f64 prepend to the CR_* functions: hg_pow2_64 (2^k
# from its exponent field, -1022 <= k <= 1023) and the word access F64_HI/F64_LO/AS_F64.
HARDWARE_F64 = {
    "cuda": (
        "__device__ static inline double hg_pow2_64(int k) {\n"
        "    return __hiloint2double((k + 1023) << 20, 0);\n}\n"
        "__device__ static inline unsigned int hg_f64_hi(double x) {\n"
        "    return (unsigned int)__double2hiint(x);\n}\n"
        "__device__ static inline unsigned int hg_f64_lo(double x) {\n"
        "    return (unsigned int)__double2loint(x);\n}\n"
        "__device__ static inline double hg_as_f64(unsigned int h, unsigned int l) {\n"
        "    return __hiloint2double((int)h, (int)l);\n}"
    ),
    "opencl": (
        "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\nstatic inline double hg_pow2_64(int k) {\n"
        "    return as_double((ulong)(k + 1023) << 52);\n}\n"
        "static inline uint hg_f64_hi(double x) { return as_uint2(x).y; }\n"
        "static inline uint hg_f64_lo(double x) { return as_uint2(x).x; }\n"
        "static inline double hg_as_f64(uint h, uint l) {\n    return as_double((uint2)(l, h));\n}"
    ),
    "c": (
        "static inline double hg_pow2_64(int32_t k) {\n"
        "    uint64_t b = (uint64_t)(k + 1023) << 52;\n    double d;\n    memcpy(&d, &b, 8);\n"
        "    return d;\n}\nstatic inline uint32_t hg_f64_hi(double x) {\n    uint64_t b;\n"
        "    memcpy(&b, &x, 8);\n    return (uint32_t)(b >> 32);\n}\n"
        "static inline uint32_t hg_f64_lo(double x) {\n    uint64_t b;\n    memcpy(&b, &x, 8);\n"
        "    return (uint32_t)b;\n}\nstatic inline double hg_as_f64(uint32_t h, uint32_t l) {\n"
        "    uint64_t b = ((uint64_t)h << 32) | l;\n    double d;\n    memcpy(&d, &b, 8);\n"
        "    return d;\n}"
    ),
}
