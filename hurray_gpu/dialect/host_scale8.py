"""Host C source of SCALE8's AVX-512 VBMI form: one 32-code block (an MX block) per 512-bit
register, its values looked up as bf16 bits by byte permutes, and MXSCALE8's loop over blocks.

The host renderer splices these pieces into SCALE8's helpers (``cstyle``): ``S8Z_FIELDS`` into
the chunk's table record ``hg_s8_fmt_t``, ``S8Z_HELPERS`` before the table check that fills
them, and the run calls ``hg_s8z_run`` first, which converts the leading multiples of four groups
(32 codes) when its conditions hold and says how many groups it did.
"""

__all__ = ["MX_HELPER", "S8Z_FIELDS", "S8Z_HELPERS"]

# The table of 4- or 6-bit codes (16 or 64 entries), or of 8-bit codes' magnitudes (128; the
# code's sign bit is OR'ed in), as bf16 bits split into low and high bytes (zl, zh) and a flag
# per entry (zf) for the finite nonzero values, the ones a scale changes. zok: every finite entry is
# exact in bf16 and f32-normal, and (8-bit) the table is sign-symmetric; z32: each entry's f32
# bits are its bf16 bits << 16 (NaN entries included), so f32 outputs widen the same words.
# [zlo, zhi]: the e of s = 2^(e-127) that keep every flagged value normal after the scale.
S8Z_FIELDS = """\
#if defined(__AVX512VBMI__) && defined(__AVX512BW__) && defined(__AVX512VL__)
    uint8_t zl[128], zh[128], zf[128];
    int zok, z32, zlo, zhi;
#endif
"""

