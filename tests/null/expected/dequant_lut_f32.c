#if defined(HG_THREADS) && !defined(_OPENMP) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float hg_as_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t hg_as_u32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline uint32_t hg_umin(uint32_t a, uint32_t b) { return a < b ? a : b; }
static inline uint32_t hg_umax(uint32_t a, uint32_t b) { return a > b ? a : b; }
static inline int32_t hg_imin(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t hg_imax(int32_t a, int32_t b) { return a > b ? a : b; }
#ifdef _OPENMP
#include <omp.h>
#define HG_MAX_THREADS() omp_get_max_threads()
#elif defined(HG_THREADS)
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
typedef struct { void **bufs; const uint32_t *words; int64_t n0, n1, size, total; } hg_job_t;
typedef struct { void (*task)(const hg_job_t *, int64_t); const hg_job_t *job;
                 int64_t chunks, next; } hg_team_t;
static int hg_threads(void) {
    static int hg_n;
    int n = __atomic_load_n(&hg_n, __ATOMIC_RELAXED);
    if (n == 0) {
        const char *env = getenv("OMP_NUM_THREADS");
#ifdef __linux__
        cpu_set_t set;
        n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
#else
        n = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? (int)sysconf(_SC_NPROCESSORS_ONLN) : 1;
#endif
        n = env && atoi(env) > 0 ? atoi(env) : n;
        __atomic_store_n(&hg_n, n, __ATOMIC_RELAXED);
    }
    return n;
}
#define HG_MAX_THREADS() hg_threads()
static void *hg_worker(void *arg) {
    hg_team_t *team = (hg_team_t *)arg;
    for (int64_t c; (c = __atomic_fetch_add(&team->next, 1, __ATOMIC_RELAXED)) < team->chunks;)
        team->task(team->job, c);
    return NULL;
}
static void hg_parallel(void (*task)(const hg_job_t *, int64_t), const hg_job_t *job,
                        int64_t chunks) {
    hg_team_t team = {task, job, chunks, 0};
    pthread_t ids[63];  /* with the caller: 64 */
    int64_t want = HG_MAX_THREADS() < chunks ? HG_MAX_THREADS() : chunks;
    int started = 0;
    while (started < want - 1 && started < 63
           && pthread_create(&ids[started], NULL, hg_worker, &team) == 0)
        started++;
    hg_worker(&team);
    for (int i = 0; i < started; i++) pthread_join(ids[i], NULL);
}
#endif

static inline uint32_t hg_umulhi(uint32_t a, uint32_t b) {
    return (uint32_t)(((uint64_t)a * b) >> 32);
}

#ifndef HG_STREAM_BYTES
#define HG_STREAM_BYTES (32u << 20)
#endif
#define hg_big(total, size) ((uint64_t)(total) * (size) > (uint64_t)HG_STREAM_BYTES)
#if defined(__AVX2__)
#include <immintrin.h>
typedef struct {
    const float *tab;
    int bits, m, k, elo, eln, ehi;  // eln: elo of the normal codes (from 2^M) alone
    __m256i sp[2], bp[2], t16, nz;  // sp: T of the top 16 magnitudes; bp: bf16-rule NaNs
    // Magnitudes m below 8 (nz16: 2^M > m > 0): T's exponent fields and bf16 mantissas; the
    // top 8 as each output writes them (float: high halves, top0 when exact).
    __m256i ex16, mb16, nz16, hi16[3];
    int top0;
#if defined(__AVX512VBMI__) && defined(__AVX512BW__) && defined(__AVX512VL__)
    uint8_t zl[128], zh[128], zf[128];
    int zok, z32, zlo, zhi;
#endif
} hg_s8_fmt_t;
static inline void hg_s8_fence(void) { _mm_sfence(); }
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
// One block of 32 codes from q to o (bf16 words, or float for conv 0), off: (e - 127) << 7.
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
    if (conv == 0) {  // float: each word in the high half of its lane
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
static inline __m256i hg_s8_codes(const uint8_t *p, int bits) {
    if (bits == 8) return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
    uint32_t w;
    uint16_t h;
    memcpy(&w, p, 4);
    memcpy(&h, p + 4, 2);  // 6-bit: codes 0-3 from bytes 0-2, codes 4-7 from bytes 3-5
    __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)(w | (uint64_t)h << 32)),
        _mm256_setr_epi8(0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1,
                         3, 4, 5, -1, 3, 4, 5, -1, 3, 4, 5, -1, 3, 4, 5, -1));
    return _mm256_and_si256(_mm256_srlv_epi32(b, _mm256_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18)),
                            _mm256_set1_epi32(63));
}
// Sixteen codes (two groups) in 16-bit lanes. 6-bit: each lane takes the two bytes holding its
// code (the first byte alone, in the high half, for a code in one byte) and a multiply-high by
// 2^(16 - shift) shifts it into place; the 12 bytes are read as two overlapping 8-byte words.
static inline __m256i hg_s8_codes16(const uint8_t *p, int bits) {
    if (bits == 8) return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)p));
    __m256i w = _mm256_set_m128i(_mm_loadl_epi64((const __m128i *)(const void *)(p + 4)),
                                 _mm_loadl_epi64((const __m128i *)(const void *)p));
    w = _mm256_shuffle_epi8(w, _mm256_setr_epi8(-1, 0, 0, 1, 1, 2, -1, 2, -1, 3, 3, 4, 4, 5, -1, 5,
                                                -1, 2, 2, 3, 3, 4, -1, 4, -1, 5, 5, 6, 6, 7, -1, 7));
    return _mm256_and_si256(_mm256_mulhi_epu16(w, _mm256_setr_epi16(
        256, 1024, 4096, 64, 256, 1024, 4096, 64, 256, 1024, 4096, 64, 256, 1024, 4096, 64)),
        _mm256_set1_epi16(63));
}
// The float bits of s * T(c) for eight codes, x = e - 127 - bias - M (see above).
static inline __m256i hg_s8_fast(__m256i c, const hg_s8_fmt_t *f, int x, __m256i sp0,
                                 __m256i sp1) {
    __m128i m = _mm_cvtsi32_si128(f->m);
    __m256i one = _mm256_set1_epi32(1);
    __m256i mag = _mm256_and_si256(c, _mm256_set1_epi32((1 << (f->bits - 1)) - 1));
    __m256i ef = _mm256_max_epu32(_mm256_srl_epi32(mag, m), one);
    __m256i q = _mm256_sub_epi32(mag, _mm256_sll_epi32(_mm256_sub_epi32(ef, one), m));
    __m256i b = _mm256_add_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(q)), _mm256_andnot_si256(
        _mm256_cmpeq_epi32(q, _mm256_setzero_si256()),
        _mm256_slli_epi32(_mm256_add_epi32(ef, _mm256_set1_epi32(x)), 23)));
    if (f->k < 1 << (f->bits - 1))
        b = _mm256_blendv_epi8(b, _mm256_castps_si256(_mm256_blendv_ps(
            _mm256_permutevar8x32_ps(_mm256_castsi256_ps(sp0), c),
            _mm256_permutevar8x32_ps(_mm256_castsi256_ps(sp1), c),
            _mm256_castsi256_ps(_mm256_slli_epi32(c, 28)))),
            _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(f->k - 1)));
    return _mm256_or_si256(b, _mm256_slli_epi32(_mm256_srl_epi32(
        c, _mm_cvtsi32_si128(f->bits - 1)), 31));
}
// 16-bit bits (w mantissa bits: bf16 7, f16 10) of s * T(c) for 16 codes in 16-bit lanes, x
// the exponent offset << w: a normal magnitude shifted into place plus x, capped at infinity
// (f16 at scales past its range: a value of at most four significant bits is exact below
// 2^16 and rounds to infinity from there; the add saturates); subnormal ones (below 2^M <= 8)
// and those from k up (k >= top 8) by byte shuffles of 8-entry tables (lo16: this run's
// values; hi: the output's inf/NaN bits).
static inline __m256i hg_s8_b16(__m256i c, const hg_s8_fmt_t *f, __m256i x, __m256i lo16,
                                __m256i hi, int w) {
    __m256i mag = _mm256_and_si256(c, _mm256_set1_epi16((short)((1 << (f->bits - 1)) - 1)));
    __m256i ix = _mm256_add_epi16(_mm256_mullo_epi16(_mm256_and_si256(mag, _mm256_set1_epi16(7)),
                                                     _mm256_set1_epi16(0x0202)),
                                  _mm256_set1_epi16(0x0100));
    __m256i b = _mm256_adds_epu16(_mm256_sll_epi16(mag, _mm_cvtsi32_si128(w - f->m)), x);
    if (w == 10) b = _mm256_min_epu16(b, _mm256_set1_epi16(0x7c00));  // (bf16 stays in range)
    b = _mm256_blendv_epi8(b, _mm256_shuffle_epi8(lo16, ix),
                           _mm256_cmpgt_epi16(_mm256_set1_epi16((short)(1 << f->m)), mag));
    if (f->k < 1 << (f->bits - 1))
        b = _mm256_blendv_epi8(b, _mm256_shuffle_epi8(hi, ix),
                               _mm256_cmpgt_epi16(mag, _mm256_set1_epi16((short)(f->k - 1))));
    return _mm256_or_si256(b, _mm256_and_si256(_mm256_sll_epi16(c, _mm_cvtsi32_si128(
        16 - f->bits)), _mm256_set1_epi16((short)0x8000)));
}
static __attribute__((noinline)) void hg_s8_fmt_check(hg_s8_fmt_t *out, const float *tab,
                                                      int bits) {
    int half = 1 << (bits - 1);
    hg_s8_fmt_t f, g;
    uint32_t t[256];
    memset(&f, 0, sizeof f);
    f.tab = tab;
    f.bits = bits;
    memcpy(t, tab, sizeof(float) << bits);
    for (int m = bits == 4 ? 1 : 2; m <= (bits == 4 ? 1 : 3); m++) {
        int k = 0, bias = (1 << (bits - 2 - m)) - 1, ok = 1, lo = 255, ln = 255, hi = 0;
        g = f;
        g.m = m;
        g.k = half;
        for (; k < half; k += 8) {
            uint32_t v[8];
            __m256i c = _mm256_add_epi32(_mm256_set1_epi32(k),
                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            _mm256_storeu_si256((__m256i *)(void *)v, hg_s8_fast(c, &g, -bias - m, f.sp[0],
                                                                  f.sp[1]));
            int e = 0;
            while (e < 8 && v[e] == t[k + e]) e++;
            if (e < 8) {
                k += e;
                break;
            }
        }
        for (int c = 0; c < half; c++) {
            ok &= t[c + half] == (t[c] | 0x80000000u) && t[c] >> 31 == 0u;  // both signs
            if (c >= k)  // an inf/NaN code among the top 16 (4-bit tables: none)
                ok &= (t[c] & 0x7f800000u) == 0x7f800000u && c >= half - 16 && bits > 4;
            else if (c > 0) {
                lo = (int)(t[c] >> 23) < lo ? (int)(t[c] >> 23) : lo;
                ln = c >= 1 << m && (int)(t[c] >> 23) < ln ? (int)(t[c] >> 23) : ln;
                hi = (int)(t[c] >> 23) > hi ? (int)(t[c] >> 23) : hi;
            }
        }
        if (ok && k > f.k) {
            f = g;
            f.k = k;
            f.elo = 128 - lo;
            f.eln = 128 - ln;
            f.ehi = 381 - hi;
            if (bits > 4) {
                f.sp[0] = _mm256_loadu_si256((const __m256i *)(const void *)(t + half - 16));
                f.sp[1] = _mm256_loadu_si256((const __m256i *)(const void *)(t + half - 8));
            } else {
                __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)t);
                __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(t + 8));
                f.t16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(
                    _mm256_srli_epi32(a, 16), _mm256_srli_epi32(b, 16)), 0xd8);
                f.nz = _mm256_cmpgt_epi16(_mm256_and_si256(f.t16, _mm256_set1_epi16(0x7fff)),
                                          _mm256_setzero_si256());
            }
        }
    }
    for (int h = 0; h < 2; h++)
        f.bp[h] = _mm256_blendv_epi8(f.sp[h], _mm256_set1_epi32(0x7fc00000),
                                     _mm256_cmpgt_epi32(f.sp[h], _mm256_set1_epi32(0x7f800000)));
    if (bits > 4 && f.k) {
        uint16_t v[6][16];  // ex, mb, nz, hi per output
        f.top0 = 1;
        for (int c = 0; c < 16; c++) {
            uint32_t top = t[half - 8 + (c & 7)], sub = (c & 7) && (c & 7) < 1 << f.m;
            uint32_t nan = (top & 0x7fffffffu) > 0x7f800000u, hm = (top >> 13) & 0x3ffu;
            v[0][c] = (uint16_t)(sub ? t[c & 7] >> 23 : 0u);
            v[1][c] = (uint16_t)(sub ? (t[c & 7] >> 16) & 0x7fu : 0u);
            v[2][c] = (uint16_t)(sub ? 0xffffu : 0u);
            v[3][c] = (uint16_t)(top >> 16);
            v[4][c] = (uint16_t)(nan ? 0x7fc0u : top >> 16);
            v[5][c] = (uint16_t)(nan ? 0x7c00u | (hm ? hm : 1u) : 0x7c00u);
            f.top0 &= half - 8 + (c & 7) < f.k || (top & 0xffffu) == 0u;
        }
        __m256i *to[6] = {&f.ex16, &f.mb16, &f.nz16, &f.hi16[0], &f.hi16[1], &f.hi16[2]};
        for (int h = 0; h < 6; h++) *to[h] = _mm256_loadu_si256((const __m256i *)(const void *)v[h]);
    }
