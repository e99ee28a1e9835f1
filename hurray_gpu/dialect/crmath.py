"""Correctly rounded f32 functions, written once in the portable subset (with ``f64``).

``CR_<NAME>(x)`` (EXP, EXP2, LOG, LOG2, RSQRT, SINH, COSH, TANH, ATAN, ASIN, ACOS, SIN, COS,
TAN) returns the f32 nearest (ties to even) to the exact function value, the same bits on every
dialect:

- a *core* evaluates the function in f64 (argument reduction, then a polynomial from
  ci/crmath_coeffs.py), with a relative error below the function's ``EPS`` on any device
  with IEEE f64 add, multiply, divide and square root, fused or not;
- the *rounding test*: when ``y - y*EPS`` and ``y + y*EPS`` round to the same f32, that f32
  is the correctly rounded result (the exact value lies between them);
- otherwise the input is near a rounding boundary: the *exceptions* (crmath_tables.py: every
  input whose host f64 value lies within 2*EPS of a boundary, found by the exhaustive search
  in ci/crmath_exhaustive.py, with results settled by mpmath) give the answer. An input
  missing there is at least 2*EPS from a boundary on the host, so any device's value (within
  EPS of the exact one, so at least EPS from the boundary) rounds correctly.

Devices need f64 arithmetic (``cl_khr_fp64``, Vulkan ``shaderFloat64``): the launchers
refuse the ``fp64`` feature elsewhere. WGSL has no f64: its writer computes every f64
operation with softf64.py's exact IEEE emulation on u32 words, which gives the bits hardware
f64 gives, so the functions return the same bits on webgpu too (the cores use only the
emulated operations: + - * /, negation, SQRT64, POW2_64, F64 of f32/i32/u32, F32/I32 of f64,
comparisons, selection, F64_HI/F64_LO/AS_F64; sin/cos/tan's Payne-Hanek runs in u32).
Verified: every emulated operation against NumPy through host C (millions of operands), every
WGSL f64 rendering on webgpu:0 (tests/backend/test_f64_kernels.py); in CI tan, exp and log
and vyre's Sin on webgpu:0, every function in ci/fuzz.sh (lavapipe compiles each for seconds).
"""

from __future__ import annotations

import re

from hurray_gpu.dialect.crmath_coeffs import COEFFS, CONSTS, TWO_OVER_PI
from hurray_gpu.dialect.crmath_tables import KEYED, TABLES

__all__ = ["CR_FUNCS", "EPS", "crmath_helpers"]


def _lit(v: float) -> str:
    return f"{v!r}lf"


def _horner(t: str, coeffs: tuple[float, ...]) -> str:
    text = _lit(coeffs[0])
    for c in coeffs[1:]:
        text = f"{_lit(c)} + {t} * ({text})"
    return text


C = {k: _lit(v) for k, v in CONSTS.items()}
NAN = "F64(AS_F32(0x7fc00000u))"
# Relative error bounds of the cores (with at least 1.5x slack over the operation counts in
# the comments below; the exhaustive search also reports the largest error it meets).
EPS: dict[str, float] = {
    "EXP": 2.0**-51, "EXP2": 2.0**-51, "RSQRT": 2.0**-51, "LOG": 2.0**-50,
    "LOG2": 2.0**-50, "SINH": 2.0**-50, "COSH": 2.0**-50, "TANH": 2.0**-50,
    "ATAN": 2.0**-50, "ASIN": 1.5 * 2.0**-50, "ACOS": 1.5 * 2.0**-50,
    "SIN": 2.0**-50, "COS": 2.0**-50, "TAN": 2.0**-49,
}

# exp2: 2^k (1 + f P(f)), k = round(x), f = x - k exact; errors: P ~1.2 ulp, f P and the sum
# one each (|f P| < 0.42). Past 129 the value is huge (inf after rounding), below -151 zero.
EXP2_CORE = f"""
FUNC f64 hg_cr_exp2_core(f32 x) {{
    if (!(x < 129.0f)) return F64(x) * 1e300lf;
    if (x < -151.0f) return 0.0lf;
    f32 kf = FLOOR(x + 0.5f);
    f64 f = F64(x) - F64(kf);
    return (1.0lf + f * ({_horner("f", COEFFS["EXP2"])})) * POW2_64(I32(kf));
}}
"""

