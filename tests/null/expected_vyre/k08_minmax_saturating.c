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

#define load_b0_a(hg_i) (b0_a[(hg_i)])
#define load_b1_b(hg_i) (b1_b[(hg_i)])
#define load_b2_out(hg_i) (b2_out[(hg_i)])
#define store_b2_out(hg_i, hg_v) (b2_out[(hg_i)] = (uint32_t)((hg_v)))

static inline void vyre_ed6cb5d0d1bc3b12_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, const uint32_t *restrict b0_a, const uint32_t *restrict b1_b, uint32_t *restrict b2_out, uint32_t n0, uint32_t n1, uint32_t n2) {
    {
        uint32_t l_i_1 = hg_gid0;
        _Bool t2 = l_i_1 < n0;
        if (t2) {
            uint32_t t3 = (l_i_1 < n0) ? load_b0_a(l_i_1) : 0u;
            uint32_t l_x_4 = t3;
            uint32_t t5 = (l_i_1 < n1) ? load_b1_b(l_i_1) : 0u;
            uint32_t l_y_6 = t5;
            uint32_t t7 = l_i_1 * 0x6u;
            uint32_t l_base_8 = t7;
            uint32_t t9 = l_base_8 + 0x0u;
            uint32_t t10 = hg_umin(l_x_4, l_y_6);
            if (t9 < n2) { store_b2_out(t9, t10); }
            uint32_t t11 = l_base_8 + 0x1u;
            uint32_t t12 = hg_umax(l_x_4, l_y_6);
            if (t11 < n2) { store_b2_out(t11, t12); }
            uint32_t t13 = l_base_8 + 0x2u;
            uint32_t t14 = (l_x_4 > l_y_6) ? l_x_4 - l_y_6 : l_y_6 - l_x_4;
            if (t13 < n2) { store_b2_out(t13, t14); }
            uint32_t t15 = l_base_8 + 0x3u;
            uint32_t t16 = (l_x_4 + l_y_6 < l_x_4) ? 0xffffffffu : l_x_4 + l_y_6;
            if (t15 < n2) { store_b2_out(t15, t16); }
            uint32_t t17 = l_base_8 + 0x4u;
            uint32_t t18 = (l_x_4 > l_y_6) ? l_x_4 - l_y_6 : 0u;
            if (t17 < n2) { store_b2_out(t17, t18); }
            uint32_t t19 = l_base_8 + 0x5u;
            uint32_t t20 = hg_umulhi(l_x_4, l_y_6);
            if (t19 < n2) { store_b2_out(t19, t20); }
        }
    }
}

static __attribute__((noinline)) void vyre_ed6cb5d0d1bc3b12_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, const uint32_t *restrict b0_a, const uint32_t *restrict b1_b, uint32_t *restrict b2_out, uint32_t n0, uint32_t n1, uint32_t n2) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        vyre_ed6cb5d0d1bc3b12_item(hg_x, hg_y, hg_z, b0_a, b1_b, b2_out, n0, n1, n2);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

#if defined(HG_THREADS) && !defined(_OPENMP)
static void vyre_ed6cb5d0d1bc3b12_task(const hg_job_t *hg_job, int64_t hg_c) {
    void **hg_bufs = hg_job->bufs;
    const uint32_t *hg_words = hg_job->words;
    const uint32_t *restrict b0_a = (const uint32_t *)hg_bufs[0];
    const uint32_t *restrict b1_b = (const uint32_t *)hg_bufs[1];
    uint32_t *restrict b2_out = (uint32_t *)hg_bufs[2];
    uint32_t n0 = hg_words[0];
    uint32_t n1 = hg_words[1];
    uint32_t n2 = hg_words[2];
    vyre_ed6cb5d0d1bc3b12_chunk(hg_c, hg_job->size, hg_job->total, hg_job->n0, hg_job->n1, b0_a, b1_b, b2_out, n0, n1, n2);
}
#endif

void vyre_ed6cb5d0d1bc3b12(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    const uint32_t *restrict b0_a = (const uint32_t *)hg_bufs[0];
    const uint32_t *restrict b1_b = (const uint32_t *)hg_bufs[1];
    uint32_t *restrict b2_out = (uint32_t *)hg_bufs[2];
    uint32_t n0 = hg_words[0];
    uint32_t n1 = hg_words[1];
    uint32_t n2 = hg_words[2];
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
            vyre_ed6cb5d0d1bc3b12_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, b0_a, b1_b, b2_out, n0, n1, n2);
#else
        hg_job_t hg_job = {hg_bufs, hg_words, hg_n0, hg_n1, hg_size, hg_total};
        hg_parallel(vyre_ed6cb5d0d1bc3b12_task, &hg_job, hg_chunks);
#endif
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        vyre_ed6cb5d0d1bc3b12_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, b0_a, b1_b, b2_out, n0, n1, n2);
}
