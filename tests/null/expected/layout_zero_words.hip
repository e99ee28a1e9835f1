#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned int)((hg_v)))

extern "C" __global__ void __launch_bounds__(256) layout_zero_words(unsigned int* __restrict__ dst, unsigned int n) {
    unsigned int j = (blockIdx.x * blockDim.x + threadIdx.x);
    if (j >= n) return;
    store_dst(j, 0u);
}
