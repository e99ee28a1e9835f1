#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned int)((hg_v)))
#define load_src(hg_i) (src[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) transpose_u32(unsigned int* __restrict__ dst, const unsigned int* __restrict__ src, unsigned int rows, unsigned int cols) {
    unsigned int c = (blockIdx.x * blockDim.x + threadIdx.x);
    unsigned int r = (blockIdx.y * blockDim.y + threadIdx.y);
    if (c >= cols || r >= rows) return;
    store_dst(c * rows + r, load_src(r * cols + c));
}