# exp: 2^k e^r, r = (x - k LN2HI) - k LN2LO (the first difference is exact: k LN2HI has 53
# bits and |r| < 0.36); e^r = 1 + r P(r) as exp2. [90, inf] is huge, below -105 zero.
EXP_CORE = f"""
FUNC f64 hg_cr_exp_core(f32 x) {{
    if (!(x < 90.0f)) return F64(x) * 1e300lf;
    if (x < -105.0f) return 0.0lf;
    f32 kf = FLOOR(x * 1.44269504f + 0.5f);
    f64 k = F64(kf);
    f64 r = (F64(x) - k * {C["LN2HI"]}) - k * {C["LN2LO"]};
    return (1.0lf + r * ({_horner("r", COEFFS["EXP"])})) * POW2_64(I32(kf));
}}
"""

# log / log2 of x = 2^e m, m in [sqrt(1/2), sqrt(2)] (subnormals normalized by shifting):
# log m = s L(s^2), s = (m - 1)/(m + 1) (one rounding); s L, L's ~1.1, the sum with e ln 2.
LOG_CORE = f"""
FUNC f64 hg_cr_log_core(f32 x, u32 two) {{
    u32 u = AS_U32(x);
    if ((u & 0x7fffffffu) > 0x7f800000u || u == 0x7f800000u) return F64(x);
    if ((u & 0x7fffffffu) == 0u) return F64(AS_F32(0xff800000u));
    if (u > 0x7fffffffu) return {NAN};
    i32 e = I32(u >> 23u) - 127;
    u32 m = u & 0x7fffffu;
    if (e == -127) {{
        e = -126;
        while (m < 0x800000u) {{ m = m << 1u; e = e - 1; }}
        m = m & 0x7fffffu;
    }}
    if (m > 0x3504f3u) {{ m = m | 0x3f000000u; e = e + 1; }} else {{ m = m | 0x3f800000u; }}
    f64 md = F64(AS_F32(m));
    f64 s = (md - 1.0lf) / (md + 1.0lf);
    f64 z = s * s;
    if (two == 1u) return F64(e) + s * ({_horner("z", COEFFS["LOG2"])});
    return F64(e) * {C["LN2"]} + s * ({_horner("z", COEFFS["LOG"])});
}}
"""

# 1/sqrt: one f64 square root and one division (IEEE, both rounded once): < 1.5 ulp.
RSQRT_CORE = """
FUNC f64 hg_cr_rsqrt_core(f32 x) {
    u32 u = AS_U32(x);
    if ((u & 0x7fffffffu) == 0u) return F64(AS_F32(u | 0x7f800000u));
    if ((u & 0x7fffffffu) > 0x7f800000u) return F64(x);
    if (u > 0x7fffffffu) return """ + NAN + """;
    if (u == 0x7f800000u) return 0.0lf;
    return 1.0lf / SQRT64(F64(x));
}
"""

# sinh: |x| < 1: x + x z S(z) (z = x^2); else (E - 1/E)/2, E = e^|x| (cancellation < 1.31x).
# cosh: (E + 1/E)/2. tanh: |x| < 1/2: x + x z T(z); else (1 - E)/(1 + E), E = e^(-2|x|).
HYP_CORE = f"""
FUNC f64 hg_cr_hyp_core(f32 x, u32 which) {{
    f32 a = FABS(x);
    f64 xd = F64(x);
    f64 z = xd * xd;
    if (which == 0u && a < 1.0f) return xd + xd * z * ({_horner("z", COEFFS["SINH"])});
    // T(0) < 0: x + x z T(z) would turn -0 into +0.
    if (which == 2u && a < 0.5f) return a == 0.0f ? xd : xd + xd * z * ({_horner("z", COEFFS["TANH"])});
    if (which == 2u) {{
        f64 t = hg_cr_exp_core(-2.0f * a);
        f64 v = (1.0lf - t) / (1.0lf + t);
        return x < 0.0f ? -v : v;
    }}
    f64 big = hg_cr_exp_core(a);
    if (which == 1u) return (big + 1.0lf / big) * 0.5lf;
    f64 w = (big - 1.0lf / big) * 0.5lf;
    return x < 0.0f ? -w : w;
}}
"""

