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

#define store_kdst(hg_i, hg_v) (kdst[(hg_i)] = (uint16_t)((hg_v)))
#define store_vdst(hg_i, hg_v) (vdst[(hg_i)] = (uint16_t)((hg_v)))
#define load_kpool(hg_i) ((uint32_t)(kpool[(hg_i)]))
#define load_vpool(hg_i) ((uint32_t)(vpool[(hg_i)]))
#define load_slots(hg_i) (slots[(hg_i)])

static inline void kv_gather_u16_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, uint16_t *restrict kdst, uint16_t *restrict vdst, const uint16_t *restrict kpool, const uint16_t *restrict vpool, const uint32_t *restrict slots, uint32_t n, uint32_t lanes, uint32_t row, uint32_t num_slots) {
    uint32_t i = hg_gid0;
    if (i >= n || lanes == 0u || lanes > 4096u || row > 0xFFFFEFFFu) return;
    uint32_t t = i / lanes;
    if (t >= n / lanes) return;
    uint32_t lane = i - t * lanes;
    uint32_t slot = load_slots(t);
    if (slot == 0xFFFFFFFEu) return;  // SKIP_SLOT: another window's token
    // Slots past the pool (the padding sentinel) read as zero rows.
    if (slot >= num_slots) {
        for (uint32_t w = lane; w < row; w += lanes) {
            store_kdst(t * row + w, 0u);
            store_vdst(t * row + w, 0u);
        }
        return;
    }
    if (lanes == 1u && row <= 0x7fffffffu / (hg_umax(hg_umax(num_slots, n), 1u))) {
        int32_t len = (int32_t)(row);
        int32_t pos = (int32_t)(slot * row);
        int32_t at = (int32_t)(t * row);
        for (int32_t w = 0; w < len; w++) store_kdst(at + w, load_kpool(pos + w));
        for (int32_t w = 0; w < len; w++) store_vdst(at + w, load_vpool(pos + w));
        return;
    }
    uint32_t from = slot * row;
    uint32_t to = t * row;
    for (uint32_t w = lane; w < row; w += lanes) {
        store_kdst(to + w, load_kpool(from + w));
        store_vdst(to + w, load_vpool(from + w));
    }
}

static __attribute__((noinline)) void kv_gather_u16_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, uint16_t *restrict kdst, uint16_t *restrict vdst, const uint16_t *restrict kpool, const uint16_t *restrict vpool, const uint32_t *restrict slots, uint32_t n, uint32_t lanes, uint32_t row, uint32_t num_slots) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        kv_gather_u16_item(hg_x, hg_y, hg_z, kdst, vdst, kpool, vpool, slots, n, lanes, row, num_slots);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

#if defined(HG_THREADS) && !defined(_OPENMP)
static void kv_gather_u16_task(const hg_job_t *hg_job, int64_t hg_c) {
    void **hg_bufs = hg_job->bufs;
    const uint32_t *hg_words = hg_job->words;
    uint16_t *restrict kdst = (uint16_t *)hg_bufs[0];
    uint16_t *restrict vdst = (uint16_t *)hg_bufs[1];
    const uint16_t *restrict kpool = (const uint16_t *)hg_bufs[2];
    const uint16_t *restrict vpool = (const uint16_t *)hg_bufs[3];
    const uint32_t *restrict slots = (const uint32_t *)hg_bufs[4];
    uint32_t n = hg_words[0];
    uint32_t lanes = hg_words[1];
    uint32_t row = hg_words[2];
    uint32_t num_slots = hg_words[3];
    kv_gather_u16_chunk(hg_c, hg_job->size, hg_job->total, hg_job->n0, hg_job->n1, kdst, vdst, kpool, vpool, slots, n, lanes, row, num_slots);
}
#endif

void kv_gather_u16(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    uint16_t *restrict kdst = (uint16_t *)hg_bufs[0];
    uint16_t *restrict vdst = (uint16_t *)hg_bufs[1];
    const uint16_t *restrict kpool = (const uint16_t *)hg_bufs[2];
    const uint16_t *restrict vpool = (const uint16_t *)hg_bufs[3];
    const uint32_t *restrict slots = (const uint32_t *)hg_bufs[4];
    uint32_t n = hg_words[0];
    uint32_t lanes = hg_words[1];
    uint32_t row = hg_words[2];
    uint32_t num_slots = hg_words[3];
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
            kv_gather_u16_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, kdst, vdst, kpool, vpool, slots, n, lanes, row, num_slots);
#else
        hg_job_t hg_job = {hg_bufs, hg_words, hg_n0, hg_n1, hg_size, hg_total};
        hg_parallel(kv_gather_u16_task, &hg_job, hg_chunks);
#endif
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        kv_gather_u16_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, kdst, vdst, kpool, vpool, slots, n, lanes, row, num_slots);
}