#ifdef HG_S8Z
    hg_s8z_check(&f, t, bits);
#endif
    *out = f;
}
// e when s = 2^(e-127) keeps every arithmetic value of the table normal, else 0.
static inline int hg_s8_exp(float s, const hg_s8_fmt_t *f) {
    uint32_t b;
    memcpy(&b, &s, 4);
    int e = (int)(b >> 23);
    return f->k > 0 && (b & 0x807fffffu) == 0u && e >= f->elo && e <= f->ehi ? e : 0;
}
static inline __m256 hg_s8_t4(__m256 lo, __m256 hi, const uint8_t *p) {
    uint32_t w;
    memcpy(&w, p, 4);
    __m256i ix = _mm256_srlv_epi32(_mm256_set1_epi32((int)w),
                                   _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, ix), _mm256_permutevar8x32_ps(hi, ix),
                            _mm256_castsi256_ps(_mm256_slli_epi32(ix, 28)));
}
static inline __attribute__((always_inline)) __m256 hg_s8_pick(const float *tab,
                                                               const uint8_t *p, int bits) {
    uint64_t c, m = (1u << bits) - 1u;
    uint32_t w;
    uint16_t h;
    memcpy(&w, p, 4);
    if (bits == 8) memcpy(&c, p, 8);
    else c = w | (bits == 6 ? (memcpy(&h, p + 4, 2), (uint64_t)h << 32) : 0u);
    return _mm256_setr_ps(tab[c & m], tab[(c >> bits) & m], tab[(c >> 2 * bits) & m],
                          tab[(c >> 3 * bits) & m], tab[(c >> 4 * bits) & m],
                          tab[(c >> 5 * bits) & m], tab[(c >> 6 * bits) & m],
                          tab[(c >> 7 * bits) & m]);
}
static inline __m256i hg_s8_scale(__m256 t, float s) {
    __m256 v = _mm256_mul_ps(t, _mm256_set1_ps(s));
    return _mm256_castps_si256(_mm256_blendv_ps(v, t, _mm256_cmp_ps(t, t, _CMP_UNORD_Q)));
}
static inline void hg_s8_st32(void *d, __m256i v, int big) {
    if (big && ((uintptr_t)d & 31u) == 0u) _mm256_stream_si256((__m256i *)d, v);
    else _mm256_storeu_si256((__m256i *)d, v);
}
static inline void hg_s8_st16(void *d, __m128i v, int big) {
    if (big && ((uintptr_t)d & 15u) == 0u) _mm_stream_si128((__m128i *)d, v);
    else _mm_storeu_si128((__m128i *)d, v);
}
static inline __m256i hg_s8_cv(__m256i b, int conv) {
    __m256i q = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(0x8000)), r = b;
    if (conv == 1) {
        __m256i odd = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
        r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)),
                                               odd), 16);
        q = _mm256_or_si256(q, _mm256_set1_epi32(0x7fc0));
    }
#if defined(__F16C__)
    if (conv == 2) {
        r = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(_mm256_castsi256_ps(b),
                                                  _MM_FROUND_TO_NEAREST_INT));
        __m256i m = _mm256_and_si256(_mm256_srli_epi32(b, 13), _mm256_set1_epi32(0x3ff));
        m = _mm256_or_si256(m, _mm256_and_si256(_mm256_cmpeq_epi32(m, _mm256_setzero_si256()),
                                                _mm256_set1_epi32(1)));
        q = _mm256_or_si256(_mm256_or_si256(q, _mm256_set1_epi32(0x7c00)), m);
    }