# atan of an f64: |t| <= tan(pi/8): t + t z A(z); up to tan(3pi/8): pi/4 + atan((a-1)/(a+1));
# beyond: pi/2 - atan(1/a). asin x = atan(x / sqrt(1 - x^2)) (x^2 exact; 1 - x^2 exact
# past 1/2), acos x = atan(sqrt(1 - x^2) / |x|), reflected about pi/2 for x < 0.
ATAN_CORE = f"""
FUNC f64 hg_cr_atan64(f64 t) {{
    if (t == 0.0lf) return t;  // A(0) < 0 would turn -0 into +0
    f64 a = t < 0.0lf ? -t : t;
    f64 v = a;
    f64 base = 0.0lf;
    f64 sg = 1.0lf;
    if (!(a <= 0.41421356237309503lf)) {{
        if (a < 2.414213562373095lf) {{
            v = (a - 1.0lf) / (a + 1.0lf);
            base = {C["PI_4"]};
        }} else {{
            v = 1.0lf / a;
            base = {C["PI_2"]};
            sg = -1.0lf;
        }}
    }}
    f64 z = v * v;
    f64 r = base + sg * (v + v * z * ({_horner("z", COEFFS["ATAN"])}));
    return t < 0.0lf ? -r : r;
}}

FUNC f64 hg_cr_atrig_core(f32 x, u32 which) {{
    f64 xd = F64(x);
    if (which == 0u) return hg_cr_atan64(xd);
    f32 a = FABS(x);
    if (!(a <= 1.0f)) return a > 1.0f ? {NAN} : xd;
    f64 c = SQRT64(1.0lf - xd * xd);
    if (which == 1u) return a == 1.0f ? xd * {C["PI_2"]} : hg_cr_atan64(xd / c);
    if (a == 0.0f) return {C["PI_2"]};
    f64 v = hg_cr_atan64(c / F64(a));
    return x < 0.0f ? {C["PI"]} - v : v;
}}
"""

