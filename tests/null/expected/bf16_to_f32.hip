#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

__device__ static inline float hg_bf16_to_f32(unsigned int h) {
    return __uint_as_float((h & 0xffffu) << 16u);
}

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (float)((hg_v)))
#define load_src(hg_i) (hg_bf16_to_f32(src[(hg_i)]))

extern "C" __global__ void __launch_bounds__(64) bf16_to_f32(float* __restrict__ dst, const unsigned short* __restrict__ src, unsigned int n) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    store_dst(i, load_src(i));
}