#endif
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7fffffff)),
                                     _mm256_set1_epi32(0x7f800000));
    return conv ? _mm256_blendv_epi8(r, q, nan) : b;
}
static inline void hg_s8_sh32(uint16_t *d, __m256i tl, __m256i th, const uint8_t *p, int big) {
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)p), f = _mm_set1_epi8(15);
    __m128i lo = _mm_and_si128(c, f), hi = _mm_and_si128(_mm_srli_epi16(c, 4), f);
    __m256i ix = _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
    __m256i l = _mm256_shuffle_epi8(tl, ix), h = _mm256_shuffle_epi8(th, ix);
    __m256i a = _mm256_unpacklo_epi8(l, h), b = _mm256_unpackhi_epi8(l, h);
    hg_s8_st32(d, _mm256_permute2x128_si256(a, b, 0x20), big);
    hg_s8_st32(d + 16, _mm256_permute2x128_si256(a, b, 0x31), big);
}
static inline __attribute__((always_inline)) void hg_s8_run(
        void *restrict d, const float *tab, const uint8_t *restrict p, int bits, float s,
        uint32_t g, int big, int conv, hg_s8_fmt_t *f) {
    uint32_t j = 0;
    // Codes 2 KiB ahead: runs of single MX blocks read so few bytes per call that the hardware
    // prefetchers fell behind once non-temporal stores took the memory bus (loads stalled).
    _mm_prefetch((const char *)p + 2048, _MM_HINT_T0);
    __m256 lo = _mm256_loadu_ps(tab), hi = bits == 4 ? _mm256_loadu_ps(tab + 8) : lo;
    int e = 0;
    if (f && (bits != 4 || (conv == 1 && g >= 4u))) {
        if (f->tab != tab || f->bits != bits) hg_s8_fmt_check(f, tab, bits);
        e = hg_s8_exp(s, f);
    }
#ifdef HG_S8Z
    // 6-/8-bit runs of whole 32-code blocks: a block per 512-bit register (host_scale8).
    if (f && bits != 4 && conv != 2) j = hg_s8z_run(d, p, bits, s, g, big, conv, f);
    if (j == g) return;
#endif
    if (bits == 4 && g >= 4u) {
        __m256i t;
        if (e) {
            t = _mm256_add_epi16(f->t16, _mm256_and_si256(
                f->nz, _mm256_set1_epi16((short)((e - 127) << 7))));
        } else {
            __m256i a = hg_s8_cv(hg_s8_scale(lo, s), conv), b = hg_s8_cv(hg_s8_scale(hi, s), conv);
            for (; conv == 0 && j < g; j++)
                hg_s8_st32((float *)d + 8u * j, _mm256_castps_si256(hg_s8_t4(
                    _mm256_castsi256_ps(a), _mm256_castsi256_ps(b), p + 4u * j)), big);
            if (conv == 0) return;
            t = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
        }
        t = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(t, _mm256_setr_epi8(
            0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
            0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15)), 0xd8);
        for (; j + 4u <= g; j += 4u)
            hg_s8_sh32((uint16_t *)d + 8u * j, _mm256_permute2x128_si256(t, t, 0x00),
                       _mm256_permute2x128_si256(t, t, 0x11), p + 4u * j, big);
    } else if (e) {
        hg_s8_fmt_t h = *f;
        __m256i sp0 = conv == 1 ? h.bp[0] : h.sp[0], sp1 = conv == 1 ? h.bp[1] : h.sp[1];
        int x = e - 127 - ((1 << (bits - 2 - h.m)) - 1) - h.m;
        // 16 codes at a time in 16-bit lanes: f16 where no normal code's value is subnormal
        // (the exponent offset in 6 bits), float as bf16 widened (exact: values of at most four
        // significant bits) when the top entries are.
        int w = conv == 2 ? 10 : 7, ob = conv == 2 ? 15 : 127;
        if (bits > 4 && h.k >= (1 << (bits - 1)) - 8 && (conv != 0 || h.top0)
                && (conv != 2 || (e >= h.eln + 112 && x + h.m + ob < 64))) {
            __m256i x16 = _mm256_set1_epi16((short)((x + h.m + ob) << w));
            __m256i lo16 = _mm256_and_si256(h.nz16, _mm256_or_si256(
                h.mb16, _mm256_sll_epi16(_mm256_add_epi16(
                    h.ex16, _mm256_set1_epi16((short)(e - 254 + ob))), _mm_cvtsi32_si128(w))));
#if defined(__F16C__)
            // f16 (asked for only with F16C): s * T(c) rounded as the oracle rounds it.
            if (conv == 2)
                lo16 = _mm256_and_si256(h.nz16, _mm256_broadcastsi128_si256(_mm256_cvtps_ph(
                    _mm256_mul_ps(lo, _mm256_set1_ps(s)), _MM_FROUND_TO_NEAREST_INT)));
#endif
            for (; j + 2u <= g; j += 2u) {
                __m256i v = hg_s8_b16(hg_s8_codes16(p + (size_t)bits * j, bits), &h, x16, lo16,
                                      h.hi16[conv], w);
                if (conv == 0) {
                    __m256i a = _mm256_unpacklo_epi16(_mm256_setzero_si256(), v);
                    __m256i b = _mm256_unpackhi_epi16(_mm256_setzero_si256(), v);
                    hg_s8_st32((float *)d + 8u * j, _mm256_permute2x128_si256(a, b, 0x20), big);
                    hg_s8_st32((float *)d + 8u * j + 8, _mm256_permute2x128_si256(a, b, 0x31), big);
                } else {
                    hg_s8_st32((uint16_t *)d + 8u * j, v, big);
                }
            }
        }
        for (; conv == 0 && j < g; j++)
            hg_s8_st32((float *)d + 8u * j, hg_s8_fast(hg_s8_codes(p + (size_t)bits * j, bits),
                                                       &h, x, sp0, sp1), big);
        for (; j + 2u <= g; j += 2u) {
            __m256i v = hg_s8_fast(hg_s8_codes(p + (size_t)bits * j, bits), &h, x, sp0, sp1);
            __m256i w = hg_s8_fast(hg_s8_codes(p + (size_t)bits * (j + 1u), bits), &h, x, sp0,
                                   sp1);
            v = conv == 1 ? _mm256_srli_epi32(v, 16) : hg_s8_cv(v, conv);  // exact: no rounding
            w = conv == 1 ? _mm256_srli_epi32(w, 16) : hg_s8_cv(w, conv);
            hg_s8_st32((uint16_t *)d + 8u * j, _mm256_permute4x64_epi64(
                _mm256_packus_epi32(v, w), 0xd8), big);
        }
    }
    for (; j < g; j++) {
        const uint8_t *q = p + (size_t)bits * j;
        __m256i v = hg_s8_cv(hg_s8_scale(bits == 4 ? hg_s8_t4(lo, hi, q)
                                         : hg_s8_pick(tab, q, bits), s), conv);
        if (conv == 0) hg_s8_st32((float *)d + 8u * j, v, big);
        else hg_s8_st16((uint16_t *)d + 8u * j, _mm_packus_epi32(
            _mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)), big);
    }
}
// AFFINE8: sixteen (then eight) codes widened to int32_t lanes (sign-extended when sx), minus z,
// converted (to nearest even, as C's conversion), times s, then SCALE8's output conversion and
// stores: no table, so 8-bit affine codes (Q8_0) load nothing but their own bytes. With s
// finite no product is NaN (the codes' values are finite), so the conversion skips the NaN
// rules: f16 is F16C's rounding alone, bf16 the helper's rounding add.
static inline __m256i hg_a8_bf16(__m256i b) {
    return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)),
        _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1))), 16);
}
static inline __attribute__((always_inline)) void hg_a8_run(
        void *restrict d, const uint8_t *restrict p, uint32_t sx, int32_t z, float s,
        uint32_t g, int big, int conv) {
    __m256i vz = _mm256_set1_epi32(z);
    __m256 vs = _mm256_set1_ps(s);
    uint32_t j = 0, sb;
    memcpy(&sb, &s, 4);
    int fin = (sb & 0x7f800000u) != 0x7f800000u;
    // A normal (or zero) s makes every nonzero product normal: AVX512-BF16's conversion,
    // which treats subnormal inputs as zero, then rounds every product as the helper does.
    int nrm = fin && ((sb & 0x7f800000u) != 0u || (sb & 0x7fffffffu) == 0u);
    (void)nrm;
    _mm_prefetch((const char *)p + 2048, _MM_HINT_T0);
#define HG_A8(c) _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(         sx ? _mm256_cvtepi8_epi32(c) : _mm256_cvtepu8_epi32(c), vz)), vs)
    for (; j + 2u <= g; j += 2u) {
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(p + 8u * j));
        __m256 a = HG_A8(c), b = HG_A8(_mm_unpackhi_epi64(c, c));
        __m256i x = _mm256_castps_si256(a), y = _mm256_castps_si256(b);
        if (conv == 0) {
            hg_s8_st32((float *)d + 8u * j, x, big);
            hg_s8_st32((float *)d + 8u * j + 8, y, big);
            continue;
        }
#if defined(__F16C__)
        if (conv == 2 && fin) {
            hg_s8_st32((uint16_t *)d + 8u * j, _mm256_set_m128i(
                _mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT),
                _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT)), big);
            continue;
        }