# sin, cos, tan of |x| = r + n pi/2 (|r| <= pi/4), then sin r = r + r z S(z), cos r =
# 1 + z C(z) (z = r^2), tan r = sin r / cos r. Reduction, exact for every f32:
# - |x| < 2^16 (Cody-Waite): k = round(|x| 2/pi) < 2^16, r = ((|x| - k CW1) - k CW2) - k CW3;
#   k CW1, k CW2 (37-bit constants) and |x| - k CW1 (a multiple of 2^-36 below 1) are exact,
#   and CW1 + CW2 + CW3 is within 2^-127 of pi/2: two roundings, r within 2^-52 relative.
# - above (Payne-Hanek): |x| = m 2^e (m < 2^24); the bits of 2/pi of weight 2^(e-2) and above
#   make m 2^e 2/pi a multiple of 4 (no quadrant information): five words from word
#   (e + 30) / 32 of TWO_OVER_PI cover the rest to 127 bits or more below the binary point.
#   Their product with m (u32 pieces: 16-bit halves) gives n (two bits) and 96 bits of the
#   fraction f, folded to |f| <= 1/2 in integers; r = f pi/2 in f64: three roundings and
#   pi/2's own. Every f32 lies at least 2^-29.3 from a nonzero multiple of pi/2 (0x6f79be45
#   is nearest), so the 2^-96 dropped from f is 2^-66 relative at most.
# Errors (relative, in u = 2^-53): r: 2 u (Cody-Waite), 2.4 u (Payne-Hanek, pi/2's 0.32 u
# included); sin: r's 2.5 u (r cot r <= 1), r z S's 5 u at 0.12 of the value, the sum's 1 u:
# 4.1 u; cos: r's at r tan r <= pi/4, z C's 4 u at 0.44 of the value, the sum's: 4.7 u; tan:
# r's at 2r / sin 2r <= pi/2 (3.9 u), sin's and cos's own (1.6 u, 2.8 u), the division: 9.3 u.
# EPS: 8 u, 8 u and 16 u (slack 1.7x at least).
_WORDS = "".join(f"    if (j == {j}u) w = 0x{w:08x}u;\n" for j, w in enumerate(TWO_OVER_PI) if w)
TRIG_CORE = f"""
FUNC u32 hg_cr_2opi(u32 j) {{
    u32 w = 0u;
{_WORDS}    return w;
}}

FUNC u32 hg_cr_mulhi(u32 a, u32 b) {{
    u32 al = a & 0xffffu;
    u32 ah = a >> 16u;
    u32 bl = b & 0xffffu;
    u32 bh = b >> 16u;
    u32 lh = al * bh;
    u32 hl = ah * bl;
    u32 mid = ((al * bl) >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    return ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
}}

FUNC u32 hg_cr_funnel(u32 lo, u32 hi, u32 sh) {{
    return (lo >> sh) | ((hi << (31u - sh)) << 1u);
}}

FUNC f64 hg_cr_trig_core(f32 x, u32 which) {{
    u32 a = AS_U32(x) & 0x7fffffffu;
    f64 ad = F64(AS_F32(a));
    f64 r = 0.0lf;
    u32 n = 0u;
    if (a < 0x47800000u) {{
        i32 k = I32(ad * {C["INV_PIO2"]} + 0.5lf);
        f64 kd = F64(k);
        r = ((ad - kd * {C["CW1"]}) - kd * {C["CW2"]}) - kd * {C["CW3"]};
        n = U32(k);
    }} else {{
        u32 m = (a & 0x7fffffu) | 0x800000u;
        i32 e = I32(a >> 23u) - 150;
        u32 j = U32(e + 30) >> 5u;
        u32 t = U32(32 * I32(j) - e + 32);  // 64 - d: the fraction's lowest bit, 31..62
        u32 w = hg_cr_2opi(j + 4u);
        u32 p0 = m * w;
        u32 h = hg_cr_mulhi(m, w);
        w = hg_cr_2opi(j + 3u);
        u32 p1 = m * w + h;
        h = hg_cr_mulhi(m, w) + (p1 < h ? 1u : 0u);
        w = hg_cr_2opi(j + 2u);
        u32 p2 = m * w + h;
        h = hg_cr_mulhi(m, w) + (p2 < h ? 1u : 0u);
        w = hg_cr_2opi(j + 1u);
        u32 p3 = m * w + h;
        h = hg_cr_mulhi(m, w) + (p3 < h ? 1u : 0u);
        w = hg_cr_2opi(j);
        u32 p4 = m * w + h;
        u32 p5 = hg_cr_mulhi(m, w) + (p4 < h ? 1u : 0u);
        bool low = t < 32u;
        u32 sh = t & 31u;
        u32 w0 = low ? p0 : p1;
        u32 w1 = low ? p1 : p2;
        u32 w2 = low ? p2 : p3;
        u32 w3 = low ? p3 : p4;
        u32 w4 = low ? p4 : p5;
        u32 c3 = hg_cr_funnel(w0, w1, sh);
        u32 c2 = hg_cr_funnel(w1, w2, sh);
        u32 c1 = hg_cr_funnel(w2, w3, sh);
        n = hg_cr_funnel(w3, w4, sh);
        bool neg = c1 >= 0x80000000u;
        if (neg) {{
            n = n + 1u;
            c3 = ~c3 + 1u;
            c2 = ~c2 + (c3 == 0u ? 1u : 0u);
            c1 = ~c1 + ((c3 == 0u && c2 == 0u) ? 1u : 0u);
        }}
        f64 f = F64(c1) * 2.3283064365386963e-10lf
            + (F64(c2) * 5.421010862427522e-20lf + F64(c3) * 1.2621774483536189e-29lf);
        r = f * {C["PI_2"]};
        if (neg) r = -r;
    }}
    f64 z = r * r;
    f64 sn = r + r * z * ({_horner("z", COEFFS["SIN"])});
    f64 cs = 1.0lf + z * ({_horner("z", COEFFS["COS"])});
    // sin(r + n pi/2) is s, c, -s, -c for n = 0..3; cos(r + n pi/2) = sin(r + (n + 1) pi/2).
    u32 q = n + which;
    f64 v = (q & 1u) == 1u ? cs : sn;
    if ((q & 2u) != 0u) v = -v;
    if (which == 2u) v = (n & 1u) == 1u ? -(cs / sn) : sn / cs;
    if (which != 1u && AS_U32(x) > 0x7fffffffu) v = -v;
    return v;
}}
"""

