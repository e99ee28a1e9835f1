#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_err(hg_i, hg_v) (err[(hg_i)] = (unsigned int)((hg_v)))
#define load_ix(hg_i) (ix[(hg_i)])

extern "C" __global__ void __launch_bounds__(256) layout_check_hi(unsigned int* __restrict__ err, const unsigned int* __restrict__ ix, unsigned int n) {
    unsigned int j = (blockIdx.x * blockDim.x + threadIdx.x);
    if (j >= n) return;
    if (load_ix(2u * j + 1u) != 0u) store_err(0u, 1u);
}
