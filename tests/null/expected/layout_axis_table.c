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

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint32_t)((hg_v)))
#define load_lp(hg_i) (lp[(hg_i)])

static inline void layout_axis_table_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, uint32_t *restrict dst, const uint32_t *restrict lp, uint32_t n, uint32_t d0, uint32_t nd, uint32_t base, uint32_t dat) {
    uint32_t j = hg_gid0;
    if (j >= n) return;
    uint32_t off = base;
    uint32_t rest = j;
    uint32_t k = d0 + nd;
    while (k > d0) {
        k = k - 1u;
        uint32_t at = k * 22u;
        uint32_t ext = hg_umax(load_lp(at), 1u);
        uint32_t x = rest % ext;
        rest = rest / ext;
        if (load_lp(at + 1u) == 0u) {
            uint32_t nlev = hg_umin(load_lp(at + 2u), 9u);
            for (uint32_t l = 0u; l < nlev; l++) {
                uint32_t t = hg_umax(load_lp(at + 4u + 2u * l), 1u);
                uint32_t q = x / t;
                x = x - q * t;
                off = off + q * load_lp(at + 5u + 2u * l);
            }
            off = off + x * load_lp(at + 3u);
        } else {
            uint32_t nb = hg_umin(load_lp(at + 2u), 32u);
            uint32_t d = load_lp(at + 3u);
            uint32_t r = load_lp(at + 4u);
            for (uint32_t b = 0u; b < nb; b++) {
                uint32_t pos = b * r + d;
                if (pos < 32u) off = off + (((x >> b) & 1u) << pos);
            }
        }
    }
    store_dst(dat + j, off);
}

static __attribute__((noinline)) void layout_axis_table_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, uint32_t *restrict dst, const uint32_t *restrict lp, uint32_t n, uint32_t d0, uint32_t nd, uint32_t base, uint32_t dat) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        layout_axis_table_item(hg_x, hg_y, hg_z, dst, lp, n, d0, nd, base, dat);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

void layout_axis_table(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    uint32_t *restrict dst = (uint32_t *)hg_bufs[0];
    const uint32_t *restrict lp = (const uint32_t *)hg_bufs[1];
    uint32_t n = hg_words[0];
    uint32_t d0 = hg_words[1];
    uint32_t nd = hg_words[2];
    uint32_t base = hg_words[3];
    uint32_t dat = hg_words[4];
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
            layout_axis_table_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, lp, n, d0, nd, base, dat);
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        layout_axis_table_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, lp, n, d0, nd, base, dat);
}