# name -> (core text, the core call on x, the cores it needs first)
_CORES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "EXP2": (EXP2_CORE, "hg_cr_exp2_core(x)", ()),
    "EXP": (EXP_CORE, "hg_cr_exp_core(x)", ()),
    "LOG": (LOG_CORE, "hg_cr_log_core(x, 0u)", ()),
    "LOG2": (LOG_CORE, "hg_cr_log_core(x, 1u)", ()),
    "RSQRT": (RSQRT_CORE, "hg_cr_rsqrt_core(x)", ()),
    "SINH": (HYP_CORE, "hg_cr_hyp_core(x, 0u)", (EXP_CORE,)),
    "COSH": (HYP_CORE, "hg_cr_hyp_core(x, 1u)", (EXP_CORE,)),
    "TANH": (HYP_CORE, "hg_cr_hyp_core(x, 2u)", (EXP_CORE,)),
    "ATAN": (ATAN_CORE, "hg_cr_atrig_core(x, 0u)", ()),
    "ASIN": (ATAN_CORE, "hg_cr_atrig_core(x, 1u)", ()),
    "ACOS": (ATAN_CORE, "hg_cr_atrig_core(x, 2u)", ()),
    "SIN": (TRIG_CORE, "hg_cr_trig_core(x, 0u)", ()),
    "COS": (TRIG_CORE, "hg_cr_trig_core(x, 1u)", ()),
    "TAN": (TRIG_CORE, "hg_cr_trig_core(x, 2u)", ()),
}
CR_FUNCS = tuple(_CORES)


def _keyed(name: str) -> str:
    """RSQRT's exceptions repeat every two binades (rsqrt(4x) = rsqrt(x)/2): keyed by the
    mantissa and exponent parity (u & 0xffffff), stored for the input in [1/2, 2)."""
    rows = KEYED.get(name, {})
    if not rows:
        return ""
    lines = ["    u32 r = 0u;", "    u32 k = u & 0xffffffu;"]
    lines += [f"    if (k == 0x{k:06x}u) r = 0x{v:08x}u;" for k, v in sorted(rows.items())]
    lines += ["    if (r != 0u && u >= 0x800000u && u < 0x7f800000u) {",
              "        i32 j = (I32(u >> 23u) - 126 - I32((u >> 23u) & 1u)) / 2;",
              "        return AS_F32(U32(I32(r) - j * 8388608));", "    }"]
    return "\n".join(lines) + "\n"


