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

static inline float hg_f16_to_f32(uint32_t h) {
    uint32_t sign = (h & 0x8000u) << 16u;
    uint32_t expo = (h >> 10u) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (expo == 0x1fu) return hg_as_f32(sign | 0x7f800000u | (mant << 13u));
    if (expo != 0u) return hg_as_f32(sign | ((expo + 112u) << 23u) | (mant << 13u));
    // Subnormal: mant * 2^-24 is exact in float.
    return hg_as_f32(sign | hg_as_u32((float)(mant) * 5.9604644775390625e-8f));
}

static inline uint32_t hg_f32_to_f16(float v) {
    uint32_t b = hg_as_u32(v);
    uint32_t sign = (b >> 16u) & 0x8000u;
    uint32_t a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        // NaN keeps its top payload bits and stays a NaN, as NumPy does.
        uint32_t m = (a >> 13u) & 0x3ffu;
        return sign | 0x7c00u | (m == 0u ? 1u : m);
    }
    if (a >= 0x477ff000u) return sign | 0x7c00u;
    if (a >= 0x38800000u) return sign | ((a + 0xfffu + ((a >> 13u) & 1u) - 0x38000000u) >> 13u);
    uint32_t e = a >> 23u;
    if (e < 102u) return sign;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t s = 126u - e;
    return sign | ((m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s);
}

static inline float hg_bf16_to_f32(uint32_t h) {
    return hg_as_f32((h & 0xffffu) << 16u);
}

static inline uint32_t hg_umulhi(uint32_t a, uint32_t b) {
    return (uint32_t)(((uint64_t)a * b) >> 32);
}

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint16_t)((hg_v)))
#define load_data(hg_i) ((uint32_t)(data[(hg_i)]))
#define load_scales(hg_i) ((uint32_t)(scales[(hg_i)]))
#define load_zps(hg_i) ((uint32_t)(zps[(hg_i)]))
#define load_err(hg_i) (err[(hg_i)])
#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint32_t)((hg_v)))

