#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned char)((hg_v)))
#define load_src(hg_i) ((unsigned int)(src[(hg_i)]))

extern "C" __global__ void __launch_bounds__(256) layout_pack_codes(unsigned char* __restrict__ dst, const unsigned char* __restrict__ src, unsigned int n, unsigned int bits, unsigned int epu, unsigned int upb) {
    unsigned int u = (blockIdx.x * blockDim.x + threadIdx.x);
    if (u * epu >= n) return;
    unsigned int acc = 0u;
    for (unsigned int e = 0u; e < epu; e++) {
        unsigned int f = u * epu + e;
        if (f < n) acc = acc | ((load_src(f) & ((1u << bits) - 1u)) << (e * bits));
    }
    for (unsigned int b = 0u; b < upb; b++) store_dst(u * upb + b, (acc >> (8u * b)) & 255u);
}
