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

#if defined(__AVX2__) && !defined(HG_T8_ROWS)
#define HG_T8_ROWS
#include <immintrin.h>
// The 32-bit, then 64-bit unpack stages of a register transpose of n vectors r (P: the
// intrinsics' prefix, _mm256 or _mm512); then u[4i + k] holds, in 128-bit lane l, row 4l + k
// of columns 4i..4i+3.
#define HG_T_UNPACK(P, n, r, t, u) do { \
    for (int k = 0; k < (n); k += 2) { \
        t[k] = P##_unpacklo_epi32(r[k], r[k + 1]); \
        t[k + 1] = P##_unpackhi_epi32(r[k], r[k + 1]); \
    } \
    for (int k = 0; k < (n); k += 4) { \
        u[k] = P##_unpacklo_epi64(t[k], t[k + 2]); \
        u[k + 1] = P##_unpackhi_epi64(t[k], t[k + 2]); \
        u[k + 2] = P##_unpacklo_epi64(t[k + 1], t[k + 3]); \
        u[k + 3] = P##_unpackhi_epi64(t[k + 1], t[k + 3]); \
    } \
} while (0)
static inline void hg_t8_rows(__m256i o[8], const uint32_t *restrict s, uint32_t si, uint32_t sn) {
    __m256i r[8], t[8], u[8];
    for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_si256((const void *)(s + (uint32_t)(si + k * sn)));
    HG_T_UNPACK(_mm256, 8, r, t, u);
    for (int j = 0; j < 4; j++) {
        o[j] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x20);
        o[j + 4] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x31);
    }
}
static inline void hg_t8_u32(uint32_t *restrict d, uint32_t di, uint32_t dn,
                             const uint32_t *restrict s, uint32_t si, uint32_t sn) {
    __m256i o[8];
    hg_t8_rows(o, s, si, sn);
    for (int j = 0; j < 8; j++) _mm256_storeu_si256((void *)(d + (uint32_t)(di + j * dn)), o[j]);
}
#endif

