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
#endif

#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint32_t)((hg_v)))
#define load_mark(hg_i) (mark[(hg_i)])
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

static inline void layout_coo_dup_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, uint32_t *restrict err, const uint32_t *restrict mark, const uint32_t *restrict ix, const uint32_t *restrict mt, uint32_t nnz, uint32_t rank, uint32_t n) {
    uint32_t i = hg_gid0;
    if (i >= nnz) return;
    uint32_t fi = 0u;
    for (uint32_t d = 0u; d < rank; d++) {
        fi = fi + load_ix(2u * (i * rank + d)) * load_mt(2u * d + 1u);
    }
    if (fi >= n) return;
    if (load_mark(fi) != i + 1u) store_err(0u, 1u);
}

static __attribute__((noinline)) void layout_coo_dup_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, uint32_t *restrict err, const uint32_t *restrict mark, const uint32_t *restrict ix, const uint32_t *restrict mt, uint32_t nnz, uint32_t rank, uint32_t n) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        layout_coo_dup_item(hg_x, hg_y, hg_z, err, mark, ix, mt, nnz, rank, n);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

void layout_coo_dup(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    uint32_t *restrict err = (uint32_t *)hg_bufs[0];
    const uint32_t *restrict mark = (const uint32_t *)hg_bufs[1];
    const uint32_t *restrict ix = (const uint32_t *)hg_bufs[2];
    const uint32_t *restrict mt = (const uint32_t *)hg_bufs[3];
    uint32_t nnz = hg_words[0];
    uint32_t rank = hg_words[1];
    uint32_t n = hg_words[2];
    int64_t hg_total = hg_n0 * hg_n1 * hg_n2;
    int64_t hg_size = 4096;
    int64_t hg_chunks = (hg_total + hg_size - 1) / hg_size;
#ifdef _OPENMP
    int64_t hg_want = 8 * (int64_t)omp_get_max_threads();
    if (hg_chunks > 1 && hg_chunks < hg_want) {
        hg_size = (hg_total + hg_want - 1) / hg_want;
        hg_chunks = (hg_total + hg_size - 1) / hg_size;
    }
    if (hg_chunks > 1) {
        #pragma omp parallel for schedule(dynamic, 1)
        for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
            layout_coo_dup_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, err, mark, ix, mt, nnz, rank, n);
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        layout_coo_dup_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, err, mark, ix, mt, nnz, rank, n);
}
