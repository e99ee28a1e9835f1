#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

__device__ static inline unsigned int hg_f32_to_bf16(float v) {
    unsigned int b = __float_as_uint(v);
    // NaN becomes the canonical quiet NaN with its sign, as ml_dtypes does.
    if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16u) & 0x8000u) | 0x7fc0u;
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned short)hg_f32_to_bf16((hg_v)))
#define load_src(hg_i) (src[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) f32_to_bf16(unsigned short* __restrict__ dst, const float* __restrict__ src, unsigned int n) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    store_dst(i, load_src(i));
}
