#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned int)((hg_v)))
#define load_vals(hg_i) (vals[(hg_i)])
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

extern "C" __global__ void __launch_bounds__(256) sparse_coo_u32(unsigned int* __restrict__ dst, const unsigned int* __restrict__ vals, const unsigned int* __restrict__ ix, const unsigned int* __restrict__ mt, unsigned int nnz, unsigned int n, unsigned int wpe, unsigned int nix, unsigned int rank) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= nnz) return;
    unsigned int fi = 0u;
    unsigned int ok = 1u;
    for (unsigned int d = 0u; d < rank; d++) {
        unsigned int c = 2u * (i * rank + d);
        unsigned int coord = c < nix ? load_ix(c) : 0xffffffffu;
        if (coord >= load_mt(2u * d)) ok = 0u;
        fi = fi + coord * load_mt(2u * d + 1u);
    }
    if (ok == 0u || fi >= n) return;
    for (unsigned int w = 0u; w < wpe; w++) store_dst(fi * wpe + w, load_vals(i * wpe + w));
}
