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

#define store_kpool(hg_i, hg_v) (kpool[(hg_i)] = (int8_t)((hg_v)))
#define store_vpool(hg_i, hg_v) (vpool[(hg_i)] = (int8_t)((hg_v)))
#define store_kscales(hg_i, hg_v) (kscales[(hg_i)] = (float)((hg_v)))
#define store_vscales(hg_i, hg_v) (vscales[(hg_i)] = (float)((hg_v)))
#define load_kpart(hg_i) (kpart[(hg_i)])
#define load_vpart(hg_i) (vpart[(hg_i)])
#define load_ksrc(hg_i) (hg_f16_to_f32(ksrc[(hg_i)]))
#define load_vsrc(hg_i) (hg_f16_to_f32(vsrc[(hg_i)]))
#define load_slots(hg_i) (slots[(hg_i)])

static inline void kv_q8_scatter_f16_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, int8_t *restrict kpool, int8_t *restrict vpool, float *restrict kscales, float *restrict vscales, const uint32_t *restrict kpart, const uint32_t *restrict vpart, const uint16_t *restrict ksrc, const uint16_t *restrict vsrc, const uint32_t *restrict slots, uint32_t n, uint32_t lanes, uint32_t row, uint32_t num_slots) {
    uint32_t i = hg_gid0;
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    uint32_t t = i / lanes;
    if (t >= n / lanes) return;
    uint32_t lane = i - t * lanes;
    uint32_t slot = load_slots(t);
    if (slot >= num_slots) return;
    uint32_t from = t * row;
    uint32_t to = slot * row;
    {
        uint32_t amax = 0u;
        if (lanes == 1u) {
            for (uint32_t w = 0u; w < row; w += 1u) {
                uint32_t a = hg_as_u32(load_ksrc(from + w)) & 0x7fffffffu;
                if (a < 0x7f800000u) amax = hg_umax(amax, a);
            }
        } else {
            for (uint32_t j = 0u; j < lanes; j++) amax = hg_umax(amax, load_kpart(t * lanes + j));
        }
        int32_t e = -126;
        if (amax >= 0x00800000u) {
            e = (int32_t)(amax >> 23u) - 133;
            e = hg_imax(e, -126);
            if (hg_as_f32(amax) * hg_as_f32((uint32_t)(127 - e) << 23u) >= 127.5f) e = e + 1;
        }
        float inv = hg_as_f32((uint32_t)(127 - e) << 23u);
        if (lane == 0u) store_kscales(slot, hg_as_f32((uint32_t)(127 + e) << 23u));
        if (lanes == 1u) {
            for (uint32_t w = 0u; w < row; w++) {
                float v = load_ksrc(from + w);
                uint32_t a = hg_as_u32(v) & 0x7fffffffu;
                int32_t q = 0;
                if (a == 0x7f800000u) {
                    q = (hg_as_u32(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = hg_imin(hg_imax((int32_t)(floorf(v * inv + 0.5f)), -127), 127);
                }
                store_kpool(to + w, q);
            }
        } else {
            for (uint32_t w = lane; w < row; w += lanes) {
                float v = load_ksrc(from + w);
                uint32_t a = hg_as_u32(v) & 0x7fffffffu;
                int32_t q = 0;
                if (a == 0x7f800000u) {
                    q = (hg_as_u32(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = hg_imin(hg_imax((int32_t)(floorf(v * inv + 0.5f)), -127), 127);
                }
                store_kpool(to + w, q);
            }
        }
    }
    {
        uint32_t amax = 0u;
        if (lanes == 1u) {
            for (uint32_t w = 0u; w < row; w += 1u) {
                uint32_t a = hg_as_u32(load_vsrc(from + w)) & 0x7fffffffu;
                if (a < 0x7f800000u) amax = hg_umax(amax, a);
            }
        } else {
            for (uint32_t j = 0u; j < lanes; j++) amax = hg_umax(amax, load_vpart(t * lanes + j));
        }
        int32_t e = -126;
        if (amax >= 0x00800000u) {
            e = (int32_t)(amax >> 23u) - 133;
            e = hg_imax(e, -126);
            if (hg_as_f32(amax) * hg_as_f32((uint32_t)(127 - e) << 23u) >= 127.5f) e = e + 1;
        }
        float inv = hg_as_f32((uint32_t)(127 - e) << 23u);
        if (lane == 0u) store_vscales(slot, hg_as_f32((uint32_t)(127 + e) << 23u));
        if (lanes == 1u) {
            for (uint32_t w = 0u; w < row; w++) {
                float v = load_vsrc(from + w);
                uint32_t a = hg_as_u32(v) & 0x7fffffffu;
                int32_t q = 0;
                if (a == 0x7f800000u) {
                    q = (hg_as_u32(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = hg_imin(hg_imax((int32_t)(floorf(v * inv + 0.5f)), -127), 127);
                }
                store_vpool(to + w, q);
            }
        } else {
            for (uint32_t w = lane; w < row; w += lanes) {
                float v = load_vsrc(from + w);
                uint32_t a = hg_as_u32(v) & 0x7fffffffu;
                int32_t q = 0;
                if (a == 0x7f800000u) {
                    q = (hg_as_u32(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = hg_imin(hg_imax((int32_t)(floorf(v * inv + 0.5f)), -127), 127);
                }
                store_vpool(to + w, q);
            }
        }
    }
}

static __attribute__((noinline)) void kv_q8_scatter_f16_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, int8_t *restrict kpool, int8_t *restrict vpool, float *restrict kscales, float *restrict vscales, const uint32_t *restrict kpart, const uint32_t *restrict vpart, const uint16_t *restrict ksrc, const uint16_t *restrict vsrc, const uint32_t *restrict slots, uint32_t n, uint32_t lanes, uint32_t row, uint32_t num_slots) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        kv_q8_scatter_f16_item(hg_x, hg_y, hg_z, kpool, vpool, kscales, vscales, kpart, vpart, ksrc, vsrc, slots, n, lanes, row, num_slots);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

#if defined(HG_THREADS) && !defined(_OPENMP)
static void kv_q8_scatter_f16_task(const hg_job_t *hg_job, int64_t hg_c) {
    void **hg_bufs = hg_job->bufs;
    const uint32_t *hg_words = hg_job->words;
    int8_t *restrict kpool = (int8_t *)hg_bufs[0];
    int8_t *restrict vpool = (int8_t *)hg_bufs[1];
    float *restrict kscales = (float *)hg_bufs[2];
    float *restrict vscales = (float *)hg_bufs[3];
    const uint32_t *restrict kpart = (const uint32_t *)hg_bufs[4];
    const uint32_t *restrict vpart = (const uint32_t *)hg_bufs[5];
    const uint16_t *restrict ksrc = (const uint16_t *)hg_bufs[6];
    const uint16_t *restrict vsrc = (const uint16_t *)hg_bufs[7];
    const uint32_t *restrict slots = (const uint32_t *)hg_bufs[8];
    uint32_t n = hg_words[0];
    uint32_t lanes = hg_words[1];
    uint32_t row = hg_words[2];
    uint32_t num_slots = hg_words[3];
    kv_q8_scatter_f16_chunk(hg_c, hg_job->size, hg_job->total, hg_job->n0, hg_job->n1, kpool, vpool, kscales, vscales, kpart, vpart, ksrc, vsrc, slots, n, lanes, row, num_slots);
}
#endif

void kv_q8_scatter_f16(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    int8_t *restrict kpool = (int8_t *)hg_bufs[0];
    int8_t *restrict vpool = (int8_t *)hg_bufs[1];
    float *restrict kscales = (float *)hg_bufs[2];
    float *restrict vscales = (float *)hg_bufs[3];
    const uint32_t *restrict kpart = (const uint32_t *)hg_bufs[4];
    const uint32_t *restrict vpart = (const uint32_t *)hg_bufs[5];
    const uint16_t *restrict ksrc = (const uint16_t *)hg_bufs[6];
    const uint16_t *restrict vsrc = (const uint16_t *)hg_bufs[7];
    const uint32_t *restrict slots = (const uint32_t *)hg_bufs[8];
    uint32_t n = hg_words[0];
    uint32_t lanes = hg_words[1];
    uint32_t row = hg_words[2];
    uint32_t num_slots = hg_words[3];
    int64_t hg_total = hg_n0 * hg_n1 * hg_n2;
    int64_t hg_size = 4096;
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
            kv_q8_scatter_f16_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, kpool, vpool, kscales, vscales, kpart, vpart, ksrc, vsrc, slots, n, lanes, row, num_slots);
#else
        hg_job_t hg_job = {hg_bufs, hg_words, hg_n0, hg_n1, hg_size, hg_total};
        hg_parallel(kv_q8_scatter_f16_task, &hg_job, hg_chunks);
#endif
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        kv_q8_scatter_f16_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, kpool, vpool, kscales, vscales, kpart, vpart, ksrc, vsrc, slots, n, lanes, row, num_slots);
}
