#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned int)((hg_v)))

extern "C" __global__ void __launch_bounds__(64) fill_u32(unsigned int* __restrict__ dst, unsigned int value, unsigned int n) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    store_dst(i, value);
}
