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

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint8_t)((hg_v)))
#define load_data(hg_i) ((uint32_t)(data[(hg_i)]))

static inline void unpack_int_u8_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, uint8_t *restrict dst, const uint8_t *restrict data, uint32_t n, uint32_t doff, uint32_t bits, uint32_t sgn) {
    uint32_t i = hg_gid0;
    if (i >= n) return;
    uint32_t bit = i * bits;
    uint32_t code = (load_data(doff + (bit >> 3u)) >> (bit & 7u)) & ((1u << bits) - 1u);
    if (sgn != 0u && code >= (1u << (bits - 1u))) code = code | ~((1u << bits) - 1u);
    store_dst(i, code & 255u);
}

static __attribute__((noinline)) void unpack_int_u8_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, uint8_t *restrict dst, const uint8_t *restrict data, uint32_t n, uint32_t doff, uint32_t bits, uint32_t sgn) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        unpack_int_u8_item(hg_x, hg_y, hg_z, dst, data, n, doff, bits, sgn);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

void unpack_int_u8(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    uint8_t *restrict dst = (uint8_t *)hg_bufs[0];
    const uint8_t *restrict data = (const uint8_t *)hg_bufs[1];
    uint32_t n = hg_words[0];
    uint32_t doff = hg_words[1];
    uint32_t bits = hg_words[2];
    uint32_t sgn = hg_words[3];
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
            unpack_int_u8_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, data, n, doff, bits, sgn);
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        unpack_int_u8_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, data, n, doff, bits, sgn);
}
