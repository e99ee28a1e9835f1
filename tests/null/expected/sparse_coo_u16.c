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

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint16_t)((hg_v)))
#define load_vals(hg_i) ((uint32_t)(vals[(hg_i)]))
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

static inline void sparse_coo_u16_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, uint16_t *restrict dst, const uint16_t *restrict vals, const uint32_t *restrict ix, const uint32_t *restrict mt, uint32_t nnz, uint32_t n, uint32_t wpe, uint32_t nix, uint32_t rank) {
    uint32_t i = hg_gid0;
    if (i >= nnz) return;
    uint32_t fi = 0u;
    uint32_t ok = 1u;
    for (uint32_t d = 0u; d < rank; d++) {
        uint32_t c = 2u * (i * rank + d);
        uint32_t coord = c < nix ? load_ix(c) : 0xffffffffu;
        if (coord >= load_mt(2u * d)) ok = 0u;
        fi = fi + coord * load_mt(2u * d + 1u);
    }
    if (ok == 0u || fi >= n) return;
    for (uint32_t w = 0u; w < wpe; w++) store_dst(fi * wpe + w, load_vals(i * wpe + w));
}

static __attribute__((noinline)) void sparse_coo_u16_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, uint16_t *restrict dst, const uint16_t *restrict vals, const uint32_t *restrict ix, const uint32_t *restrict mt, uint32_t nnz, uint32_t n, uint32_t wpe, uint32_t nix, uint32_t rank) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        sparse_coo_u16_item(hg_x, hg_y, hg_z, dst, vals, ix, mt, nnz, n, wpe, nix, rank);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

#if defined(HG_THREADS) && !defined(_OPENMP)
static void sparse_coo_u16_task(const hg_job_t *hg_job, int64_t hg_c) {
    void **hg_bufs = hg_job->bufs;
    const uint32_t *hg_words = hg_job->words;
    uint16_t *restrict dst = (uint16_t *)hg_bufs[0];
    const uint16_t *restrict vals = (const uint16_t *)hg_bufs[1];
    const uint32_t *restrict ix = (const uint32_t *)hg_bufs[2];
    const uint32_t *restrict mt = (const uint32_t *)hg_bufs[3];
    uint32_t nnz = hg_words[0];
    uint32_t n = hg_words[1];
    uint32_t wpe = hg_words[2];
    uint32_t nix = hg_words[3];
    uint32_t rank = hg_words[4];
    sparse_coo_u16_chunk(hg_c, hg_job->size, hg_job->total, hg_job->n0, hg_job->n1, dst, vals, ix, mt, nnz, n, wpe, nix, rank);
}
#endif

void sparse_coo_u16(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    uint16_t *restrict dst = (uint16_t *)hg_bufs[0];
    const uint16_t *restrict vals = (const uint16_t *)hg_bufs[1];
    const uint32_t *restrict ix = (const uint32_t *)hg_bufs[2];
    const uint32_t *restrict mt = (const uint32_t *)hg_bufs[3];
    uint32_t nnz = hg_words[0];
    uint32_t n = hg_words[1];
    uint32_t wpe = hg_words[2];
    uint32_t nix = hg_words[3];
    uint32_t rank = hg_words[4];
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
            sparse_coo_u16_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, vals, ix, mt, nnz, n, wpe, nix, rank);
#else
        hg_job_t hg_job = {hg_bufs, hg_words, hg_n0, hg_n1, hg_size, hg_total};
        hg_parallel(sparse_coo_u16_task, &hg_job, hg_chunks);
#endif
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        sparse_coo_u16_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, vals, ix, mt, nnz, n, wpe, nix, rank);
}