# Why adding (e - 127) << 7 to the bf16 word is the oracle's result: s * T(c) is exact in f32
# when it stays normal (s is a power of two), and bf16 rounding of an exact bf16 value changes
# nothing, so the oracle's bits are T's bf16 bits with the exponent moved; zero keeps its sign,
# inf stays inf, and NaN entries take bf16's quiet NaN with the code's sign (hg_s8_cv's rule).
# 4-bit codes: the block's 16 bytes split into nibbles. 6-bit codes: a masked load of the
# block's 24 bytes (no read past them), a byte permute puts each eight codes' six bytes in one
# 64-bit lane, and a multishift takes each code's bits.
S8Z_HELPERS = """\
#if defined(__AVX512VBMI__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define HG_S8Z 1
static void hg_s8z_check(hg_s8_fmt_t *f, const uint32_t *t, int bits) {
    int n = bits == 8 ? 128 : 1 << bits, ok = bits == 4 || bits == 6 || bits == 8, w32 = 1;
    int lo = 255, hi = 0;
    for (int c = 0; c < 128; c++) {
        uint32_t v = c < n ? t[c] : 0u, a = v & 0x7fffffffu, b = v >> 16;
        if (a > 0x7f800000u) b = (v >> 16 & 0x8000u) | 0x7fc0u;
        else ok &= (v & 0xffffu) == 0u && (a == 0u || a >= 0x00800000u);
        if (bits == 8 && c < n) ok &= v >> 31 == 0u && t[c + 128] == (v | 0x80000000u);
        w32 &= b << 16 == v;
        f->zl[c] = (uint8_t)b;
        f->zh[c] = (uint8_t)(b >> 8);
        f->zf[c] = a != 0u && a < 0x7f800000u;
        if (f->zf[c]) {
            lo = (int)(a >> 23) < lo ? (int)(a >> 23) : lo;
            hi = (int)(a >> 23) > hi ? (int)(a >> 23) : hi;
        }
    }
    f->zok = ok;
    f->z32 = w32;
    f->zlo = 128 - lo > 1 ? 128 - lo : 1;
    f->zhi = 381 - hi < 254 ? 381 - hi : 254;
}
typedef struct { __m512i l0, l1, h0, h1, f0, f1; } hg_s8z_tab_t;
static inline __attribute__((always_inline)) hg_s8z_tab_t hg_s8z_tabs(const hg_s8_fmt_t *f) {
    hg_s8z_tab_t t = {_mm512_loadu_si512(f->zl), _mm512_loadu_si512(f->zl + 64),
                      _mm512_loadu_si512(f->zh), _mm512_loadu_si512(f->zh + 64),
                      _mm512_loadu_si512(f->zf), _mm512_loadu_si512(f->zf + 64)};
    return t;
}
// e when s = 2^(e-127) takes the tables (hg_s8_exp's test for them), else 0.
static inline int hg_s8z_exp(float s, const hg_s8_fmt_t *f, int conv) {
    uint32_t sb;
    memcpy(&sb, &s, 4);
    int e = (int)(sb >> 23);
    return f->zok && (conv == 1 || f->z32) && (sb & 0x807fffffu) == 0u && e >= f->zlo
        && e <= f->zhi ? e : 0;
}
// One block of 32 codes from q to o (bf16 words, or f32 for conv 0), off: (e - 127) << 7.
static inline __attribute__((always_inline)) void hg_s8z_block(
        void *restrict o, const uint8_t *restrict q, int bits, int off, int big, int conv,
        const hg_s8z_tab_t *t) {
    __m512i c, order = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    if (bits == 8) {
        c = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)q));
    } else if (bits == 4) {  // code 2k: byte k's low nibble, 2k + 1 its high one
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)q), f = _mm_set1_epi8(15);
        __m128i l = _mm_and_si128(x, f), h = _mm_and_si128(_mm_srli_epi16(x, 4), f);
        c = _mm512_zextsi256_si512(_mm256_set_m128i(_mm_unpackhi_epi8(l, h),
                                                     _mm_unpacklo_epi8(l, h)));
    } else {
        c = _mm512_permutexvar_epi8(_mm512_set_epi8(
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 23, 23, 23, 22, 21, 20, 19, 18, 17, 17, 17, 16, 15, 14, 13, 12,
            11, 11, 11, 10, 9, 8, 7, 6, 5, 5, 5, 4, 3, 2, 1, 0),
            _mm512_zextsi256_si512(_mm256_maskz_loadu_epi8(0xffffffu, q)));
        c = _mm512_and_si512(_mm512_multishift_epi64_epi8(
            _mm512_set1_epi64(0x2a241e18120c0600LL), c), _mm512_set1_epi8(63));
    }
    __m512i lo = _mm512_permutex2var_epi8(t->l0, c, t->l1);
    __m512i hi = _mm512_permutex2var_epi8(t->h0, c, t->h1);
    __mmask32 m = (__mmask32)_mm512_test_epi8_mask(_mm512_permutex2var_epi8(t->f0, c, t->f1),
                                                    _mm512_set1_epi8(1));
    if (bits == 8) hi = _mm512_or_si512(hi, _mm512_and_si512(c, _mm512_set1_epi8((char)0x80)));
    __m512i w = _mm512_permutex2var_epi64(_mm512_unpacklo_epi8(lo, hi), order,
                                          _mm512_unpackhi_epi8(lo, hi));
    w = _mm512_mask_add_epi16(w, m, w, _mm512_set1_epi16((short)off));
    __m512i u = w, v = w;
    if (conv == 0) {  // f32: each word in the high half of its lane
        __m512i x = _mm512_unpacklo_epi16(_mm512_setzero_si512(), w);
        __m512i y = _mm512_unpackhi_epi16(_mm512_setzero_si512(), w);
        u = _mm512_permutex2var_epi64(x, order, y);
        v = _mm512_permutex2var_epi64(x, _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15), y);
    }
    if (big && ((uintptr_t)o & 63u) == 0u) {
        _mm512_stream_si512((__m512i *)o, u);
        if (conv == 0) _mm512_stream_si512((__m512i *)((char *)o + 64), v);
    } else {
        _mm512_storeu_si512(o, u);
        if (conv == 0) _mm512_storeu_si512((char *)o + 64, v);
    }
}
// The leading whole blocks of four groups of one run (conv 0 or 1); returns the groups done.
static inline __attribute__((always_inline)) uint32_t hg_s8z_run(
        void *restrict d, const uint8_t *restrict p, int bits, float s, uint32_t g, int big,
        int conv, const hg_s8_fmt_t *f) {
    int e = hg_s8z_exp(s, f, conv);
    uint32_t j = 0;
    if (!e) return 0;
    hg_s8z_tab_t t = hg_s8z_tabs(f);
    for (; j + 4u <= g; j += 4u)
        hg_s8z_block((char *)d + (conv ? 16u : 32u) * j, p + (size_t)bits * j, bits,
                     (e - 127) << 7, big, conv, &t);
    return j;
}
#endif
"""

