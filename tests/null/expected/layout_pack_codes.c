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

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint8_t)((hg_v)))
#define load_src(hg_i) ((uint32_t)(src[(hg_i)]))

static inline void layout_pack_codes_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, uint8_t *restrict dst, const uint8_t *restrict src, uint32_t n, uint32_t bits, uint32_t epu, uint32_t upb) {
    uint32_t u = hg_gid0;
    if (u * epu >= n) return;
    uint32_t acc = 0u;
    for (uint32_t e = 0u; e < epu; e++) {
        uint32_t f = u * epu + e;
        if (f < n) acc = acc | ((load_src(f) & ((1u << bits) - 1u)) << (e * bits));
    }
    for (uint32_t b = 0u; b < upb; b++) store_dst(u * upb + b, (acc >> (8u * b)) & 255u);
}

static __attribute__((noinline)) void layout_pack_codes_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, uint8_t *restrict dst, const uint8_t *restrict src, uint32_t n, uint32_t bits, uint32_t epu, uint32_t upb) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        layout_pack_codes_item(hg_x, hg_y, hg_z, dst, src, n, bits, epu, upb);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

#if defined(HG_THREADS) && !defined(_OPENMP)
static void layout_pack_codes_task(const hg_job_t *hg_job, int64_t hg_c) {
    void **hg_bufs = hg_job->bufs;
    const uint32_t *hg_words = hg_job->words;
    uint8_t *restrict dst = (uint8_t *)hg_bufs[0];
    const uint8_t *restrict src = (const uint8_t *)hg_bufs[1];
    uint32_t n = hg_words[0];
    uint32_t bits = hg_words[1];
    uint32_t epu = hg_words[2];
    uint32_t upb = hg_words[3];
    layout_pack_codes_chunk(hg_c, hg_job->size, hg_job->total, hg_job->n0, hg_job->n1, dst, src, n, bits, epu, upb);
}
#endif

void layout_pack_codes(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    uint8_t *restrict dst = (uint8_t *)hg_bufs[0];
    const uint8_t *restrict src = (const uint8_t *)hg_bufs[1];
    uint32_t n = hg_words[0];
    uint32_t bits = hg_words[1];
    uint32_t epu = hg_words[2];
    uint32_t upb = hg_words[3];
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
            layout_pack_codes_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, src, n, bits, epu, upb);
#else
        hg_job_t hg_job = {hg_bufs, hg_words, hg_n0, hg_n1, hg_size, hg_total};
        hg_parallel(layout_pack_codes_task, &hg_job, hg_chunks);
#endif
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        layout_pack_codes_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, src, n, bits, epu, upb);
}
