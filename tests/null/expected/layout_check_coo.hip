#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_err(hg_i, hg_v) (err[(hg_i)] = (unsigned int)((hg_v)))
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

extern "C" __global__ void __launch_bounds__(256) layout_check_coo(unsigned int* __restrict__ err, const unsigned int* __restrict__ ix, const unsigned int* __restrict__ mt, unsigned int nnz, unsigned int rank, unsigned int srt) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= nnz) return;
    unsigned int state = 0u;
    for (unsigned int d = 0u; d < rank; d++) {
        unsigned int c = 2u * (i * rank + d);
        unsigned int v = load_ix(c);
        if (v >= load_mt(2u * d)) store_err(0u, 1u);
        if (srt != 0u && i > 0u && state == 0u) {
            unsigned int w = load_ix(c - 2u * rank);
            if (v > w) state = 1u;
            if (v < w) state = 2u;
        }
    }
    if (srt != 0u && i > 0u && state != 1u) store_err(0u, 1u);
}