#if defined(__AVX2__) && !defined(HG_Z8_ROWS)
#define HG_Z8_ROWS
#include <immintrin.h>
// Rows j of the 64 words' 8 x 8 Morton group in o[j] (ZORDER16's quarters share it).
static inline void hg_z8_rows(__m256i o[8], const uint32_t *restrict s, uint32_t si) {
    __m256i v[8], w[8];
    for (int i = 0; i < 8; i++)
        v[i] = _mm256_shuffle_epi32(_mm256_loadu_si256((const void *)(s + si + 8 * i)), 0xD8);
    for (int i = 0; i < 8; i += 2) {
        w[i] = _mm256_unpacklo_epi64(v[i], v[i + 1]);
        w[i + 1] = _mm256_unpackhi_epi64(v[i], v[i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        int lo = (i & 1) | ((i << 1) & 4);  // the rows of w[i] | w[i + 4]: lo and lo | 2
        o[lo] = _mm256_permute2x128_si256(w[i], w[i + 4], 0x20);
        o[lo | 2] = _mm256_permute2x128_si256(w[i], w[i + 4], 0x31);
    }
}
static inline void hg_z8_u32(uint32_t *restrict d, uint32_t di, uint32_t dn,
                             const uint32_t *restrict s, uint32_t si, uint32_t unused) {
    __m256i o[8];
    (void)unused;
    hg_z8_rows(o, s, si);
    for (int j = 0; j < 8; j++) _mm256_storeu_si256((void *)(d + (uint32_t)(di + j * dn)), o[j]);
}
#endif

#if defined(__AVX2__) && !defined(HG_T8_ROWS)
#define HG_T8_ROWS
#include <immintrin.h>
// The 32-bit, then 64-bit unpack stages of a register transpose of n vectors r (P: the
// intrinsics' prefix, _mm256 or _mm512); then u[4i + k] holds, in 128-bit lane l, row 4l + k
// of columns 4i..4i+3.
#define HG_T_UNPACK(P, n, r, t, u) do { \
    for (int k = 0; k < (n); k += 2) { \
        t[k] = P##_unpacklo_epi32(r[k], r[k + 1]); \
        t[k + 1] = P##_unpackhi_epi32(r[k], r[k + 1]); \
    } \
    for (int k = 0; k < (n); k += 4) { \
        u[k] = P##_unpacklo_epi64(t[k], t[k + 2]); \
        u[k + 1] = P##_unpackhi_epi64(t[k], t[k + 2]); \
        u[k + 2] = P##_unpacklo_epi64(t[k + 1], t[k + 3]); \
        u[k + 3] = P##_unpackhi_epi64(t[k + 1], t[k + 3]); \
    } \
} while (0)
static inline void hg_t8_rows(__m256i o[8], const uint32_t *restrict s, uint32_t si, uint32_t sn) {
    __m256i r[8], t[8], u[8];
    for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_si256((const void *)(s + (uint32_t)(si + k * sn)));
    HG_T_UNPACK(_mm256, 8, r, t, u);
    for (int j = 0; j < 4; j++) {
        o[j] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x20);
        o[j + 4] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x31);
    }
}
static inline void hg_t8_u32(uint32_t *restrict d, uint32_t di, uint32_t dn,
                             const uint32_t *restrict s, uint32_t si, uint32_t sn) {
    __m256i o[8];
    hg_t8_rows(o, s, si, sn);
    for (int j = 0; j < 8; j++) _mm256_storeu_si256((void *)(d + (uint32_t)(di + j * dn)), o[j]);
}
#endif
#ifndef HG_B16_BASE
#define HG_B16_BASE
#ifndef HG_STREAM_BYTES
#define HG_STREAM_BYTES (32u << 20)
#endif
#ifndef hg_big
#define hg_big(total, size) ((uint64_t)(total) * (size) > (uint64_t)HG_STREAM_BYTES)
#endif
#if defined(__AVX2__)
#include <immintrin.h>
static inline void hg_t16_fence(void) { _mm_sfence(); }
#else
static inline void hg_t16_fence(void) {}
#endif
#endif
#if defined(__AVX2__)
#if defined(__AVX512F__)
static inline void hg_t16_u32(uint32_t *restrict d, uint32_t di, uint32_t dn,
                              const uint32_t *restrict s, uint32_t si, uint32_t sn, int big) {
    __m512i r[16], t[16], u[16], o[16];
    int nt = big && ((((uintptr_t)(d + di)) | ((uintptr_t)dn << 2)) & 63u) == 0u;
    for (int k = 0; k < 16; k++) r[k] = _mm512_loadu_si512((const void *)(s + (uint32_t)(si + k * sn)));
    HG_T_UNPACK(_mm512, 16, r, t, u);
    for (int k = 0; k < 4; k++) {
        __m512i v0 = _mm512_shuffle_i32x4(u[k], u[k + 4], 0x44);
        __m512i v1 = _mm512_shuffle_i32x4(u[k], u[k + 4], 0xEE);
        __m512i w0 = _mm512_shuffle_i32x4(u[k + 8], u[k + 12], 0x44);
        __m512i w1 = _mm512_shuffle_i32x4(u[k + 8], u[k + 12], 0xEE);
        o[k] = _mm512_shuffle_i32x4(v0, w0, 0x88);
        o[k + 4] = _mm512_shuffle_i32x4(v0, w0, 0xDD);
        o[k + 8] = _mm512_shuffle_i32x4(v1, w1, 0x88);
        o[k + 12] = _mm512_shuffle_i32x4(v1, w1, 0xDD);
    }
    for (int j = 0; j < 16; j++) {
        void *p = (void *)(d + (uint32_t)(di + j * dn));
        if (nt) _mm512_stream_si512(p, o[j]);
        else _mm512_storeu_si512(p, o[j]);
    }
}
#else
static inline void hg_t16_u32(uint32_t *restrict d, uint32_t di, uint32_t dn,
                              const uint32_t *restrict s, uint32_t si, uint32_t sn, int big) {
    int nt = big && ((((uintptr_t)(d + di)) | ((uintptr_t)dn << 2)) & 63u) == 0u;
    for (uint32_t h = 0; h < 16u; h += 8u) {
        __m256i a[8], b[8];
        hg_t8_rows(a, s, si + h, sn);
        hg_t8_rows(b, s, si + h + 8u * sn, sn);
        for (uint32_t j = 0; j < 8u; j++) {
            __m256i *p = (__m256i *)(void *)(d + (uint32_t)(di + (h + j) * dn));
            if (nt) { _mm256_stream_si256(p, a[j]); _mm256_stream_si256(p + 1, b[j]); }
            else { _mm256_storeu_si256(p, a[j]); _mm256_storeu_si256(p + 1, b[j]); }
        }
    }
}
#endif
#endif