# MX/NF/HFSCALE8 on the host: the blocks of a run of scales in one loop, after SCALE8's
# helpers. MX (nf 0): blocks of 32 codes whose exponent the tables take go through hg_s8z_block
# (the tables loaded once per statement). NF and HF (nf 1: f32 scales, 2: f16): 4-bit codes
# scale the 16 table entries once per block and look the block's codes up among the products
# (f32), or among them rounded as the oracle rounds them (bf16: the portable helper's rounding
# add, exact for every finite f32; f16: F16C, which rounds finite values to nearest even as the
# portable helper does); a table with a NaN entry is left to SCALE8 (hg_nf_block). Any other
# block (another width or block size, a reported scale) is one hg_s8_run. Returns whether a
# scale was reported (the statement's err).
MX_HELPER = """\
#if defined(__AVX2__)
#ifdef HG_S8Z
static inline __attribute__((always_inline)) void hg_nf_block(
        void *restrict o, const uint8_t *restrict q, __m512 tz, float s, uint32_t g, int big,
        int conv) {
    __m512 v = _mm512_mul_ps(tz, _mm512_set1_ps(s));
    __m256i w16;
    if (conv == 0) {  // f32: 16 codes per permute of the 16 products, even and odd interleaved
        __m512i m4 = _mm512_set1_epi32(15), lo = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
        for (uint32_t j = 0; j + 4u <= g; j += 4u) {
            __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(
                q + 4u * j)));
            __m512 ev = _mm512_permutexvar_ps(_mm512_and_si512(x, m4), v);
            __m512 od = _mm512_permutexvar_ps(_mm512_and_si512(_mm512_srli_epi32(x, 4), m4), v);
            __m512i a = _mm512_castps_si512(_mm512_unpacklo_ps(ev, od));
            __m512i b = _mm512_castps_si512(_mm512_unpackhi_ps(ev, od));
            float *out = (float *)o + 8u * j;
            __m512i u = _mm512_permutex2var_epi64(a, lo, b);
            __m512i w = _mm512_permutex2var_epi64(a, _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14,
                                                                        15), b);
            if (big && ((uintptr_t)out & 63u) == 0u) {
                _mm512_stream_si512((__m512i *)(void *)out, u);
                _mm512_stream_si512((__m512i *)(void *)(out + 16), w);
            } else {
                _mm512_storeu_si512(out, u);
                _mm512_storeu_si512(out + 16, w);
            }
        }
        return;
    }
    if (conv == 1) {
        __m512i b = _mm512_castps_si512(v);
        w16 = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_add_epi32(
            _mm512_add_epi32(b, _mm512_set1_epi32(0x7fff)),
            _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1))), 16));
    } else {
        w16 = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    // Codes widened to 16-bit lanes look their values up in the 16 words (vpermw): the even
    // codes (low nibbles) and the odd ones, interleaved; 64 codes per step, then 32.
    __m512i w = _mm512_zextsi256_si512(w16), m4 = _mm512_set1_epi16(15);
    __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    __m512i hi = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    for (uint32_t j = 0; j + 4u <= g; j += 8u) {
        int two = j + 8u <= g;
        __m512i x = _mm512_cvtepu8_epi16(two
            ? _mm256_loadu_si256((const __m256i *)(const void *)(q + 4u * j))
            : _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(q + 4u * j))));
        __m512i ev = _mm512_permutexvar_epi16(_mm512_and_si512(x, m4), w);
        __m512i od = _mm512_permutexvar_epi16(_mm512_and_si512(_mm512_srli_epi16(x, 4), m4), w);
        __m512i a = _mm512_unpacklo_epi16(ev, od), b = _mm512_unpackhi_epi16(ev, od);
        uint16_t *out = (uint16_t *)o + 8u * j;
        __m512i u = _mm512_permutex2var_epi64(a, lo, b), v = _mm512_permutex2var_epi64(a, hi, b);
        if (big && ((uintptr_t)out & 63u) == 0u) {
            _mm512_stream_si512((__m512i *)(void *)out, u);
            if (two) _mm512_stream_si512((__m512i *)(void *)(out + 32), v);
        } else {
            _mm512_storeu_si512(out, u);
            if (two) _mm512_storeu_si512(out + 32, v);
        }
    }
}
#endif
// Block q's scale by kind (0: e8m0 byte, 1: f32 word, NF4's absmax, 2: f16 half, the affine
// scale); returns whether the statement reports it (as the oracle's lookup does).
static inline int hg_blk_scale(const uint8_t *restrict sc, uint32_t q, int kind, float *s) {
    uint32_t w = (uint32_t)sc[q] << 23, h = 0;
    int bad = sc[q] == 0u || sc[q] == 255u;
    if (kind == 1) {
        memcpy(&w, sc + 4u * q, 4);
        bad = (w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u;
    } else if (kind == 2) {
        h = (uint32_t)sc[2u * q] | (uint32_t)sc[2u * q + 1u] << 8;
        bad = (h & 0x7c00u) == 0x7c00u || (h & 0x7fffu) == 0u;
        uint32_t e = (h >> 10) & 31u, m = h & 1023u;  // f16 -> f32, exact (e 31: bad anyway)
        w = (h & 0x8000u) << 16 | (e ? (e + 112u) << 23 | m << 13 : 0u);
        if (!e && m) {
            float f = (float)m * 5.9604644775390625e-8f;  // m * 2^-24
            memcpy(&w, &f, 4);
            w |= (h & 0x8000u) << 16;
        }
    }
    memcpy(s, &w, 4);
    return bad;
}
static inline __attribute__((always_inline)) int hg_mx_run(
        void *restrict d, const float *tab, const uint8_t *restrict p, int bits,
        const uint8_t *restrict sc, uint32_t g, uint32_t nblk, int big, int conv,
        hg_s8_fmt_t *f, int nf) {
    uint32_t q = 0;
    int bad = 0;
    size_t ob = (size_t)(conv ? 16u : 32u) * g, ib = (size_t)bits * g;
#ifdef HG_S8Z
    // (NF4 into f32 kept hg_s8_run's permutes: no faster this way, measured)
    if (nf && bits == 4 && (g & 3u) == 0u && nblk > 0u && (conv != 0 || nf == 2)) {
        __m512 tz = _mm512_loadu_ps(tab);
        if (!_mm512_cmp_ps_mask(tz, tz, _CMP_UNORD_Q)) {
            for (; q < nblk; q++) {
                float s;
                int no = hg_blk_scale(sc, q, nf, &s);
                if ((q & 31u) == 0u) _mm_prefetch((const char *)(p + ib * q) + 2048, _MM_HINT_T0);
                if (no) hg_s8_run((char *)d + ob * q, tab, p + ib * q, bits, s, g, big, conv, f);
                else hg_nf_block((char *)d + ob * q, p + ib * q, tz, s, g, big, conv);
                bad |= no;
            }
            return bad;
        }
    }
    if (!nf && f && g == 4u && conv != 2 && nblk > 0u) {
        if (f->tab != tab || f->bits != bits) hg_s8_fmt_check(f, tab, bits);
        if (f->zok && (conv == 1 || f->z32)) {
            hg_s8z_tab_t t = hg_s8z_tabs(f);
            int zlo = f->zlo, zhi = f->zhi;
            for (; q < nblk; q++) {
                int e = sc[q];
                if ((q & 31u) == 0u) _mm_prefetch((const char *)(p + ib * q) + 2048, _MM_HINT_T0);
                if (e >= zlo && e <= zhi) {
                    hg_s8z_block((char *)d + ob * q, p + ib * q, bits, (e - 127) << 7, big, conv,
                                 &t);
                    continue;
                }
                bad |= e == 0 || e == 255;
                uint32_t b = (uint32_t)e << 23;
                float s;
                memcpy(&s, &b, 4);
                hg_s8_run((char *)d + ob * q, tab, p + ib * q, bits, s, g, big, conv, f);
            }
            return bad;
        }
    }
#endif
    for (; q < nblk; q++) {
        float s;
        bad |= hg_blk_scale(sc, q, nf, &s);
        hg_s8_run((char *)d + ob * q, tab, p + ib * q, bits, s, g, big, conv, f);
    }
    return bad;
}
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
// 32 8-bit affine codes (AFFINE8's arithmetic) from q to o: f32, bf16 (AVX512-BF16's
// conversion where the CPU has it: every product of a valid f16 scale is normal, see
// hg_a8_run; else the portable helper's rounding add) or f16 (F16C: the scale is finite).
static inline __attribute__((always_inline)) void hg_a8z_block(
        void *restrict o, const uint8_t *restrict q, uint32_t sx, __m512i vz, __m512 vs, int big,
        int conv) {
    __m128i c0 = _mm_loadu_si128((const __m128i *)(const void *)q);
    __m128i c1 = _mm_loadu_si128((const __m128i *)(const void *)(q + 16));
    __m512i i0 = sx ? _mm512_cvtepi8_epi32(c0) : _mm512_cvtepu8_epi32(c0);
    __m512i i1 = sx ? _mm512_cvtepi8_epi32(c1) : _mm512_cvtepu8_epi32(c1);
    __m512 a = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(i0, vz)), vs);
    __m512 b = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(i1, vz)), vs);
    __m512i u = _mm512_castps_si512(a), v = _mm512_castps_si512(b);
    if (conv == 2) {
        u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtps_ph(
            a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)), _mm512_cvtps_ph(
            b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), 1);
    } else if (conv == 1) {
#if defined(__AVX512BF16__)
        u = (__m512i)_mm512_cvtne2ps_pbh(b, a);
#else
        __m512i r = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
        u = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, r), _mm512_and_si512(
            _mm512_srli_epi32(u, 16), one)), 16);
        v = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(v, r), _mm512_and_si512(
            _mm512_srli_epi32(v, 16), one)), 16);
        u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(u)),
                               _mm512_cvtepi32_epi16(v), 1);
#endif
    }
    if (big && ((uintptr_t)o & 63u) == 0u) {
        _mm512_stream_si512((__m512i *)o, u);
        if (conv == 0) _mm512_stream_si512((__m512i *)((char *)o + 64), v);
    } else {
        _mm512_storeu_si512(o, u);
        if (conv == 0) _mm512_storeu_si512((char *)o + 64, v);
    }
}
#endif
// HFAFFINE8: AFFINE8 per block under its f16 scale, the blocks in one loop (AVX-512: a
// 32-code block per step where the scale is valid; any other block is one hg_a8_run).
static inline __attribute__((always_inline)) int hg_hfa_run(
        void *restrict d, const uint8_t *restrict p, uint32_t sx, int32_t z,
        const uint8_t *restrict sc, uint32_t g, uint32_t nblk, int big, int conv) {
    int bad = 0;
    size_t ob = (size_t)(conv ? 16u : 32u) * g, ib = 8u * (size_t)g;
    for (uint32_t q = 0; q < nblk; q++) {
        float s;
        int no = hg_blk_scale(sc, q, 2, &s);
        bad |= no;
        if ((q & 31u) == 0u) _mm_prefetch((const char *)(p + ib * q) + 2048, _MM_HINT_T0);
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
        if (!no && (g & 3u) == 0u) {
            __m512i vz = _mm512_set1_epi32(z);
            __m512 vs = _mm512_set1_ps(s);
            for (uint32_t j = 0; j < g; j += 4u)
                hg_a8z_block((char *)d + ob * q + (conv ? 16u : 32u) * j, p + ib * q + 8u * j,
                             sx, vz, vs, big, conv);
            continue;
        }
#endif
        hg_a8_run((char *)d + ob * q, p + ib * q, sx, z, s, g, big, conv);
    }
    return bad;
}
#endif
"""
