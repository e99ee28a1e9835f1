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

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint32_t)((hg_v)))
#define load_vals(hg_i) (vals[(hg_i)])
#define load_ci(hg_i) (ci[(hg_i)])
#define load_rp(hg_i) (rp[(hg_i)])
#define load_err(hg_i) (err[(hg_i)])
#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint32_t)((hg_v)))

static inline void sparse_csr_rows_u32_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, uint32_t *restrict dst, const uint32_t *restrict vals, const uint32_t *restrict ci, const uint32_t *restrict rp, uint32_t *restrict err, uint32_t nrows, uint32_t ncols, uint32_t nnz, uint32_t wpe, uint32_t seg) {
    uint32_t c0 = hg_gid0 * seg;
    uint32_t r = hg_gid1;
    if (c0 >= ncols || r >= nrows) return;
    uint32_t c1 = c0 + hg_umin(ncols - c0, seg);
    uint32_t o = r * ncols;
    // The store index is the loop counter itself: a uint32_t sum (o + c) may wrap as far as a
    // C compiler knows, which keeps it from turning the loop into a memset.
    uint32_t z1 = (o + c1) * wpe;
    for (uint32_t j = (o + c0) * wpe; j < z1; j++) store_dst(j, 0u);
    uint32_t a = load_rp(2u * r);
    uint32_t b = load_rp(2u * r + 2u);
    if ((load_rp(2u * r + 1u) | load_rp(2u * r + 3u)) != 0u || a > b || b > nnz
            || (r == 0u && a != 0u) || (r + 1u == nrows && b != nnz)) {
        store_err(0u, 1u);
        return;
    }
    uint32_t lo = a;
    uint32_t hi = b;
    uint32_t k = a;
    if (c0 != 0u) {
        lo = a;
        hi = b;
        while (lo < hi) {
            uint32_t md = lo + (hi - lo) / 2u;
            if (load_ci(2u * md + 1u) == 0u && load_ci(2u * md) < c0) {
                lo = md + 1u;
            } else {
                hi = md;
            }
        }
        k = lo;
    }
    uint32_t next = c0;
    for (; k < b; k++) {
        uint32_t v = load_ci(2u * k);
        if (load_ci(2u * k + 1u) != 0u || v < next) {
            store_err(0u, 1u);
            return;
        }
        if (v >= c1) break;
        next = v + 1u;
        if (wpe == 1u) {
            store_dst(o + v, load_vals(k));
        } else {
            for (uint32_t w = 0u; w < wpe; w++) store_dst((o + v) * wpe + w, load_vals(k * wpe + w));
        }
    }
    if (c1 != ncols) {
        lo = a;
        hi = b;
        while (lo < hi) {
            uint32_t md = lo + (hi - lo) / 2u;
            if (load_ci(2u * md + 1u) == 0u && load_ci(2u * md) < c1) {
                lo = md + 1u;
            } else {
                hi = md;
            }
        }
        if (k != lo) store_err(0u, 1u);
    } else if (k != b) {
        store_err(0u, 1u);
    }
}

static __attribute__((noinline)) void sparse_csr_rows_u32_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, uint32_t *restrict dst, const uint32_t *restrict vals, const uint32_t *restrict ci, const uint32_t *restrict rp, uint32_t *restrict err, uint32_t nrows, uint32_t ncols, uint32_t nnz, uint32_t wpe, uint32_t seg) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        sparse_csr_rows_u32_item(hg_x, hg_y, hg_z, dst, vals, ci, rp, err, nrows, ncols, nnz, wpe, seg);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

#if defined(HG_THREADS) && !defined(_OPENMP)
static void sparse_csr_rows_u32_task(const hg_job_t *hg_job, int64_t hg_c) {
    void **hg_bufs = hg_job->bufs;
    const uint32_t *hg_words = hg_job->words;
    uint32_t *restrict dst = (uint32_t *)hg_bufs[0];
    const uint32_t *restrict vals = (const uint32_t *)hg_bufs[1];
    const uint32_t *restrict ci = (const uint32_t *)hg_bufs[2];
    const uint32_t *restrict rp = (const uint32_t *)hg_bufs[3];
    uint32_t *restrict err = (uint32_t *)hg_bufs[4];
    uint32_t nrows = hg_words[0];
    uint32_t ncols = hg_words[1];
    uint32_t nnz = hg_words[2];
    uint32_t wpe = hg_words[3];
    uint32_t seg = hg_words[4];
    sparse_csr_rows_u32_chunk(hg_c, hg_job->size, hg_job->total, hg_job->n0, hg_job->n1, dst, vals, ci, rp, err, nrows, ncols, nnz, wpe, seg);
}
#endif

void sparse_csr_rows_u32(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    uint32_t *restrict dst = (uint32_t *)hg_bufs[0];
    const uint32_t *restrict vals = (const uint32_t *)hg_bufs[1];
    const uint32_t *restrict ci = (const uint32_t *)hg_bufs[2];
    const uint32_t *restrict rp = (const uint32_t *)hg_bufs[3];
    uint32_t *restrict err = (uint32_t *)hg_bufs[4];
    uint32_t nrows = hg_words[0];
    uint32_t ncols = hg_words[1];
    uint32_t nnz = hg_words[2];
    uint32_t wpe = hg_words[3];
    uint32_t seg = hg_words[4];
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
            sparse_csr_rows_u32_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, vals, ci, rp, err, nrows, ncols, nnz, wpe, seg);
#else
        hg_job_t hg_job = {hg_bufs, hg_words, hg_n0, hg_n1, hg_size, hg_total};
        hg_parallel(sparse_csr_rows_u32_task, &hg_job, hg_chunks);
#endif
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        sparse_csr_rows_u32_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, vals, ci, rp, err, nrows, ncols, nnz, wpe, seg);
}