static inline void dequant_affine_f16_hil_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, uint16_t *restrict dst, const uint8_t *restrict data, const uint8_t *restrict scales, const uint8_t *restrict zps, uint32_t *restrict err, uint32_t n, uint32_t ept, uint32_t doff, uint32_t bits, uint32_t sgn, uint32_t mode, uint32_t stype, uint32_t zmode, uint32_t zoff, uint32_t nparam, uint32_t inner, uint32_t dm1, uint32_t dsh1, uint32_t ssize, uint32_t dm2, uint32_t dsh2, uint32_t omul, uint32_t kshift, int32_t zlo, int32_t zhi, float sval, int32_t zval, uint32_t hp, uint32_t hr) {
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
    uint32_t sx = (sgn != 0u && bits < 32u) ? 32u - bits : 0u;
    float s = sval;
    int32_t z = zval;
    uint32_t built = 0u;
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
            if (stype == 3u) {
                uint32_t at = p * 4u;
                uint32_t w = load_scales(at) | (load_scales(at + 1u) << 8u)
                        | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                if ((w & 0x7f800000u) == 0x7f800000u || (w & 0x7fffffffu) == 0u) {
                    store_err(0u, 1u);
                }
                s = hg_as_f32(w);
            } else {
                uint32_t at = p * 2u;
                uint32_t h = load_scales(at) | (load_scales(at + 1u) << 8u);
                if (stype == 1u) {
                    if ((h & 0x7c00u) == 0x7c00u || (h & 0x7fffu) == 0u) store_err(0u, 1u);
                    s = hg_f16_to_f32(h);
                } else {
                    if ((h & 0x7f80u) == 0x7f80u || (h & 0x7fffu) == 0u) store_err(0u, 1u);
                    s = hg_bf16_to_f32(h);
                }
            }
            if (zmode != 0u) {
                // Zero points may start at 2 mod 4 in a shared [scales | zero_points] buffer.
                uint32_t at = zoff + p * 4u;
                z = (int32_t)(load_zps(at) | (load_zps(at + 1u) << 8u)
                        | (load_zps(at + 2u) << 16u) | (load_zps(at + 3u) << 24u));
                if (z < zlo || z > zhi) store_err(0u, 1u);
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
        for (; i < end; i++) {
            uint32_t f = i;
            uint32_t hm = (1u << hp) - 1u;
            uint32_t hx = 0u;
            for (uint32_t k = 0u; k < hr; k++) {
                hx = hx | (((f >> (hp * (hr - 1u - k))) & hm) << (k * hp));
            }
            uint32_t x0 = hx & hm;
            uint32_t hq = (1u << hp) >> 1u;
            while (hq > 1u) {
                uint32_t p = hq - 1u;
                if ((x0 & hq) != 0u) x0 = x0 ^ p;
                for (uint32_t k = 1u; k < hr; k++) {
                    uint32_t sh = k * hp;
                    uint32_t xi = (hx >> sh) & hm;
                    if ((xi & hq) != 0u) {
                        x0 = x0 ^ p;
                    } else {
                        uint32_t t = (x0 ^ xi) & p;
                        x0 = x0 ^ t;
                        hx = hx ^ (t << sh);
                    }
                }
                hq = hq >> 1u;
            }
            uint32_t prev = x0;
            for (uint32_t k = 1u; k < hr; k++) {
                uint32_t sh = k * hp;
                uint32_t xi = ((hx >> sh) & hm) ^ prev;
                hx = (hx & ~(hm << sh)) | (xi << sh);
                prev = xi;
            }
            uint32_t tt = 0u;
            hq = (1u << hp) >> 1u;
            while (hq > 1u) {
                if ((prev & hq) != 0u) tt = tt ^ (hq - 1u);
                hq = hq >> 1u;
            }
            x0 = x0 ^ tt;
            uint32_t so = 0u;
            for (uint32_t b = 0u; b < hp; b++) {
                for (uint32_t d = 0u; d < hr; d++) {
                    uint32_t xd = d == 0u ? x0 : (((hx >> (d * hp)) & hm) ^ tt);
                    so = so | (((xd >> b) & 1u) << (b * hr + hr - 1u - d));
                }
            }
            if (so >= n) so = 0u;
            uint32_t code = 0u;
            if (bits == 8u) {
                code = load_data(doff + so);
            } else if (bits < 8u) {
                uint32_t bit = so * bits;
                uint32_t at = doff + (bit >> 3u);
                uint32_t sh = bit & 7u;
                code = load_data(at) >> sh;
                if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                code = code & ((1u << bits) - 1u);
            } else if (bits == 16u) {
                uint32_t at = doff + so * 2u;
                code = load_data(at) | (load_data(at + 1u) << 8u);
            } else {
                uint32_t at = doff + so * 4u;
                code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                       | (load_data(at + 3u) << 24u);
            }
            {
                uint32_t k = i;
                // Branch-free sign extension: random signs would mispredict a branch.
                int32_t q = (int32_t)(code << sx) >> sx;
                store_dst(k, hg_f32_to_f16(s * (float)((int32_t)((uint32_t)(q) - (uint32_t)(z)))));
            }
        }
    }
}

static __attribute__((noinline)) void dequant_affine_f16_hil_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, uint16_t *restrict dst, const uint8_t *restrict data, const uint8_t *restrict scales, const uint8_t *restrict zps, uint32_t *restrict err, uint32_t n, uint32_t ept, uint32_t doff, uint32_t bits, uint32_t sgn, uint32_t mode, uint32_t stype, uint32_t zmode, uint32_t zoff, uint32_t nparam, uint32_t inner, uint32_t dm1, uint32_t dsh1, uint32_t ssize, uint32_t dm2, uint32_t dsh2, uint32_t omul, uint32_t kshift, int32_t zlo, int32_t zhi, float sval, int32_t zval, uint32_t hp, uint32_t hr) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        dequant_affine_f16_hil_item(hg_x, hg_y, hg_z, dst, data, scales, zps, err, n, ept, doff, bits, sgn, mode, stype, zmode, zoff, nparam, inner, dm1, dsh1, ssize, dm2, dsh2, omul, kshift, zlo, zhi, sval, zval, hp, hr);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

