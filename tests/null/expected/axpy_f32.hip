#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define load_y(hg_i) (y[(hg_i)])
#define store_y(hg_i, hg_v) (y[(hg_i)] = (float)((hg_v)))
#define load_x(hg_i) (x[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) axpy_f32(float* __restrict__ y, const float* __restrict__ x, float a, unsigned int n) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    store_y(i, fmaf(a, load_x(i), load_y(i)));
}
