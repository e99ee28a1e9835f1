#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define load_b0_x(hg_i) (b0_x[(hg_i)])
#define load_b1_y(hg_i) (b1_y[(hg_i)])
#define store_b1_y(hg_i, hg_v) (b1_y[(hg_i)] = (unsigned int)((hg_v)))

extern "C" __global__ void __launch_bounds__(4) vyre_3a49e86767270a58(const unsigned int* __restrict__ b0_x, unsigned int* __restrict__ b1_y, unsigned int n0, unsigned int n1) {
    {
        unsigned int t1 = ((blockIdx.x * blockDim.x + threadIdx.x) < n0) ? load_b0_x((blockIdx.x * blockDim.x + threadIdx.x)) : 0u;
        unsigned int t2 = __float_as_uint(__uint_as_float(t1));
        float t3 = __uint_as_float(((t2 & 0x7fffffffu) > 0x7f800000u) ? 0x7fc00000u : ((((t2 & 0x7f800000u) == 0u)) ? (t2 & 0x80000000u) : t2));
        unsigned int t4 = ((blockIdx.x * blockDim.x + threadIdx.x) < n0) ? load_b0_x((blockIdx.x * blockDim.x + threadIdx.x)) : 0u;
        unsigned int t5 = __float_as_uint(__uint_as_float(t4));
        float t6 = __uint_as_float(((t5 & 0x7fffffffu) > 0x7f800000u) ? 0x7fc00000u : ((((t5 & 0x7f800000u) == 0u)) ? (t5 & 0x80000000u) : t5));
        unsigned int t7 = __float_as_uint(fmaf(t3, t6, __uint_as_float(0xbf800000u)));
        float t8 = __uint_as_float(((t7 & 0x7fffffffu) > 0x7f800000u) ? 0x7fc00000u : ((((t7 & 0x7f800000u) == 0u)) ? (t7 & 0x80000000u) : t7));
        if ((blockIdx.x * blockDim.x + threadIdx.x) < n1) { store_b1_y((blockIdx.x * blockDim.x + threadIdx.x), __float_as_uint(t8)); }
    }
}