#if defined(HG_THREADS) && !defined(_OPENMP)
static void dequant_affine_f16_hil_task(const hg_job_t *hg_job, int64_t hg_c) {
    void **hg_bufs = hg_job->bufs;
    const uint32_t *hg_words = hg_job->words;
    uint16_t *restrict dst = (uint16_t *)hg_bufs[0];
    const uint8_t *restrict data = (const uint8_t *)hg_bufs[1];
    const uint8_t *restrict scales = (const uint8_t *)hg_bufs[2];
    const uint8_t *restrict zps = (const uint8_t *)hg_bufs[3];
    uint32_t *restrict err = (uint32_t *)hg_bufs[4];
    uint32_t n = hg_words[0];
    uint32_t ept = hg_words[1];
    uint32_t doff = hg_words[2];
    uint32_t bits = hg_words[3];
    uint32_t sgn = hg_words[4];
    uint32_t mode = hg_words[5];
    uint32_t stype = hg_words[6];
    uint32_t zmode = hg_words[7];
    uint32_t zoff = hg_words[8];
    uint32_t nparam = hg_words[9];
    uint32_t inner = hg_words[10];
    uint32_t dm1 = hg_words[11];
    uint32_t dsh1 = hg_words[12];
    uint32_t ssize = hg_words[13];
    uint32_t dm2 = hg_words[14];
    uint32_t dsh2 = hg_words[15];
    uint32_t omul = hg_words[16];
    uint32_t kshift = hg_words[17];
    int32_t zlo = (int32_t)hg_words[18];
    int32_t zhi = (int32_t)hg_words[19];
    float sval = hg_as_f32(hg_words[20]);
    int32_t zval = (int32_t)hg_words[21];
    uint32_t hp = hg_words[22];
    uint32_t hr = hg_words[23];
    dequant_affine_f16_hil_chunk(hg_c, hg_job->size, hg_job->total, hg_job->n0, hg_job->n1, dst, data, scales, zps, err, n, ept, doff, bits, sgn, mode, stype, zmode, zoff, nparam, inner, dm1, dsh1, ssize, dm2, dsh2, omul, kshift, zlo, zhi, sval, zval, hp, hr);
}
#endif

void dequant_affine_f16_hil(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    uint16_t *restrict dst = (uint16_t *)hg_bufs[0];
    const uint8_t *restrict data = (const uint8_t *)hg_bufs[1];
    const uint8_t *restrict scales = (const uint8_t *)hg_bufs[2];
    const uint8_t *restrict zps = (const uint8_t *)hg_bufs[3];
    uint32_t *restrict err = (uint32_t *)hg_bufs[4];
    uint32_t n = hg_words[0];
    uint32_t ept = hg_words[1];
    uint32_t doff = hg_words[2];
    uint32_t bits = hg_words[3];
    uint32_t sgn = hg_words[4];
    uint32_t mode = hg_words[5];
    uint32_t stype = hg_words[6];
    uint32_t zmode = hg_words[7];
    uint32_t zoff = hg_words[8];
    uint32_t nparam = hg_words[9];
    uint32_t inner = hg_words[10];
    uint32_t dm1 = hg_words[11];
    uint32_t dsh1 = hg_words[12];
    uint32_t ssize = hg_words[13];
    uint32_t dm2 = hg_words[14];
    uint32_t dsh2 = hg_words[15];
    uint32_t omul = hg_words[16];
    uint32_t kshift = hg_words[17];
    int32_t zlo = (int32_t)hg_words[18];
    int32_t zhi = (int32_t)hg_words[19];
    float sval = hg_as_f32(hg_words[20]);
    int32_t zval = (int32_t)hg_words[21];
    uint32_t hp = hg_words[22];
    uint32_t hr = hg_words[23];
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
            dequant_affine_f16_hil_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, data, scales, zps, err, n, ept, doff, bits, sgn, mode, stype, zmode, zoff, nparam, inner, dm1, dsh1, ssize, dm2, dsh2, omul, kshift, zlo, zhi, sval, zval, hp, hr);
#else
        hg_job_t hg_job = {hg_bufs, hg_words, hg_n0, hg_n1, hg_size, hg_total};
        hg_parallel(dequant_affine_f16_hil_task, &hg_job, hg_chunks);
#endif
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        dequant_affine_f16_hil_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, data, scales, zps, err, n, ept, doff, bits, sgn, mode, stype, zmode, zoff, nparam, inner, dm1, dsh1, ssize, dm2, dsh2, omul, kshift, zlo, zhi, sval, zval, hp, hr);
}