#if defined(__AVX2__) && !defined(HG_Z8_ROWS)
#define HG_Z8_ROWS
#include <immintrin.h>
// Rows j of the 64 words' 8 x 8 Morton group in o[j] (ZORDER16's quarters share it).
static inline void hg_z8_rows(__m256i o[8], const uint32_t *restrict s, uint32_t si) {
    __m256i v[8], w[8];
    for (int i = 0; i < 8; i++)
        v[i] = _mm256_shuffle_epi32(_mm256_loadu_si256((const void *)(s + si + 8 * i)), 0xD8);
    for (int i = 0; i < 8; i += 2) {
        w[i] = _mm256_unpacklo_epi64(v[i], v[i + 1]);
        w[i + 1] = _mm256_unpackhi_epi64(v[i], v[i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        int lo = (i & 1) | ((i << 1) & 4);  // the rows of w[i] | w[i + 4]: lo and lo | 2
        o[lo] = _mm256_permute2x128_si256(w[i], w[i + 4], 0x20);
        o[lo | 2] = _mm256_permute2x128_si256(w[i], w[i + 4], 0x31);
    }
}
static inline void hg_z8_u32(uint32_t *restrict d, uint32_t di, uint32_t dn,
                             const uint32_t *restrict s, uint32_t si, uint32_t unused) {
    __m256i o[8];
    (void)unused;
    hg_z8_rows(o, s, si);
    for (int j = 0; j < 8; j++) _mm256_storeu_si256((void *)(d + (uint32_t)(di + j * dn)), o[j]);
}
#endif
#ifndef HG_B16_BASE
#define HG_B16_BASE
#ifndef HG_STREAM_BYTES
#define HG_STREAM_BYTES (32u << 20)
#endif
#ifndef hg_big
#define hg_big(total, size) ((uint64_t)(total) * (size) > (uint64_t)HG_STREAM_BYTES)
#endif
#if defined(__AVX2__)
#include <immintrin.h>
static inline void hg_t16_fence(void) { _mm_sfence(); }
#else
static inline void hg_t16_fence(void) {}
#endif
#endif
#if defined(__AVX2__)
static inline void hg_z16_u32(uint32_t *restrict d, uint32_t di, uint32_t dn,
                              const uint32_t *restrict s, uint32_t si, uint32_t unused, int big) {
    int nt = big && ((((uintptr_t)(d + di)) | ((uintptr_t)dn << 2)) & 63u) == 0u;
    (void)unused;
    for (uint32_t h = 0; h < 2u; h++) {
        __m256i a[8], b[8];
        hg_z8_rows(a, s, si + 64u * h);
        hg_z8_rows(b, s, si + 64u * h + 128u);
        for (uint32_t j = 0; j < 8u; j++) {
            __m256i *p = (__m256i *)(void *)(d + (uint32_t)(di + (8u * h + j) * dn));
            if (nt) { _mm256_stream_si256(p, a[j]); _mm256_stream_si256(p + 1, b[j]); }
            else { _mm256_storeu_si256(p, a[j]); _mm256_storeu_si256(p + 1, b[j]); }
        }
    }
}
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint8_t)((hg_v)))
#define load_src(hg_i) ((uint32_t)(src[(hg_i)]))
#define load_tx(hg_i) (tx[(hg_i)])
#define load_ty(hg_i) (ty[(hg_i)])
#define load_tz(hg_i) (tz[(hg_i)])

