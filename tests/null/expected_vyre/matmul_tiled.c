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

#define load_b0_a(hg_i) (b0_a[(hg_i)])
#define load_b1_b(hg_i) (b1_b[(hg_i)])
#define load_b2_out(hg_i) (b2_out[(hg_i)])
#define store_b2_out(hg_i, hg_v) (b2_out[(hg_i)] = (uint32_t)((hg_v)))
#define load_trapflag(hg_i) (trapflag[(hg_i)])
#define store_trapflag(hg_i, hg_v) (trapflag[(hg_i)] = (uint32_t)((hg_v)))
#define load_s3_ta(hg_i) (s3_ta[(hg_i)])
#define store_s3_ta(hg_i, hg_v) (s3_ta[(hg_i)] = (hg_v))
#define load_s4_tb(hg_i) (s4_tb[(hg_i)])
#define store_s4_tb(hg_i, hg_v) (s4_tb[(hg_i)] = (hg_v))

static void vyre_5f8e5e4cf0b93899_group(uint32_t hg_g0, uint32_t hg_g1, uint32_t hg_g2, const uint32_t *restrict b0_a, const uint32_t *restrict b1_b, uint32_t *restrict b2_out, uint32_t *restrict trapflag, uint32_t n0, uint32_t n1, uint32_t n2, uint32_t passmax) {
    uint32_t s3_ta[256];
    uint32_t s4_tb[256];
    uint32_t l_k_39 = 0;
    uint32_t l_t_9 = 0;
    uint32_t t10 = 0;
    uint32_t t14 = 0;
    uint32_t t19 = 0;
    uint32_t t26 = 0;
    uint32_t t31 = 0;
    uint32_t t37 = 0;
    uint32_t t38 = 0;
    uint32_t t40 = 0;
    uint32_t t44 = 0;
    uint32_t t7 = 0;
    uint32_t t8 = 0;
    uint32_t upasses = 0;
    struct { uint32_t l_c_4[256]; uint32_t l_r_5[256]; uint32_t l_acc_6[256]; uint32_t t12[256]; _Bool t13[256]; _Bool t17[256]; uint32_t t18[256]; uint32_t t25[256]; _Bool t30[256]; uint32_t t43[256]; } hg_st, *hg_s = &hg_st;
    const uint32_t hg_b0 = hg_g0 * 16u, hg_b1 = hg_g1 * 16u, hg_b2 = hg_g2 * 1u;
    const uint32_t hg_li = 0u, hg_gid0 = hg_b0, hg_gid1 = hg_b1, hg_gid2 = hg_b2;
    (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;
    upasses = 0u;
    {
    const uint32_t hg_lz = 0u;
    for (uint32_t hg_ly = 0; hg_ly < 16u; hg_ly++)
    for (uint32_t hg_lx = 0; hg_lx < 16u; hg_lx++) {
        const uint32_t hg_li = hg_lx + 16u * (hg_ly + 16u * hg_lz);
        const uint32_t hg_gid0 = hg_b0 + hg_lx, hg_gid1 = hg_b1 + hg_ly, hg_gid2 = hg_b2 + hg_lz;
        (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;
        uint32_t t1 = (hg_gid0 % 16u) + 16u * ((hg_gid1 % 16u) + 16u * (hg_gid2 % 1u));
        uint32_t z2 = t1;
        for (; z2 < 256u; z2 += 256u) {
            store_s3_ta(z2, 0u);
        }
        if (z2 < 256u) { store_trapflag(1u, 1u); }
        uint32_t z3 = t1;
        for (; z3 < 256u; z3 += 256u) {
            store_s4_tb(z3, 0u);
        }
        if (z3 < 256u) { store_trapflag(1u, 1u); }
    }
    }
    {
    const uint32_t hg_lz = 0u;
    for (uint32_t hg_ly = 0; hg_ly < 16u; hg_ly++)
    for (uint32_t hg_lx = 0; hg_lx < 16u; hg_lx++) {
        const uint32_t hg_li = hg_lx + 16u * (hg_ly + 16u * hg_lz);
        const uint32_t hg_gid0 = hg_b0 + hg_lx, hg_gid1 = hg_b1 + hg_ly, hg_gid2 = hg_b2 + hg_lz;
        (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;
        hg_s->l_c_4[hg_li] = hg_gid0;
        hg_s->l_r_5[hg_li] = hg_gid1;
        hg_s->l_acc_6[hg_li] = 0x0u;
    }
    }
    t7 = 0x0u;
    t8 = 0x2u;
    l_t_9 = t7;
    t10 = t8 > t7 ? t7 + ((t8 - t7) < (passmax - upasses) ? (t8 - t7) : (passmax - upasses)) : t7;
    upasses = upasses + (t10 - t7);
    while (l_t_9 < t10) {
        {
        const uint32_t hg_lz = 0u;
        for (uint32_t hg_ly = 0; hg_ly < 16u; hg_ly++)
        for (uint32_t hg_lx = 0; hg_lx < 16u; hg_lx++) {
            const uint32_t hg_li = hg_lx + 16u * (hg_ly + 16u * hg_lz);
            const uint32_t hg_gid0 = hg_b0 + hg_lx, hg_gid1 = hg_b1 + hg_ly, hg_gid2 = hg_b2 + hg_lz;
            (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;
            uint32_t t11 = (hg_gid1 % 16u) * 0x10u;
            hg_s->t12[hg_li] = t11 + (hg_gid0 % 16u);
            hg_s->t13[hg_li] = hg_s->l_r_5[hg_li] < 0x20u;
        }
        }
        t14 = l_t_9 * 0x10u;
        {
        const uint32_t hg_lz = 0u;
        for (uint32_t hg_ly = 0; hg_ly < 16u; hg_ly++)
        for (uint32_t hg_lx = 0; hg_lx < 16u; hg_lx++) {
            const uint32_t hg_li = hg_lx + 16u * (hg_ly + 16u * hg_lz);
            const uint32_t hg_gid0 = hg_b0 + hg_lx, hg_gid1 = hg_b1 + hg_ly, hg_gid2 = hg_b2 + hg_lz;
            (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;
            uint32_t t15 = t14 + (hg_gid0 % 16u);
            _Bool t16 = t15 < 0x20u;
            hg_s->t17[hg_li] = hg_s->t13[hg_li] && t16;
            hg_s->t18[hg_li] = hg_s->l_r_5[hg_li] * 0x20u;
        }
        }
        t19 = l_t_9 * 0x10u;
        {
        const uint32_t hg_lz = 0u;
        for (uint32_t hg_ly = 0; hg_ly < 16u; hg_ly++)
        for (uint32_t hg_lx = 0; hg_lx < 16u; hg_lx++) {
            const uint32_t hg_li = hg_lx + 16u * (hg_ly + 16u * hg_lz);
            const uint32_t hg_gid0 = hg_b0 + hg_lx, hg_gid1 = hg_b1 + hg_ly, hg_gid2 = hg_b2 + hg_lz;
            (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;
            uint32_t t20 = t19 + (hg_gid0 % 16u);
            uint32_t t21 = hg_s->t18[hg_li] + t20;
            uint32_t t22 = (t21 < n0) ? load_b0_a(t21) : 0u;
            uint32_t t23 = hg_s->t17[hg_li] ? t22 : 0x0u;
            if (hg_s->t12[hg_li] < 256u) { store_s3_ta(hg_s->t12[hg_li], t23); }
            uint32_t t24 = (hg_gid1 % 16u) * 0x10u;
            hg_s->t25[hg_li] = t24 + (hg_gid0 % 16u);
        }
        }
        t26 = l_t_9 * 0x10u;
        {
        const uint32_t hg_lz = 0u;
        for (uint32_t hg_ly = 0; hg_ly < 16u; hg_ly++)
        for (uint32_t hg_lx = 0; hg_lx < 16u; hg_lx++) {
            const uint32_t hg_li = hg_lx + 16u * (hg_ly + 16u * hg_lz);
            const uint32_t hg_gid0 = hg_b0 + hg_lx, hg_gid1 = hg_b1 + hg_ly, hg_gid2 = hg_b2 + hg_lz;
            (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;
            uint32_t t27 = t26 + (hg_gid1 % 16u);
            _Bool t28 = t27 < 0x20u;
            _Bool t29 = hg_s->l_c_4[hg_li] < 0x20u;
            hg_s->t30[hg_li] = t28 && t29;
        }
        }
        t31 = l_t_9 * 0x10u;
        {
        const uint32_t hg_lz = 0u;
        for (uint32_t hg_ly = 0; hg_ly < 16u; hg_ly++)
        for (uint32_t hg_lx = 0; hg_lx < 16u; hg_lx++) {
            const uint32_t hg_li = hg_lx + 16u * (hg_ly + 16u * hg_lz);
            const uint32_t hg_gid0 = hg_b0 + hg_lx, hg_gid1 = hg_b1 + hg_ly, hg_gid2 = hg_b2 + hg_lz;
            (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;
            uint32_t t32 = t31 + (hg_gid1 % 16u);
            uint32_t t33 = t32 * 0x20u;
            uint32_t t34 = t33 + hg_s->l_c_4[hg_li];
            uint32_t t35 = (t34 < n1) ? load_b1_b(t34) : 0u;
            uint32_t t36 = hg_s->t30[hg_li] ? t35 : 0x0u;
            if (hg_s->t25[hg_li] < 256u) { store_s4_tb(hg_s->t25[hg_li], t36); }
        }
        }
        t37 = 0x0u;
        t38 = 0x10u;
        l_k_39 = t37;
        t40 = t38 > t37 ? t37 + ((t38 - t37) < (passmax - upasses) ? (t38 - t37) : (passmax - upasses)) : t37;
        upasses = upasses + (t40 - t37);
        while (l_k_39 < t40) {
            {
            const uint32_t hg_lz = 0u;
            for (uint32_t hg_ly = 0; hg_ly < 16u; hg_ly++)
            for (uint32_t hg_lx = 0; hg_lx < 16u; hg_lx++) {
                const uint32_t hg_li = hg_lx + 16u * (hg_ly + 16u * hg_lz);
                const uint32_t hg_gid0 = hg_b0 + hg_lx, hg_gid1 = hg_b1 + hg_ly, hg_gid2 = hg_b2 + hg_lz;
                (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;
                uint32_t t41 = (hg_gid1 % 16u) * 0x10u;
                uint32_t t42 = t41 + l_k_39;
                hg_s->t43[hg_li] = (t42 < 256u) ? load_s3_ta(t42) : 0u;
            }
            }
            t44 = l_k_39 * 0x10u;
            {
            const uint32_t hg_lz = 0u;
            for (uint32_t hg_ly = 0; hg_ly < 16u; hg_ly++)
            for (uint32_t hg_lx = 0; hg_lx < 16u; hg_lx++) {
                const uint32_t hg_li = hg_lx + 16u * (hg_ly + 16u * hg_lz);
                const uint32_t hg_gid0 = hg_b0 + hg_lx, hg_gid1 = hg_b1 + hg_ly, hg_gid2 = hg_b2 + hg_lz;
                (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;
                uint32_t t45 = t44 + (hg_gid0 % 16u);
                uint32_t t46 = (t45 < 256u) ? load_s4_tb(t45) : 0u;
                uint32_t t47 = hg_s->t43[hg_li] * t46;
                uint32_t t48 = hg_s->l_acc_6[hg_li] + t47;
                hg_s->l_acc_6[hg_li] = t48;
            }
            }
            l_k_39++;
        }
        {
        const uint32_t hg_lz = 0u;
        for (uint32_t hg_ly = 0; hg_ly < 16u; hg_ly++)
        for (uint32_t hg_lx = 0; hg_lx < 16u; hg_lx++) {
            const uint32_t hg_li = hg_lx + 16u * (hg_ly + 16u * hg_lz);
            const uint32_t hg_gid0 = hg_b0 + hg_lx, hg_gid1 = hg_b1 + hg_ly, hg_gid2 = hg_b2 + hg_lz;
            (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;
            if (l_k_39 < t38) { store_trapflag(1u, 1u); }
        }
        }
        l_t_9++;
    }
    {
    const uint32_t hg_lz = 0u;
    for (uint32_t hg_ly = 0; hg_ly < 16u; hg_ly++)
    for (uint32_t hg_lx = 0; hg_lx < 16u; hg_lx++) {
        const uint32_t hg_li = hg_lx + 16u * (hg_ly + 16u * hg_lz);
        const uint32_t hg_gid0 = hg_b0 + hg_lx, hg_gid1 = hg_b1 + hg_ly, hg_gid2 = hg_b2 + hg_lz;
        (void)hg_li; (void)hg_gid0; (void)hg_gid1; (void)hg_gid2;
        if (l_t_9 < t8) { store_trapflag(1u, 1u); }
        _Bool t49 = hg_s->l_r_5[hg_li] < 0x20u;
        _Bool t50 = hg_s->l_c_4[hg_li] < 0x20u;
        _Bool t51 = t49 && t50;
        if (t51) {
            uint32_t t52 = hg_s->l_r_5[hg_li] * 0x20u;
            uint32_t t53 = t52 + hg_s->l_c_4[hg_li];
            if (t53 < n2) { store_b2_out(t53, hg_s->l_acc_6[hg_li]); }
        }
    }
    }
}

#if defined(HG_THREADS) && !defined(_OPENMP)
static void vyre_5f8e5e4cf0b93899_task(const hg_job_t *hg_job, int64_t hg_g) {
    void **hg_bufs = hg_job->bufs;
    const uint32_t *hg_words = hg_job->words;
    int64_t hg_w0 = hg_job->n0, hg_w1 = hg_job->n1;
    const uint32_t *restrict b0_a = (const uint32_t *)hg_bufs[0];
    const uint32_t *restrict b1_b = (const uint32_t *)hg_bufs[1];
    uint32_t *restrict b2_out = (uint32_t *)hg_bufs[2];
    uint32_t *restrict trapflag = (uint32_t *)hg_bufs[3];
    uint32_t n0 = hg_words[0];
    uint32_t n1 = hg_words[1];
    uint32_t n2 = hg_words[2];
    uint32_t passmax = hg_words[3];
    vyre_5f8e5e4cf0b93899_group((uint32_t)(hg_g % hg_w0), (uint32_t)((hg_g / hg_w0) % hg_w1),
                 (uint32_t)(hg_g / (hg_w0 * hg_w1)), b0_a, b1_b, b2_out, trapflag, n0, n1, n2, passmax);
}
#endif

void vyre_5f8e5e4cf0b93899(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    const uint32_t *restrict b0_a = (const uint32_t *)hg_bufs[0];
    const uint32_t *restrict b1_b = (const uint32_t *)hg_bufs[1];
    uint32_t *restrict b2_out = (uint32_t *)hg_bufs[2];
    uint32_t *restrict trapflag = (uint32_t *)hg_bufs[3];
    uint32_t n0 = hg_words[0];
    uint32_t n1 = hg_words[1];
    uint32_t n2 = hg_words[2];
    uint32_t passmax = hg_words[3];
    int64_t hg_w0 = (hg_n0 + 16 - 1) / 16, hg_w1 = (hg_n1 + 16 - 1) / 16;
    int64_t hg_groups = hg_w0 * hg_w1 * ((hg_n2 + 1 - 1) / 1);
#ifdef _OPENMP
    if (hg_groups > 1) {
        #pragma omp parallel for schedule(dynamic, 1)
        for (int64_t hg_g = 0; hg_g < hg_groups; hg_g++)
            vyre_5f8e5e4cf0b93899_group((uint32_t)(hg_g % hg_w0), (uint32_t)((hg_g / hg_w0) % hg_w1),
                         (uint32_t)(hg_g / (hg_w0 * hg_w1)), b0_a, b1_b, b2_out, trapflag, n0, n1, n2, passmax);
        return;
    }
#elif defined(HG_THREADS)
    if (hg_groups > 1) {
        hg_job_t hg_job = {hg_bufs, hg_words, hg_w0, hg_w1, 1, hg_groups};
        hg_parallel(vyre_5f8e5e4cf0b93899_task, &hg_job, hg_groups);
        return;
    }
#endif
    for (int64_t hg_g = 0; hg_g < hg_groups; hg_g++)
        vyre_5f8e5e4cf0b93899_group((uint32_t)(hg_g % hg_w0), (uint32_t)((hg_g / hg_w0) % hg_w1),
                     (uint32_t)(hg_g / (hg_w0 * hg_w1)), b0_a, b1_b, b2_out, trapflag, n0, n1, n2, passmax);
}
