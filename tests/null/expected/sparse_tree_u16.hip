#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned short)((hg_v)))
#define load_vals(hg_i) ((unsigned int)(vals[(hg_i)]))
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

extern "C" __global__ void __launch_bounds__(256) sparse_tree_u16(unsigned short* __restrict__ dst, const unsigned short* __restrict__ vals, const unsigned int* __restrict__ ix, const unsigned int* __restrict__ mt, unsigned int nnz, unsigned int n, unsigned int wpe, unsigned int nix, unsigned int nlev) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= nnz) return;
    unsigned int fi = 0u;
    unsigned int p = i;
    unsigned int ok = 1u;
    unsigned int l = nlev;
    while (l > 0u) {
        l = l - 1u;
        unsigned int at = l * 6u;
        unsigned int coord = p;
        if (load_mt(at + 5u) == 0u) {
            unsigned int c = load_mt(at) + 2u * p;
            coord = c < nix ? load_ix(c) : 0xffffffffu;
        }
        if (coord >= load_mt(at + 4u)) ok = 0u;
        fi = fi + coord * load_mt(at + 3u);
        if (l > 0u) {
            unsigned int po = load_mt(at + 1u);
            unsigned int lo = 0u;
            unsigned int hi = max(load_mt(at + 2u), 1u) - 1u;
            while (hi - lo > 1u) {
                unsigned int md = lo + (hi - lo) / 2u;
                unsigned int c = po + 2u * md;
                unsigned int v = c < nix ? load_ix(c) : 0xffffffffu;
                if (v <= p) lo = md; else hi = md;
            }
            p = lo;
        }
    }
    if (ok == 0u || fi >= n) return;
    for (unsigned int w = 0u; w < wpe; w++) store_dst(fi * wpe + w, load_vals(i * wpe + w));
}