#endif
#if defined(__AVX512BF16__) && defined(__AVX512VL__)
        if (conv == 1 && nrm) {
            hg_s8_st32((uint16_t *)d + 8u * j, _mm256_set_m128i((__m128i)_mm256_cvtneps_pbh(b),
                                                                (__m128i)_mm256_cvtneps_pbh(a)), big);
            continue;
        }
#endif
        x = fin ? hg_a8_bf16(x) : hg_s8_cv(x, conv);
        y = fin ? hg_a8_bf16(y) : hg_s8_cv(y, conv);
        hg_s8_st32((uint16_t *)d + 8u * j, _mm256_permute4x64_epi64(
            _mm256_packus_epi32(x, y), 0xd8), big);
    }
    for (; j < g; j++) {
        __m256i v = _mm256_castps_si256(HG_A8(_mm_loadl_epi64(
            (const __m128i *)(const void *)(p + 8u * j))));
        if (conv == 0) {
            hg_s8_st32((float *)d + 8u * j, v, big);
            continue;
        }
        v = hg_s8_cv(v, conv);
        hg_s8_st16((uint16_t *)d + 8u * j, _mm_packus_epi32(
            _mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)), big);
    }
#undef HG_A8
}
#else
typedef struct { const float *tab; } hg_s8_fmt_t;
static inline void hg_s8_fence(void) {}
#endif
#if defined(__AVX2__)
#ifdef HG_S8Z
static inline __attribute__((always_inline)) void hg_nf_block(
        void *restrict o, const uint8_t *restrict q, __m512 tz, float s, uint32_t g, int big,
        int conv) {
    __m512 v = _mm512_mul_ps(tz, _mm512_set1_ps(s));
    __m256i w16;
    if (conv == 0) {  // float: 16 codes per permute of the 16 products, even and odd interleaved
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
// Block q's scale by kind (0: e8m0 byte, 1: float word, NF4's absmax, 2: f16 half, the affine
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
        uint32_t e = (h >> 10) & 31u, m = h & 1023u;  // f16 -> float, exact (e 31: bad anyway)
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
    // (NF4 into float kept hg_s8_run's permutes: no faster this way, measured)
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
// 32 8-bit affine codes (AFFINE8's arithmetic) from q to o: float, bf16 (AVX512-BF16's
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

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (float)((hg_v)))
#define load_data(hg_i) ((uint32_t)(data[(hg_i)]))
#define load_lut(hg_i) (lut[(hg_i)])
#define load_scales(hg_i) ((uint32_t)(scales[(hg_i)]))
#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint32_t)((hg_v)))

static inline void dequant_lut_f32_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, hg_s8_fmt_t *restrict hg_s8_c, float *restrict dst, const uint8_t *restrict data, const float *restrict lut, const uint8_t *restrict scales, uint32_t *restrict err, uint32_t n, uint32_t ept, uint32_t doff, uint32_t bits, uint32_t chk, uint32_t mode, uint32_t nparam, uint32_t inner, uint32_t dm1, uint32_t dsh1, uint32_t ssize, uint32_t dm2, uint32_t dsh2, uint32_t omul, uint32_t kshift) {
    uint32_t first = hg_gid0 * ept;
    if (first >= n) return;
    uint32_t last = hg_umin(first + ept, n);
    uint32_t t1 = hg_umulhi(first, dm1);
    uint32_t q1 = (t1 + ((first - t1) >> (dsh1 & 255u))) >> (dsh1 >> 8u);
    uint32_t r = first - q1 * inner;
    uint32_t t2 = hg_umulhi(q1, dm2);
    uint32_t o = (t2 + ((q1 - t2) >> (dsh2 & 255u))) >> (dsh2 >> 8u);
    uint32_t a = q1 - o * ssize;
    uint32_t i = first;
    float s = 1.0f;
    while (i < last) {
        uint32_t end = last;
        if (mode != 0u) {
            uint32_t p = (o * inner + r) * omul + (a >> kshift);
            if (p >= nparam) {
                store_err(0u, 2u);
                return;
            }
            uint32_t run = 1u;
            if (inner == 1u) run = hg_umin((1u << kshift) - (a & ((1u << kshift) - 1u)), ssize - a);
            end = hg_umin(i + run, last);
            if (mode == 1u) {
                uint32_t at = p * 4u;
                uint32_t w = load_scales(at) | (load_scales(at + 1u) << 8u)
                        | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                // absmax must be finite and >= 0 (-0.0 included).
                if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                s = hg_as_f32(w);
            } else {
                uint32_t e = load_scales(p);
                if (e == 0u || e == 255u) store_err(0u, 1u);
                s = hg_as_f32(e << 23u);
            }
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
        if (mode == 1u) {
            if (end - i >= 32u && (mode == 1u)) {
                uint32_t stop = end;
                end = hg_umin(stop, (i + 7u) & 0xfffffff8u);
                for (; i < end; i++) {
                    uint32_t code = 0u;
                    if (bits == 8u) {
                        code = load_data(doff + i);
                    } else if (bits < 8u) {
                        uint32_t bit = i * bits;
                        uint32_t at = doff + (bit >> 3u);
                        uint32_t sh = bit & 7u;
                        code = load_data(at) >> sh;
                        if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                        code = code & ((1u << bits) - 1u);
                    } else if (bits == 16u) {
                        uint32_t at = doff + i * 2u;
                        code = load_data(at) | (load_data(at + 1u) << 8u);
                    } else {
                        uint32_t at = doff + i * 4u;
                        code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                               | (load_data(at + 3u) << 24u);
                    }
                    {
                        uint32_t k = i;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                }
                end = stop;
                uint32_t ngrp = (end - i) >> 3u;
                uint32_t gat = doff + (i >> 3u) * bits;
                if (bits == 4u) {

    #if defined(__AVX2__)
    hg_s8_run(dst + (i), lut, data + (gat), 4, s, ngrp, hg_big(n, 4u), 0, hg_s8_c);
    #else
    for (uint32_t hg_j = 0u; hg_j < ngrp; hg_j++) { uint32_t hg_at = gat + 4u * hg_j; uint32_t hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 15u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
    #endif

                } else if (bits == 6u) {

    #if defined(__AVX2__)
    hg_s8_run(dst + (i), lut, data + (gat), 6, s, ngrp, hg_big(n, 4u), 0, hg_s8_c);
    #else
    for (uint32_t hg_j = 0u; hg_j < ngrp; hg_j++) { uint32_t hg_at = gat + 6u * hg_j; uint32_t hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 63u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(((load_data(hg_at) | (load_data(hg_at + 1u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(((load_data(hg_at + 1u) | (load_data(hg_at + 2u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 2u) >> 2u) & 63u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 3u) & 63u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(((load_data(hg_at + 3u) | (load_data(hg_at + 4u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(((load_data(hg_at + 4u) | (load_data(hg_at + 5u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 5u) >> 2u) & 63u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
    #endif

                } else if (bits == 8u) {

    #if defined(__AVX2__)
    hg_s8_run(dst + (i), lut, data + (gat), 8, s, ngrp, hg_big(n, 4u), 0, hg_s8_c);
    #else
    for (uint32_t hg_j = 0u; hg_j < ngrp; hg_j++) { uint32_t hg_at = gat + 8u * hg_j; uint32_t hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 255u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(load_data(hg_at + 1u) & 255u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 2u) & 255u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut(load_data(hg_at + 3u) & 255u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 4u) & 255u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(load_data(hg_at + 5u) & 255u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 6u) & 255u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut(load_data(hg_at + 7u) & 255u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
    #endif

                }
                i = i + 8u * ngrp;
                for (; i < end; i++) {
                    uint32_t code = 0u;
                    if (bits == 8u) {
                        code = load_data(doff + i);
                    } else if (bits < 8u) {
                        uint32_t bit = i * bits;
                        uint32_t at = doff + (bit >> 3u);
                        uint32_t sh = bit & 7u;
                        code = load_data(at) >> sh;
                        if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                        code = code & ((1u << bits) - 1u);
                    } else if (bits == 16u) {
                        uint32_t at = doff + i * 2u;
                        code = load_data(at) | (load_data(at + 1u) << 8u);
                    } else {
                        uint32_t at = doff + i * 4u;
                        code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                               | (load_data(at + 3u) << 24u);
                    }
                    {
                        uint32_t k = i;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                }
                if (inner == 1u && mode != 0u && (i & 7u) == 0u && (1u << kshift) >= 32u
                    && (a & ((1u << kshift) - 1u)) == 0u && a < ssize) {
                    uint32_t p = o * omul + (a >> kshift);
                    uint32_t nblk = hg_umin(ssize - a, last - i) >> kshift;
                    nblk = hg_umin(nblk, nparam - hg_umin(p, nparam));
                    uint32_t gb = 1u << (kshift - 3u);
                    uint32_t pend = p + nblk;
                    if (bits == 4u) {
                        if (mode == 1u) {
                            uint32_t nq = pend - p;
                            uint32_t bat = doff + (i >> 3u) * bits;

    #if defined(__AVX2__)
    if (hg_mx_run(dst + (i), lut, data + (bat), 4, scales + (p) * 4u, gb, nq, hg_big(n, 4u), 0, hg_s8_c, 1)) store_err(0u, 1u);
    #else
    for (uint32_t hg_q = 0u; hg_q < nq; hg_q++) { uint32_t hg_w4 = (p + hg_q) * 4u; uint32_t hg_e = (load_scales(hg_w4 + 0u) << 0u) | (load_scales(hg_w4 + 1u) << 8u) | (load_scales(hg_w4 + 2u) << 16u) | (load_scales(hg_w4 + 3u) << 24u); if ((hg_e & 0x7f800000u) == 0x7f800000u || hg_e > 0x80000000u) store_err(0u, 1u); float hg_s = hg_as_f32(hg_e); uint32_t hg_qa = bat + 4u * gb * hg_q; uint32_t hg_qk = (i) + 8u * gb * hg_q; for (uint32_t hg_j = 0u; hg_j < gb; hg_j++) { uint32_t hg_at = hg_qa + 4u * hg_j; uint32_t hg_k = hg_qk + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 15u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_lut((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_lut(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_lut((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_lut(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_lut((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_lut(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_lut((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
    #endif

                            i = i + 8u * gb * nq;
                            p = pend;
                        }
                        for (; p < pend; p++) {
                            if (mode == 1u) {
                                uint32_t at = p * 4u;
                                uint32_t w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                        | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                // absmax must be finite and >= 0 (-0.0 included).
                                if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                                s = hg_as_f32(w);
                            } else {
                                uint32_t e = load_scales(p);
                                if (e == 0u || e == 255u) store_err(0u, 1u);
                                s = hg_as_f32(e << 23u);
                            }
                            uint32_t bat = doff + (i >> 3u) * bits;

    #if defined(__AVX2__)
    hg_s8_run(dst + (i), lut, data + (bat), 4, s, gb, hg_big(n, 4u), 0, hg_s8_c);
    #else
    for (uint32_t hg_j = 0u; hg_j < gb; hg_j++) { uint32_t hg_at = bat + 4u * hg_j; uint32_t hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 15u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
    #endif

                            i = i + 8u * gb;
                        }
                    } else {
                        if (bits == 6u) {
                            if (mode == 1u) {
                                uint32_t nq = pend - p;
                                uint32_t bat = doff + (i >> 3u) * bits;

    #if defined(__AVX2__)
    if (hg_mx_run(dst + (i), lut, data + (bat), 6, scales + (p) * 4u, gb, nq, hg_big(n, 4u), 0, hg_s8_c, 1)) store_err(0u, 1u);
    #else
    for (uint32_t hg_q = 0u; hg_q < nq; hg_q++) { uint32_t hg_w4 = (p + hg_q) * 4u; uint32_t hg_e = (load_scales(hg_w4 + 0u) << 0u) | (load_scales(hg_w4 + 1u) << 8u) | (load_scales(hg_w4 + 2u) << 16u) | (load_scales(hg_w4 + 3u) << 24u); if ((hg_e & 0x7f800000u) == 0x7f800000u || hg_e > 0x80000000u) store_err(0u, 1u); float hg_s = hg_as_f32(hg_e); uint32_t hg_qa = bat + 6u * gb * hg_q; uint32_t hg_qk = (i) + 8u * gb * hg_q; for (uint32_t hg_j = 0u; hg_j < gb; hg_j++) { uint32_t hg_at = hg_qa + 6u * hg_j; uint32_t hg_k = hg_qk + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 63u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_lut(((load_data(hg_at) | (load_data(hg_at + 1u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_lut(((load_data(hg_at + 1u) | (load_data(hg_at + 2u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_lut((load_data(hg_at + 2u) >> 2u) & 63u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_lut(load_data(hg_at + 3u) & 63u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_lut(((load_data(hg_at + 3u) | (load_data(hg_at + 4u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_lut(((load_data(hg_at + 4u) | (load_data(hg_at + 5u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_lut((load_data(hg_at + 5u) >> 2u) & 63u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
    #endif

                                i = i + 8u * gb * nq;
                                p = pend;
                            }
                            for (; p < pend; p++) {
                                if (mode == 1u) {
                                    uint32_t at = p * 4u;
                                    uint32_t w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                            | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                    // absmax must be finite and >= 0 (-0.0 included).
                                    if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                                    s = hg_as_f32(w);
                                } else {
                                    uint32_t e = load_scales(p);
                                    if (e == 0u || e == 255u) store_err(0u, 1u);
                                    s = hg_as_f32(e << 23u);
                                }
                                uint32_t bat = doff + (i >> 3u) * bits;

    #if defined(__AVX2__)
    hg_s8_run(dst + (i), lut, data + (bat), 6, s, gb, hg_big(n, 4u), 0, hg_s8_c);
    #else
    for (uint32_t hg_j = 0u; hg_j < gb; hg_j++) { uint32_t hg_at = bat + 6u * hg_j; uint32_t hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 63u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(((load_data(hg_at) | (load_data(hg_at + 1u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(((load_data(hg_at + 1u) | (load_data(hg_at + 2u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 2u) >> 2u) & 63u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 3u) & 63u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(((load_data(hg_at + 3u) | (load_data(hg_at + 4u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(((load_data(hg_at + 4u) | (load_data(hg_at + 5u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 5u) >> 2u) & 63u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
    #endif

                                i = i + 8u * gb;
                            }
                        } else {
                            if (bits == 8u) {
                                if (mode == 1u) {
                                    uint32_t nq = pend - p;
                                    uint32_t bat = doff + (i >> 3u) * bits;

    #if defined(__AVX2__)
    if (hg_mx_run(dst + (i), lut, data + (bat), 8, scales + (p) * 4u, gb, nq, hg_big(n, 4u), 0, hg_s8_c, 1)) store_err(0u, 1u);
    #else
    for (uint32_t hg_q = 0u; hg_q < nq; hg_q++) { uint32_t hg_w4 = (p + hg_q) * 4u; uint32_t hg_e = (load_scales(hg_w4 + 0u) << 0u) | (load_scales(hg_w4 + 1u) << 8u) | (load_scales(hg_w4 + 2u) << 16u) | (load_scales(hg_w4 + 3u) << 24u); if ((hg_e & 0x7f800000u) == 0x7f800000u || hg_e > 0x80000000u) store_err(0u, 1u); float hg_s = hg_as_f32(hg_e); uint32_t hg_qa = bat + 8u * gb * hg_q; uint32_t hg_qk = (i) + 8u * gb * hg_q; for (uint32_t hg_j = 0u; hg_j < gb; hg_j++) { uint32_t hg_at = hg_qa + 8u * hg_j; uint32_t hg_k = hg_qk + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 255u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_lut(load_data(hg_at + 1u) & 255u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_lut(load_data(hg_at + 2u) & 255u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_lut(load_data(hg_at + 3u) & 255u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_lut(load_data(hg_at + 4u) & 255u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_lut(load_data(hg_at + 5u) & 255u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_lut(load_data(hg_at + 6u) & 255u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_lut(load_data(hg_at + 7u) & 255u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
    #endif

                                    i = i + 8u * gb * nq;
                                    p = pend;
                                }
                                for (; p < pend; p++) {
                                    if (mode == 1u) {
                                        uint32_t at = p * 4u;
                                        uint32_t w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                                | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                        // absmax must be finite and >= 0 (-0.0 included).
                                        if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                                        s = hg_as_f32(w);
                                    } else {
                                        uint32_t e = load_scales(p);
                                        if (e == 0u || e == 255u) store_err(0u, 1u);
                                        s = hg_as_f32(e << 23u);
                                    }
                                    uint32_t bat = doff + (i >> 3u) * bits;

    #if defined(__AVX2__)
    hg_s8_run(dst + (i), lut, data + (bat), 8, s, gb, hg_big(n, 4u), 0, hg_s8_c);
    #else
    for (uint32_t hg_j = 0u; hg_j < gb; hg_j++) { uint32_t hg_at = bat + 8u * hg_j; uint32_t hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 255u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(load_data(hg_at + 1u) & 255u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 2u) & 255u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut(load_data(hg_at + 3u) & 255u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 4u) & 255u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(load_data(hg_at + 5u) & 255u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 6u) & 255u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut(load_data(hg_at + 7u) & 255u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
    #endif

                                    i = i + 8u * gb;
                                }
                            } else {
                            }
                        }
                    }
                    a = a + (nblk << kshift);
                    if (a == ssize) {
                        a = 0u;
                        o = o + 1u;
                    }
                }
            }
            else if (bits == 4u) {
                if ((i & 1u) != 0u && i < end) {
                    {
                        uint32_t code = load_data(doff + (i >> 1u)) >> 4u;
                        uint32_t k = i;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                    i = i + 1u;
                }
                for (; i + 1u < end; i += 2u) {
                    uint32_t pair = load_data(doff + (i >> 1u));
                    {
                        uint32_t code = pair & 15u;
                        uint32_t k = i;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                    {
                        uint32_t code = pair >> 4u;
                        uint32_t k = i + 1u;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                }
                if (i < end) {
                    {
                        uint32_t code = load_data(doff + (i >> 1u)) & 15u;
                        uint32_t k = i;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                    i = i + 1u;
                }
            }
            else if (bits == 8u && doff == 0u) {
                for (; i < end; i++) {
                    {
                        uint32_t code = load_data(i);
                        uint32_t k = i;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                }
            }
            else if (bits == 6u) {
                for (; i < end && (i & 3u) != 0u; i++) {
                    {
                        uint32_t code = ((load_data(doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? load_data(doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u;
                        uint32_t k = i;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                }
                uint32_t ngroup = (end - i) >> 2u;
                uint32_t gat = doff + (i >> 2u) * 3u;
                for (uint32_t j = 0u; j < ngroup; j++) {
                    uint32_t b = gat + 3u * j;
                    uint32_t w = load_data(b) | (load_data(b + 1u) << 8u) | (load_data(b + 2u) << 16u);
                    uint32_t gk = i + 4u * j;
                    {
                        uint32_t code = w & 63u;
                        uint32_t k = gk;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                    {
                        uint32_t code = (w >> 6u) & 63u;
                        uint32_t k = gk + 1u;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                    {
                        uint32_t code = (w >> 12u) & 63u;
                        uint32_t k = gk + 2u;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                    {
                        uint32_t code = (w >> 18u) & 63u;
                        uint32_t k = gk + 3u;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                }
                i = i + 4u * ngroup;
                for (; i < end; i++) {
                    {
                        uint32_t code = ((load_data(doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? load_data(doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u;
                        uint32_t k = i;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                }
            }
            else {
                for (; i < end; i++) {
                    uint32_t code = 0u;
                    if (bits == 8u) {
                        code = load_data(doff + i);
                    } else if (bits < 8u) {
                        uint32_t bit = i * bits;
                        uint32_t at = doff + (bit >> 3u);
                        uint32_t sh = bit & 7u;
                        code = load_data(at) >> sh;
                        if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                        code = code & ((1u << bits) - 1u);
                    } else if (bits == 16u) {
                        uint32_t at = doff + i * 2u;
                        code = load_data(at) | (load_data(at + 1u) << 8u);
                    } else {
                        uint32_t at = doff + i * 4u;
                        code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                               | (load_data(at + 3u) << 24u);
                    }
                    {
                        uint32_t k = i;
                        float v = s * load_lut(code);
                        store_dst(k, v);
                    }
                }
            }
        } else {
            if (end - i >= 32u && (chk == 0u && (bits == 4u || bits == 6u || bits == 8u))) {
                uint32_t stop = end;
                end = hg_umin(stop, (i + 7u) & 0xfffffff8u);
                for (; i < end; i++) {
                    uint32_t code = 0u;
                    if (bits == 8u) {
                        code = load_data(doff + i);
                    } else if (bits < 8u) {
                        uint32_t bit = i * bits;
                        uint32_t at = doff + (bit >> 3u);
                        uint32_t sh = bit & 7u;
                        code = load_data(at) >> sh;
                        if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                        code = code & ((1u << bits) - 1u);
                    } else if (bits == 16u) {
                        uint32_t at = doff + i * 2u;
                        code = load_data(at) | (load_data(at + 1u) << 8u);
                    } else {
                        uint32_t at = doff + i * 4u;
                        code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                               | (load_data(at + 3u) << 24u);
                    }
                    {
                        uint32_t k = i;
                        if (chk != 0u && (code == 0u || code == 255u)) store_err(0u, 1u);
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                }
                end = stop;
                uint32_t ngrp = (end - i) >> 3u;
                uint32_t gat = doff + (i >> 3u) * bits;
                if (bits == 4u) {

    #if defined(__AVX2__)
    hg_s8_run(dst + (i), lut, data + (gat), 4, s, ngrp, hg_big(n, 4u), 0, hg_s8_c);
    #else
    for (uint32_t hg_j = 0u; hg_j < ngrp; hg_j++) { uint32_t hg_at = gat + 4u * hg_j; uint32_t hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 15u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
    #endif

                } else if (bits == 6u) {

    #if defined(__AVX2__)
    hg_s8_run(dst + (i), lut, data + (gat), 6, s, ngrp, hg_big(n, 4u), 0, hg_s8_c);
    #else
    for (uint32_t hg_j = 0u; hg_j < ngrp; hg_j++) { uint32_t hg_at = gat + 6u * hg_j; uint32_t hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 63u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(((load_data(hg_at) | (load_data(hg_at + 1u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(((load_data(hg_at + 1u) | (load_data(hg_at + 2u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 2u) >> 2u) & 63u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 3u) & 63u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(((load_data(hg_at + 3u) | (load_data(hg_at + 4u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(((load_data(hg_at + 4u) | (load_data(hg_at + 5u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 5u) >> 2u) & 63u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
    #endif

                } else if (bits == 8u) {

    #if defined(__AVX2__)
    hg_s8_run(dst + (i), lut, data + (gat), 8, s, ngrp, hg_big(n, 4u), 0, hg_s8_c);
    #else
    for (uint32_t hg_j = 0u; hg_j < ngrp; hg_j++) { uint32_t hg_at = gat + 8u * hg_j; uint32_t hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 255u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(load_data(hg_at + 1u) & 255u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 2u) & 255u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut(load_data(hg_at + 3u) & 255u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 4u) & 255u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(load_data(hg_at + 5u) & 255u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 6u) & 255u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut(load_data(hg_at + 7u) & 255u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
    #endif

                }
                i = i + 8u * ngrp;
                for (; i < end; i++) {
                    uint32_t code = 0u;
                    if (bits == 8u) {
                        code = load_data(doff + i);
                    } else if (bits < 8u) {
                        uint32_t bit = i * bits;
                        uint32_t at = doff + (bit >> 3u);
                        uint32_t sh = bit & 7u;
                        code = load_data(at) >> sh;
                        if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                        code = code & ((1u << bits) - 1u);
                    } else if (bits == 16u) {
                        uint32_t at = doff + i * 2u;
                        code = load_data(at) | (load_data(at + 1u) << 8u);
                    } else {
                        uint32_t at = doff + i * 4u;
                        code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                               | (load_data(at + 3u) << 24u);
                    }
                    {
                        uint32_t k = i;
                        if (chk != 0u && (code == 0u || code == 255u)) store_err(0u, 1u);
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                }
                if (inner == 1u && mode != 0u && (i & 7u) == 0u && (1u << kshift) >= 32u
                    && (a & ((1u << kshift) - 1u)) == 0u && a < ssize) {
                    uint32_t p = o * omul + (a >> kshift);
                    uint32_t nblk = hg_umin(ssize - a, last - i) >> kshift;
                    nblk = hg_umin(nblk, nparam - hg_umin(p, nparam));
                    uint32_t gb = 1u << (kshift - 3u);
                    uint32_t pend = p + nblk;
                    if (bits == 4u) {
                        if (mode == 2u) {
                            uint32_t nq = pend - p;
                            uint32_t bat = doff + (i >> 3u) * bits;

    #if defined(__AVX2__)
    if (hg_mx_run(dst + (i), lut, data + (bat), 4, scales + (p), gb, nq, hg_big(n, 4u), 0, hg_s8_c, 0)) store_err(0u, 1u);
    #else
    for (uint32_t hg_q = 0u; hg_q < nq; hg_q++) { uint32_t hg_e = load_scales(p + hg_q); if (hg_e == 0u || hg_e == 255u) store_err(0u, 1u); float hg_s = hg_as_f32(hg_e << 23u); uint32_t hg_qa = bat + 4u * gb * hg_q; uint32_t hg_qk = (i) + 8u * gb * hg_q; for (uint32_t hg_j = 0u; hg_j < gb; hg_j++) { uint32_t hg_at = hg_qa + 4u * hg_j; uint32_t hg_k = hg_qk + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 15u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_lut((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_lut(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_lut((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_lut(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_lut((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_lut(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_lut((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
    #endif

                            i = i + 8u * gb * nq;
                            p = pend;
                        }
                        for (; p < pend; p++) {
                            if (mode == 1u) {
                                uint32_t at = p * 4u;
                                uint32_t w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                        | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                // absmax must be finite and >= 0 (-0.0 included).
                                if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                                s = hg_as_f32(w);
                            } else {
                                uint32_t e = load_scales(p);
                                if (e == 0u || e == 255u) store_err(0u, 1u);
                                s = hg_as_f32(e << 23u);
                            }
                            uint32_t bat = doff + (i >> 3u) * bits;

    #if defined(__AVX2__)
    hg_s8_run(dst + (i), lut, data + (bat), 4, s, gb, hg_big(n, 4u), 0, hg_s8_c);
    #else
    for (uint32_t hg_j = 0u; hg_j < gb; hg_j++) { uint32_t hg_at = bat + 4u * hg_j; uint32_t hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 15u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
    #endif

                            i = i + 8u * gb;
                        }
                    } else {
                        if (bits == 6u) {
                            if (mode == 2u) {
                                uint32_t nq = pend - p;
                                uint32_t bat = doff + (i >> 3u) * bits;

    #if defined(__AVX2__)
    if (hg_mx_run(dst + (i), lut, data + (bat), 6, scales + (p), gb, nq, hg_big(n, 4u), 0, hg_s8_c, 0)) store_err(0u, 1u);
    #else
    for (uint32_t hg_q = 0u; hg_q < nq; hg_q++) { uint32_t hg_e = load_scales(p + hg_q); if (hg_e == 0u || hg_e == 255u) store_err(0u, 1u); float hg_s = hg_as_f32(hg_e << 23u); uint32_t hg_qa = bat + 6u * gb * hg_q; uint32_t hg_qk = (i) + 8u * gb * hg_q; for (uint32_t hg_j = 0u; hg_j < gb; hg_j++) { uint32_t hg_at = hg_qa + 6u * hg_j; uint32_t hg_k = hg_qk + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 63u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_lut(((load_data(hg_at) | (load_data(hg_at + 1u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_lut(((load_data(hg_at + 1u) | (load_data(hg_at + 2u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_lut((load_data(hg_at + 2u) >> 2u) & 63u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_lut(load_data(hg_at + 3u) & 63u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_lut(((load_data(hg_at + 3u) | (load_data(hg_at + 4u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_lut(((load_data(hg_at + 4u) | (load_data(hg_at + 5u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_lut((load_data(hg_at + 5u) >> 2u) & 63u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
    #endif

                                i = i + 8u * gb * nq;
                                p = pend;
                            }
                            for (; p < pend; p++) {
                                if (mode == 1u) {
                                    uint32_t at = p * 4u;
                                    uint32_t w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                            | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                    // absmax must be finite and >= 0 (-0.0 included).
                                    if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                                    s = hg_as_f32(w);
                                } else {
                                    uint32_t e = load_scales(p);
                                    if (e == 0u || e == 255u) store_err(0u, 1u);
                                    s = hg_as_f32(e << 23u);
                                }
                                uint32_t bat = doff + (i >> 3u) * bits;

    #if defined(__AVX2__)
    hg_s8_run(dst + (i), lut, data + (bat), 6, s, gb, hg_big(n, 4u), 0, hg_s8_c);
    #else
    for (uint32_t hg_j = 0u; hg_j < gb; hg_j++) { uint32_t hg_at = bat + 6u * hg_j; uint32_t hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 63u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(((load_data(hg_at) | (load_data(hg_at + 1u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(((load_data(hg_at + 1u) | (load_data(hg_at + 2u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 2u) >> 2u) & 63u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 3u) & 63u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(((load_data(hg_at + 3u) | (load_data(hg_at + 4u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(((load_data(hg_at + 4u) | (load_data(hg_at + 5u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 5u) >> 2u) & 63u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
    #endif

                                i = i + 8u * gb;
                            }
                        } else {
                            if (bits == 8u) {
                                if (mode == 2u) {
                                    uint32_t nq = pend - p;
                                    uint32_t bat = doff + (i >> 3u) * bits;

    #if defined(__AVX2__)
    if (hg_mx_run(dst + (i), lut, data + (bat), 8, scales + (p), gb, nq, hg_big(n, 4u), 0, hg_s8_c, 0)) store_err(0u, 1u);
    #else
    for (uint32_t hg_q = 0u; hg_q < nq; hg_q++) { uint32_t hg_e = load_scales(p + hg_q); if (hg_e == 0u || hg_e == 255u) store_err(0u, 1u); float hg_s = hg_as_f32(hg_e << 23u); uint32_t hg_qa = bat + 8u * gb * hg_q; uint32_t hg_qk = (i) + 8u * gb * hg_q; for (uint32_t hg_j = 0u; hg_j < gb; hg_j++) { uint32_t hg_at = hg_qa + 8u * hg_j; uint32_t hg_k = hg_qk + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 255u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_lut(load_data(hg_at + 1u) & 255u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_lut(load_data(hg_at + 2u) & 255u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_lut(load_data(hg_at + 3u) & 255u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_lut(load_data(hg_at + 4u) & 255u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_lut(load_data(hg_at + 5u) & 255u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_lut(load_data(hg_at + 6u) & 255u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_lut(load_data(hg_at + 7u) & 255u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
    #endif

                                    i = i + 8u * gb * nq;
                                    p = pend;
                                }
                                for (; p < pend; p++) {
                                    if (mode == 1u) {
                                        uint32_t at = p * 4u;
                                        uint32_t w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                                | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                        // absmax must be finite and >= 0 (-0.0 included).
                                        if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                                        s = hg_as_f32(w);
                                    } else {
                                        uint32_t e = load_scales(p);
                                        if (e == 0u || e == 255u) store_err(0u, 1u);
                                        s = hg_as_f32(e << 23u);
                                    }
                                    uint32_t bat = doff + (i >> 3u) * bits;

    #if defined(__AVX2__)
    hg_s8_run(dst + (i), lut, data + (bat), 8, s, gb, hg_big(n, 4u), 0, hg_s8_c);
    #else
    for (uint32_t hg_j = 0u; hg_j < gb; hg_j++) { uint32_t hg_at = bat + 8u * hg_j; uint32_t hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 255u); store_dst(hg_k, (float)((hg_as_u32(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(load_data(hg_at + 1u) & 255u); store_dst(hg_k + 1u, (float)((hg_as_u32(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 2u) & 255u); store_dst(hg_k + 2u, (float)((hg_as_u32(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut(load_data(hg_at + 3u) & 255u); store_dst(hg_k + 3u, (float)((hg_as_u32(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 4u) & 255u); store_dst(hg_k + 4u, (float)((hg_as_u32(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(load_data(hg_at + 5u) & 255u); store_dst(hg_k + 5u, (float)((hg_as_u32(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 6u) & 255u); store_dst(hg_k + 6u, (float)((hg_as_u32(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut(load_data(hg_at + 7u) & 255u); store_dst(hg_k + 7u, (float)((hg_as_u32(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
    #endif

                                    i = i + 8u * gb;
                                }
                            } else {
                            }
                        }
                    }
                    a = a + (nblk << kshift);
                    if (a == ssize) {
                        a = 0u;
                        o = o + 1u;
                    }
                }
            }
            else if (bits == 4u && chk == 0u) {
                if ((i & 1u) != 0u && i < end) {
                    {
                        uint32_t code = load_data(doff + (i >> 1u)) >> 4u;
                        uint32_t k = i;
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                    i = i + 1u;
                }
                for (; i + 1u < end; i += 2u) {
                    uint32_t pair = load_data(doff + (i >> 1u));
                    {
                        uint32_t code = pair & 15u;
                        uint32_t k = i;
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                    {
                        uint32_t code = pair >> 4u;
                        uint32_t k = i + 1u;
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                }
                if (i < end) {
                    {
                        uint32_t code = load_data(doff + (i >> 1u)) & 15u;
                        uint32_t k = i;
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                    i = i + 1u;
                }
            }
            else if (bits == 8u && doff == 0u && chk == 0u) {
                for (; i < end; i++) {
                    {
                        uint32_t code = load_data(i);
                        uint32_t k = i;
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                }
            }
            else if (bits == 6u && chk == 0u) {
                for (; i < end && (i & 3u) != 0u; i++) {
                    {
                        uint32_t code = ((load_data(doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? load_data(doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u;
                        uint32_t k = i;
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                }
                uint32_t ngroup = (end - i) >> 2u;
                uint32_t gat = doff + (i >> 2u) * 3u;
                for (uint32_t j = 0u; j < ngroup; j++) {
                    uint32_t b = gat + 3u * j;
                    uint32_t w = load_data(b) | (load_data(b + 1u) << 8u) | (load_data(b + 2u) << 16u);
                    uint32_t gk = i + 4u * j;
                    {
                        uint32_t code = w & 63u;
                        uint32_t k = gk;
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                    {
                        uint32_t code = (w >> 6u) & 63u;
                        uint32_t k = gk + 1u;
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                    {
                        uint32_t code = (w >> 12u) & 63u;
                        uint32_t k = gk + 2u;
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                    {
                        uint32_t code = (w >> 18u) & 63u;
                        uint32_t k = gk + 3u;
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                }
                i = i + 4u * ngroup;
                for (; i < end; i++) {
                    {
                        uint32_t code = ((load_data(doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? load_data(doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u;
                        uint32_t k = i;
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                }
            }
            else {
                for (; i < end; i++) {
                    uint32_t code = 0u;
                    if (bits == 8u) {
                        code = load_data(doff + i);
                    } else if (bits < 8u) {
                        uint32_t bit = i * bits;
                        uint32_t at = doff + (bit >> 3u);
                        uint32_t sh = bit & 7u;
                        code = load_data(at) >> sh;
                        if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                        code = code & ((1u << bits) - 1u);
                    } else if (bits == 16u) {
                        uint32_t at = doff + i * 2u;
                        code = load_data(at) | (load_data(at + 1u) << 8u);
                    } else {
                        uint32_t at = doff + i * 4u;
                        code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                               | (load_data(at + 3u) << 24u);
                    }
                    {
                        uint32_t k = i;
                        if (chk != 0u && (code == 0u || code == 255u)) store_err(0u, 1u);
                        float v = load_lut(code);
                        if (mode != 0u && (hg_as_u32(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, v);
                    }
                }
            }
        }
    }
}

static __attribute__((noinline)) void dequant_lut_f32_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, float *restrict dst, const uint8_t *restrict data, const float *restrict lut, const uint8_t *restrict scales, uint32_t *restrict err, uint32_t n, uint32_t ept, uint32_t doff, uint32_t bits, uint32_t chk, uint32_t mode, uint32_t nparam, uint32_t inner, uint32_t dm1, uint32_t dsh1, uint32_t ssize, uint32_t dm2, uint32_t dsh2, uint32_t omul, uint32_t kshift) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    hg_s8_fmt_t hg_s8_c;
    hg_s8_c.tab = NULL;
    for (; hg_t < hg_end; hg_t++) {
        dequant_lut_f32_item(hg_x, hg_y, hg_z, &hg_s8_c, dst, data, lut, scales, err, n, ept, doff, bits, chk, mode, nparam, inner, dm1, dsh1, ssize, dm2, dsh2, omul, kshift);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
    hg_s8_fence();
}

#if defined(HG_THREADS) && !defined(_OPENMP)
static void dequant_lut_f32_task(const hg_job_t *hg_job, int64_t hg_c) {
    void **hg_bufs = hg_job->bufs;
    const uint32_t *hg_words = hg_job->words;
    float *restrict dst = (float *)hg_bufs[0];
    const uint8_t *restrict data = (const uint8_t *)hg_bufs[1];
    const float *restrict lut = (const float *)hg_bufs[2];
    const uint8_t *restrict scales = (const uint8_t *)hg_bufs[3];
    uint32_t *restrict err = (uint32_t *)hg_bufs[4];
    uint32_t n = hg_words[0];
    uint32_t ept = hg_words[1];
    uint32_t doff = hg_words[2];
    uint32_t bits = hg_words[3];
    uint32_t chk = hg_words[4];
    uint32_t mode = hg_words[5];
    uint32_t nparam = hg_words[6];
    uint32_t inner = hg_words[7];
    uint32_t dm1 = hg_words[8];
    uint32_t dsh1 = hg_words[9];
    uint32_t ssize = hg_words[10];
    uint32_t dm2 = hg_words[11];
    uint32_t dsh2 = hg_words[12];
    uint32_t omul = hg_words[13];
    uint32_t kshift = hg_words[14];
    dequant_lut_f32_chunk(hg_c, hg_job->size, hg_job->total, hg_job->n0, hg_job->n1, dst, data, lut, scales, err, n, ept, doff, bits, chk, mode, nparam, inner, dm1, dsh1, ssize, dm2, dsh2, omul, kshift);
}
#endif

void dequant_lut_f32(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    float *restrict dst = (float *)hg_bufs[0];
    const uint8_t *restrict data = (const uint8_t *)hg_bufs[1];
    const float *restrict lut = (const float *)hg_bufs[2];
    const uint8_t *restrict scales = (const uint8_t *)hg_bufs[3];
    uint32_t *restrict err = (uint32_t *)hg_bufs[4];
    uint32_t n = hg_words[0];
    uint32_t ept = hg_words[1];
    uint32_t doff = hg_words[2];
    uint32_t bits = hg_words[3];
    uint32_t chk = hg_words[4];
    uint32_t mode = hg_words[5];
    uint32_t nparam = hg_words[6];
    uint32_t inner = hg_words[7];
    uint32_t dm1 = hg_words[8];
    uint32_t dsh1 = hg_words[9];
    uint32_t ssize = hg_words[10];
    uint32_t dm2 = hg_words[11];
    uint32_t dsh2 = hg_words[12];
    uint32_t omul = hg_words[13];
    uint32_t kshift = hg_words[14];
    int64_t hg_total = hg_n0 * hg_n1 * hg_n2;
    int64_t hg_size = 128;
    int64_t hg_chunks = (hg_total + hg_size - 1) / hg_size;
#ifdef HG_MAX_THREADS
    int64_t hg_want = 8 * (int64_t)HG_MAX_THREADS();
    if (hg_chunks > 1 && hg_chunks < hg_want) {
        hg_size = (hg_total + hg_want - 1) / hg_want;
        hg_chunks = (hg_total + hg_size - 1) / hg_size;
    }
    if (hg_chunks > 1) {
#ifdef _OPENMP
        #pragma omp parallel for schedule(dynamic, 1)
        for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
            dequant_lut_f32_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, data, lut, scales, err, n, ept, doff, bits, chk, mode, nparam, inner, dm1, dsh1, ssize, dm2, dsh2, omul, kshift);
#else
        hg_job_t hg_job = {hg_bufs, hg_words, hg_n0, hg_n1, hg_size, hg_total};
        hg_parallel(dequant_lut_f32_task, &hg_job, hg_chunks);
#endif
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        dequant_lut_f32_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, data, lut, scales, err, n, ept, doff, bits, chk, mode, nparam, inner, dm1, dsh1, ssize, dm2, dsh2, omul, kshift);
}
