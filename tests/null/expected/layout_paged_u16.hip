#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned short)((hg_v)))
#define load_pool(hg_i) ((unsigned int)(pool[(hg_i)]))
#define load_bt(hg_i) (bt[(hg_i)])
#define load_sp(hg_i) (sp[(hg_i)])
#define load_ts(hg_i) (ts[(hg_i)])

extern "C" __global__ void __launch_bounds__(256) layout_paged_u16(unsigned short* __restrict__ dst, const unsigned short* __restrict__ pool, const unsigned int* __restrict__ bt, const unsigned int* __restrict__ sp, const unsigned int* __restrict__ ts, unsigned int row, unsigned int ntok, unsigned int nseq, unsigned int ps, unsigned int npages, unsigned int nbt, unsigned int iw, unsigned int wpe, unsigned int npool) {
    unsigned int x = (blockIdx.x * blockDim.x + threadIdx.x);
    unsigned int y = (blockIdx.y * blockDim.y + threadIdx.y);
    if (x >= row || y >= ntok) return;
    unsigned int lo = 0u;
    unsigned int hi = nseq;
    while (hi - lo > 1u) {
        unsigned int md = lo + (hi - lo) / 2u;
        if (load_ts(md) <= y) lo = md; else hi = md;
    }
    unsigned int t = y - load_ts(lo);
    unsigned int slot = load_sp(lo * iw) + t / ps;
    unsigned int page = slot < nbt ? load_bt(slot * iw) : npages;
    unsigned int ok = page < npages ? 1u : 0u;
    unsigned int src = 0u;
    if (ok != 0u) src = ((page * ps + t % ps) * row + x) * wpe;
    unsigned int o = (y * row + x) * wpe;
    for (unsigned int w = 0u; w < wpe; w++) {
        unsigned int v = 0u;
        if (ok != 0u && src + w < npool) v = load_pool(src + w);
        store_dst(o + w, v);
    }
}