static inline void layout_sepblk_u8_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, uint8_t *restrict dst, const uint8_t *restrict src, const uint32_t *restrict tx, const uint32_t *restrict ty, const uint32_t *restrict tz, uint32_t nx, uint32_t ny, uint32_t nz, uint32_t wpe, uint32_t woff, uint32_t nsrc, uint32_t bx, uint32_t by) {
    uint32_t x0 = hg_gid0 * bx;
    uint32_t y0 = hg_gid1 * by;
    uint32_t z = hg_gid2;
    if (x0 >= nx || y0 >= ny || z >= nz) return;
    uint32_t x1 = x0 + hg_umin(nx - x0, bx);
    uint32_t y1 = y0 + hg_umin(ny - y0, by);
    uint32_t oz = load_tz(z);
    uint32_t brk = 0u;
    uint32_t mx = load_tx(x0);
    for (uint32_t x = x0 + 1u; x < x1; x++) {
        if (load_tx(x) != load_tx(x - 1u) + 1u) brk = brk | (x - x0);
        mx = hg_umax(mx, load_tx(x));
    }
    uint32_t my = 0u;
    for (uint32_t y = y0; y < y1; y++) my = hg_umax(my, load_ty(y));
    uint32_t hi = woff + oz;
    uint32_t inb = hi >= woff && hi + my >= hi && hi + my + mx >= hi + my && hi + my + mx < nsrc
        ? 1u : 0u;
    uint32_t xd = (brk & 7u) | (wpe - 1u);
    uint32_t yd = xd == 0u ? 1u : wpe - 1u;
    uint32_t zd = yd;
    for (uint32_t y = y0; y + 8u <= y1 && (yd == 0u || zd == 0u); y += 8u) {
        for (uint32_t k = 1u; k < 8u; k++) {
            uint32_t zk = (k & 1u) | ((k & 2u) << 1u) | ((k & 4u) << 2u);
            yd = yd | (load_ty(y + k) ^ (load_ty(y) + k));
            zd = zd | (load_ty(y + k) ^ (load_ty(y) + zk));
        }
    }
    for (uint32_t x = x0; x + 8u <= x1 && zd == 0u; x += 8u) {
        for (uint32_t k = 1u; k < 8u; k++) {
            uint32_t zk = ((k & 1u) << 1u) | ((k & 2u) << 2u) | ((k & 4u) << 3u);
            zd = zd | (load_tx(x + k) ^ (load_tx(x) + zk));
        }
    }
    uint32_t yt = y0;
    uint32_t sc = load_tx(x0 + hg_umin(x1 - x0 - 1u, 1u)) - load_tx(x0);
    uint32_t t16 = yd == 0u && inb == 1u && ((x1 - x0) & 15u) == 0u && ((y1 - y0) & 15u) == 0u ? 1u : 0u;
    for (uint32_t x = x0; x < x1 && t16 == 1u; x++) {
        if (load_tx(x) != load_tx(x0) + (x - x0) * sc) t16 = 0u;
    }
    for (uint32_t y = y0; y < y1 && t16 == 1u; y += 16u) {
        if (load_ty(y + 8u) != load_ty(y) + 8u) t16 = 0u;
    }
    uint32_t z16 = zd == 0u && inb == 1u && ((x1 - x0) & 15u) == 0u && ((y1 - y0) & 15u) == 0u
        ? 1u : 0u;
    for (uint32_t y = y0; y < y1 && z16 == 1u; y += 16u) {
        if (load_ty(y + 8u) != load_ty(y) + 64u) z16 = 0u;
    }
    for (uint32_t x = x0; x < x1 && z16 == 1u; x += 16u) {
        if (load_tx(x + 8u) != load_tx(x) + 128u) z16 = 0u;
    }
    uint32_t nall = nx * ny * nz;
    for (; (t16 == 1u || z16 == 1u) && yt < y1; yt += 16u) {
        uint32_t sb = hi + load_ty(yt);
        uint32_t f = (z * ny + yt) * nx;
        for (uint32_t x = x0; x < x1; x += 16u) {
            uint32_t s0 = sb + load_tx(x);
            if (t16 == 1u) {
                for (uint32_t t8j = 0u; t8j < 16u; t8j++) { for (uint32_t t8k = 0u; t8k < 16u; t8k++) { store_dst((f + x) + t8j * nx + t8k, load_src((s0) + t8k * sc + t8j)); } }
            } else {
                for (uint32_t t8j = 0u; t8j < 16u; t8j++) { for (uint32_t t8k = 0u; t8k < 16u; t8k++) { store_dst((f + x) + t8j * nx + t8k, load_src((s0) + ((t8j & 1u) | ((t8k & 1u) << 1u) | ((t8j & 2u) << 1u) | ((t8k & 2u) << 2u) | ((t8j & 4u) << 2u) | ((t8k & 4u) << 3u) | ((t8j & 8u) << 3u) | ((t8k & 8u) << 4u)))); } }
            }
        }
    }
    for (; (yd == 0u || zd == 0u) && yt + 8u <= y1; yt += 8u) {
        uint32_t sb = hi + load_ty(yt);
        uint32_t f = (z * ny + yt) * nx;
        for (uint32_t x = x0; x < x1; x += 8u) {
            uint32_t xe = hg_umin(x1 - x, 8u);
            uint32_t s0 = sb + load_tx(x);
            uint32_t sd = xe == 8u ? load_tx(x + 1u) - load_tx(x) : 0u;
            uint32_t ok = xe == 8u && (yd == 0u || (s0 + 63u < nsrc && s0 + 63u >= s0)) ? 1u : 0u;
            for (uint32_t k = 0u; k < 8u && ok == 1u && yd == 0u; k++) {
                uint32_t s = sb + load_tx(x + k);
                if (s != s0 + k * sd || s + 7u >= nsrc || s + 7u < s) ok = 0u;
            }
            if (ok == 1u && yd == 0u) {
                for (uint32_t t8j = 0u; t8j < 8u; t8j++) { for (uint32_t t8k = 0u; t8k < 8u; t8k++) { store_dst((f + x) + t8j * nx + t8k, load_src((s0) + t8k * sd + t8j)); } }
            } else if (ok == 1u) {
                for (uint32_t t8j = 0u; t8j < 8u; t8j++) { for (uint32_t t8k = 0u; t8k < 8u; t8k++) { store_dst((f + x) + t8j * nx + t8k, load_src((s0) + ((t8j & 1u) | ((t8k & 1u) << 1u) | ((t8j & 2u) << 1u) | ((t8k & 2u) << 2u) | ((t8j & 4u) << 2u) | ((t8k & 4u) << 3u)))); } }
            } else {
                for (uint32_t j = 0u; j < 8u; j++) {
                    for (uint32_t k = 0u; k < xe; k++) {
                        uint32_t s = hi + load_ty(yt + j) + load_tx(x + k);
                        store_dst(f + j * nx + x + k, s < nsrc ? load_src(s) : 0u);
                    }
                }
            }
        }
    }
    for (uint32_t y = yt; y < y1; y++) {
        uint32_t oy = oz + load_ty(y);
        uint32_t f = (z * ny + y) * nx;
        uint32_t b = woff + oy;
        uint32_t x = x0;
        for (; xd == 0u && (brk & 31u) == 0u && x + 32u <= x1; x += 32u) {
            uint32_t s = b + load_tx(x);
            if (s + 31u >= nsrc || s + 31u < s) break;
            memcpy(&dst[f + x], &src[s], 8 * sizeof dst[0]);
            memcpy(&dst[f + x + 8u], &src[s + 8u], 8 * sizeof dst[0]);
            memcpy(&dst[f + x + 16u], &src[s + 16u], 8 * sizeof dst[0]);
            memcpy(&dst[f + x + 24u], &src[s + 24u], 8 * sizeof dst[0]);
        }
        for (; xd == 0u && x + 8u <= x1; x += 8u) {
            uint32_t s = b + load_tx(x);
            if (s + 7u >= nsrc || s + 7u < s) break;
            memcpy(&dst[f + x], &src[s], 8 * sizeof dst[0]);
        }
        for (; x < x1 && wpe == 1u && inb == 1u; x++) store_dst(f + x, load_src(b + load_tx(x)));
        for (; x < x1 && wpe == 1u; x++) {
            uint32_t s = b + load_tx(x);
            store_dst(f + x, s < nsrc ? load_src(s) : 0u);
        }
        for (; x < x1; x++) {
            uint32_t s = woff + (oy + load_tx(x)) * wpe;
            for (uint32_t w = 0u; w < wpe; w++) {
                uint32_t v = 0u;
                if (s + w < nsrc && s + w >= s) v = load_src(s + w);
                store_dst((f + x) * wpe + w, v);
            }
        }
    }
}

