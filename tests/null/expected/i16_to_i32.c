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

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (int32_t)((hg_v)))
#define load_src(hg_i) ((int32_t)(src[(hg_i)]))

static inline void i16_to_i32_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, int32_t *restrict dst, const int16_t *restrict src, uint32_t n) {
    uint32_t i = hg_gid0;
    if (i >= n) return;
    store_dst(i, load_src(i));
}

static __attribute__((noinline)) void i16_to_i32_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, int32_t *restrict dst, const int16_t *restrict src, uint32_t n) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        i16_to_i32_item(hg_x, hg_y, hg_z, dst, src, n);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

void i16_to_i32(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    int32_t *restrict dst = (int32_t *)hg_bufs[0];
    const int16_t *restrict src = (const int16_t *)hg_bufs[1];
    uint32_t n = hg_words[0];
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
            i16_to_i32_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, src, n);
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        i16_to_i32_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, src, n);
}