# Inputs whose result is exact or not finite, answered on the bits (after NaN): Vulkan lets a
# compiler assume that no f64 value is infinite or NaN and ignore the sign of zero, so these
# never reach f64 arithmetic (a = |x|'s bits, s = the sign bit; 90, 129, 16 and -105, -151 are
# where exp, exp2, sinh/cosh and tanh saturate).
INF, PINF = "AS_F32(s | 0x7f800000u)", "AS_F32(0x7f800000u)"
_SPECIAL: dict[str, str] = {
    "EXP": f"a == 0u) return 1.0f;\n u >= 0x42b40000u && s == 0u) return {PINF};\n"
           " u >= 0xc2d20000u) return 0.0f;",
    "EXP2": f"a == 0u) return 1.0f;\n u >= 0x43010000u && s == 0u) return {PINF};\n"
            " u >= 0xc3170000u) return 0.0f;",
    "LOG": "a == 0u) return AS_F32(0xff800000u);\n s != 0u) return AS_F32(0x7fc00000u);\n"
           " a == 0x7f800000u) return x;",
    "RSQRT": f"a == 0u) return {INF};\n s != 0u) return AS_F32(0x7fc00000u);\n"
             " a == 0x7f800000u) return 0.0f;",
    "SINH": f"a == 0u) return x;\n a >= 0x42b40000u) return {INF};",
    "COSH": f"a == 0u) return 1.0f;\n a >= 0x42b40000u) return {PINF};",
    "TANH": "a == 0u) return x;\n a >= 0x41800000u) return AS_F32(s | 0x3f800000u);",
    "ATAN": "a == 0u) return x;\n a == 0x7f800000u) return AS_F32(s | 0x3fc90fdbu);",
    "ASIN": "a == 0u) return x;\n a > 0x3f800000u) return AS_F32(0x7fc00000u);",
    "ACOS": "a == 0u) return AS_F32(0x3fc90fdbu);\n"
            " a > 0x3f800000u) return AS_F32(0x7fc00000u);",
}
# Below 2^-12, sin x and tan x round to x and cos x to 1 (x^2/6, x^2/3 and x^2/2 are below
# the half ulp); sin, cos and tan of inf are NaN.
_SPECIAL["SIN"] = "a < 0x39800000u) return x;\n a == 0x7f800000u) return AS_F32(0x7fc00000u);"
_SPECIAL["TAN"] = _SPECIAL["SIN"]
_SPECIAL["COS"] = "a < 0x39800000u) return 1.0f;\n a == 0x7f800000u) return AS_F32(0x7fc00000u);"
_SPECIAL["LOG2"] = _SPECIAL["LOG"]
# Past FLT_MAX + ulp/2 a finite f64 rounds to inf (Vulkan may not convert it so).
F32_BIG = _lit(3.4028235677973366e38)


def wrapper(name: str) -> str:
    """The subset text of ``hg_cr_<name>``: specials, core, rounding test, exceptions."""
    # Assignments, one return: lavapipe returned the first entry's result for any input that
    # reached a long chain of returns.
    rows = sorted(TABLES.get(name, {}).items())
    table = "".join(["    u32 t = 0xffffffffu;\n",
                     *(f"    if (u == 0x{k:08x}u) t = 0x{v:08x}u;\n" for k, v in rows),
                     "    if (t != 0xffffffffu) return AS_F32(t);\n"]) if rows else ""
    special = _SPECIAL[name].replace("\n ", "\n    if (")
    return (f"FUNC f32 hg_cr_{name.lower()}(f32 x) {{\n"
            "    u32 u = AS_U32(x);\n    u32 a = u & 0x7fffffffu;\n"
            + ("    u32 s = u & 0x80000000u;\n" if re.search(r"\bs\b", special) else "") +
            "    if (a > 0x7f800000u) return AS_F32(0x7fc00000u);\n"
            f"    if ({special}\n"
            f"    f64 y = {_CORES[name][1]};\n"
            f"    if (y >= {F32_BIG}) return {PINF};\n"
            f"    if (y <= -{F32_BIG}) return AS_F32(0xff800000u);\n"
            f"    f64 e = y * {_lit(EPS[name])};\n"
            "    f32 lo = F32(y - e);\n    f32 hi = F32(y + e);\n"
            "    if (AS_U32(lo) == AS_U32(hi)) return lo;\n" + _keyed(name) + table +
            "    return F32(y);\n}\n")


def crmath_helpers(called: set[str]) -> list[str]:
    """Subset texts of the functions ``CR_<NAME>`` intrinsics in ``called`` need, each once
    and before its callers (GLSL needs declaration before use)."""
    texts: list[str] = []
    for name in CR_FUNCS:
        if f"CR_{name}" not in called:
            continue
        core, _, deps = _CORES[name]
        for text in (*deps, core):
            if text not in texts:
                texts.append(text)
        texts.append(wrapper(name))
    return texts
