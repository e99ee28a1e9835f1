#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#if !defined(__HIPCC_RTC__)
#include <hip/hip_fp16.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (float)((hg_v)))
#define load_src(hg_i) (__half2float(src[(hg_i)]))

extern "C" __global__ void __launch_bounds__(64) f16_to_f32(float* __restrict__ dst, const __half* __restrict__ src, unsigned int n) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    store_dst(i, load_src(i));
}