static __attribute__((noinline)) void layout_sepblk_u8_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, uint8_t *restrict dst, const uint8_t *restrict src, const uint32_t *restrict tx, const uint32_t *restrict ty, const uint32_t *restrict tz, uint32_t nx, uint32_t ny, uint32_t nz, uint32_t wpe, uint32_t woff, uint32_t nsrc, uint32_t bx, uint32_t by) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        layout_sepblk_u8_item(hg_x, hg_y, hg_z, dst, src, tx, ty, tz, nx, ny, nz, wpe, woff, nsrc, bx, by);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
    hg_t16_fence();
}

#if defined(HG_THREADS) && !defined(_OPENMP)
static void layout_sepblk_u8_task(const hg_job_t *hg_job, int64_t hg_c) {
    void **hg_bufs = hg_job->bufs;
    const uint32_t *hg_words = hg_job->words;
    uint8_t *restrict dst = (uint8_t *)hg_bufs[0];
    const uint8_t *restrict src = (const uint8_t *)hg_bufs[1];
    const uint32_t *restrict tx = (const uint32_t *)hg_bufs[2];
    const uint32_t *restrict ty = (const uint32_t *)hg_bufs[3];
    const uint32_t *restrict tz = (const uint32_t *)hg_bufs[4];
    uint32_t nx = hg_words[0];
    uint32_t ny = hg_words[1];
    uint32_t nz = hg_words[2];
    uint32_t wpe = hg_words[3];
    uint32_t woff = hg_words[4];
    uint32_t nsrc = hg_words[5];
    uint32_t bx = hg_words[6];
    uint32_t by = hg_words[7];
    layout_sepblk_u8_chunk(hg_c, hg_job->size, hg_job->total, hg_job->n0, hg_job->n1, dst, src, tx, ty, tz, nx, ny, nz, wpe, woff, nsrc, bx, by);
}
#endif

