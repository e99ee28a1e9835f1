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
#define load_pool(hg_i) (pool[(hg_i)])
#define load_bt(hg_i) (bt[(hg_i)])
#define load_sp(hg_i) (sp[(hg_i)])
#define load_ts(hg_i) (ts[(hg_i)])

static inline void layout_paged_u32_item(uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, uint32_t *restrict dst, const uint32_t *restrict pool, const uint32_t *restrict bt, const uint32_t *restrict sp, const uint32_t *restrict ts, uint32_t row, uint32_t ntok, uint32_t nseq, uint32_t ps, uint32_t npages, uint32_t nbt, uint32_t iw, uint32_t wpe, uint32_t npool) {
    uint32_t x = hg_gid0;
    uint32_t y = hg_gid1;
    if (x >= row || y >= ntok) return;
    uint32_t lo = 0u;
    uint32_t hi = nseq;
    while (hi - lo > 1u) {
        uint32_t md = lo + (hi - lo) / 2u;
        if (load_ts(md) <= y) lo = md; else hi = md;
    }
    uint32_t t = y - load_ts(lo);
    uint32_t slot = load_sp(lo * iw) + t / ps;
    uint32_t page = slot < nbt ? load_bt(slot * iw) : npages;
    uint32_t ok = page < npages ? 1u : 0u;
    uint32_t src = 0u;
    if (ok != 0u) src = ((page * ps + t % ps) * row + x) * wpe;
    uint32_t o = (y * row + x) * wpe;
    for (uint32_t w = 0u; w < wpe; w++) {
        uint32_t v = 0u;
        if (ok != 0u && src + w < npool) v = load_pool(src + w);
        store_dst(o + w, v);
    }
}

static __attribute__((noinline)) void layout_paged_u32_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1, uint32_t *restrict dst, const uint32_t *restrict pool, const uint32_t *restrict bt, const uint32_t *restrict sp, const uint32_t *restrict ts, uint32_t row, uint32_t ntok, uint32_t nseq, uint32_t ps, uint32_t npages, uint32_t nbt, uint32_t iw, uint32_t wpe, uint32_t npool) {
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));
    for (; hg_t < hg_end; hg_t++) {
        layout_paged_u32_item(hg_x, hg_y, hg_z, dst, pool, bt, sp, ts, row, ntok, nseq, ps, npages, nbt, iw, wpe, npool);
        if (++hg_x == (uint32_t)hg_n0) {
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) { hg_y = 0; hg_z++; }
        }
    }
}

void layout_paged_u32(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {
    uint32_t *restrict dst = (uint32_t *)hg_bufs[0];
    const uint32_t *restrict pool = (const uint32_t *)hg_bufs[1];
    const uint32_t *restrict bt = (const uint32_t *)hg_bufs[2];
    const uint32_t *restrict sp = (const uint32_t *)hg_bufs[3];
    const uint32_t *restrict ts = (const uint32_t *)hg_bufs[4];
    uint32_t row = hg_words[0];
    uint32_t ntok = hg_words[1];
    uint32_t nseq = hg_words[2];
    uint32_t ps = hg_words[3];
    uint32_t npages = hg_words[4];
    uint32_t nbt = hg_words[5];
    uint32_t iw = hg_words[6];
    uint32_t wpe = hg_words[7];
    uint32_t npool = hg_words[8];
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
            layout_paged_u32_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, pool, bt, sp, ts, row, ntok, nseq, ps, npages, nbt, iw, wpe, npool);
        return;
    }
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        layout_paged_u32_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1, dst, pool, bt, sp, ts, row, ntok, nseq, ps, npages, nbt, iw, wpe, npool);
}
