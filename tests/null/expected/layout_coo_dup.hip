#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_err(hg_i, hg_v) (err[(hg_i)] = (unsigned int)((hg_v)))
#define load_mark(hg_i) (mark[(hg_i)])
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

extern "C" __global__ void __launch_bounds__(256) layout_coo_dup(unsigned int* __restrict__ err, const unsigned int* __restrict__ mark, const unsigned int* __restrict__ ix, const unsigned int* __restrict__ mt, unsigned int nnz, unsigned int rank, unsigned int n) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= nnz) return;
    unsigned int fi = 0u;
    for (unsigned int d = 0u; d < rank; d++) {
        fi = fi + load_ix(2u * (i * rank + d)) * load_mt(2u * d + 1u);
    }
    if (fi >= n) return;
    if (load_mark(fi) != i + 1u) store_err(0u, 1u);
}