void layout_sepblk_u8(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    uint8_t *restrict dst = (uint8_t *)hg_bufs[0];
    const uint8_t *restrict src = (const uint8_t *)hg_bufs[1];
    const uint32_t *restrict tx = (const uint32_t *)hg_bufs[2];
    const uint32_t *restrict ty = (const uint32_t *)hg_bufs[3];
    const uint32_t *restrict tz = (const uint32_t *)hg_bufs[4];
    uint32_t nx = hg_words[0];
    uint32_t ny = hg_words[1];
    uint32_t nz = hg_words[2];
    uint32_t wpe = hg_words[3];
    uint32_t woff = hg_words[4];
    uint32_t nsrc = hg_words[5];
    uint32_t bx = hg_words[6];
    uint32_t by = hg_words[7];
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
            layout_sepblk_u8_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, src, tx, ty, tz, nx, ny, nz, wpe, woff, nsrc, bx, by);
#else
        hg_job_t hg_job = {hg_bufs, hg_words, hg_n0, hg_n1, hg_size, hg_total};
        hg_parallel(layout_sepblk_u8_task, &hg_job, hg_chunks);
#endif
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        layout_sepblk_u8_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, src, tx, ty, tz, nx, ny, nz, wpe, woff, nsrc, bx, by);
}
