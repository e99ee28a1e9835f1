#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned int)((hg_v)))
#define load_src(hg_i) (src[(hg_i)])

extern "C" __global__ void __launch_bounds__(256) layout_copy_words(unsigned int* __restrict__ dst, const unsigned int* __restrict__ src, unsigned int n, unsigned int dat) {
    unsigned int j = (blockIdx.x * blockDim.x + threadIdx.x);
    if (j >= n) return;
    store_dst(dat + j, load_src(j));
}
