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
#define load_ix(hg_i) (ix[(hg_i)])

static inline void layout_check_tree_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, uint32_t *restrict err, const uint32_t *restrict ix, uint32_t nodes, uint32_t pos_off, uint32_t crd_off, uint32_t ncrd, uint32_t extent, uint32_t nix, uint32_t span) {
    uint32_t q = hg_gid0;
    if (q >= nodes) return;
    uint32_t pa = pos_off + 2u * q;
    if (pa + 2u >= nix) { store_err(0u, 1u); return; }
    uint32_t a = load_ix(pa);
    uint32_t b = load_ix(pa + 2u);
    if (q == 0u && a != 0u) store_err(0u, 1u);
    if (q + 1u == nodes && b != ncrd) store_err(0u, 1u);
    if (a > b || b > ncrd) { store_err(0u, 1u); return; }
    uint32_t sp = hg_umax(span, 1u);
    if (hg_gid1 > (b - a) / sp) return;
    uint32_t k0 = a + hg_gid1 * sp;
    uint32_t k1 = k0 + hg_umin(b - k0, sp);
    uint32_t prev = 0u;
    if (k0 > a && crd_off + 2u * k0 - 2u < nix) prev = load_ix(crd_off + 2u * k0 - 2u);
    for (uint32_t k = k0; k < k1; k++) {
        uint32_t c = crd_off + 2u * k;
        uint32_t v = c < nix ? load_ix(c) : extent;
        if (v >= extent || (k > a && v <= prev)) { store_err(0u, 1u); return; }
        prev = v;
    }
}

static __attribute__((noinline)) void layout_check_tree_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, uint32_t *restrict err, const uint32_t *restrict ix, uint32_t nodes, uint32_t pos_off, uint32_t crd_off, uint32_t ncrd, uint32_t extent, uint32_t nix, uint32_t span) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        layout_check_tree_item(hg_x, hg_y, hg_z, err, ix, nodes, pos_off, crd_off, ncrd, extent, nix, span);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

void layout_check_tree(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    uint32_t *restrict err = (uint32_t *)hg_bufs[0];
    const uint32_t *restrict ix = (const uint32_t *)hg_bufs[1];
    uint32_t nodes = hg_words[0];
    uint32_t pos_off = hg_words[1];
    uint32_t crd_off = hg_words[2];
    uint32_t ncrd = hg_words[3];
    uint32_t extent = hg_words[4];
    uint32_t nix = hg_words[5];
    uint32_t span = hg_words[6];
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
            layout_check_tree_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, err, ix, nodes, pos_off, crd_off, ncrd, extent, nix, span);
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        layout_check_tree_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, err, ix, nodes, pos_off, crd_off, ncrd, extent, nix, span);
}
