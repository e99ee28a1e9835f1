#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned char)((hg_v)))
#define load_data(hg_i) ((unsigned int)(data[(hg_i)]))

extern "C" __global__ void __launch_bounds__(64) unpack_int_u8(unsigned char* __restrict__ dst, const unsigned char* __restrict__ data, unsigned int n, unsigned int doff, unsigned int bits, unsigned int sgn) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    unsigned int bit = i * bits;
    unsigned int code = (load_data(doff + (bit >> 3u)) >> (bit & 7u)) & ((1u << bits) - 1u);
    if (sgn != 0u && code >= (1u << (bits - 1u))) code = code | ~((1u << bits) - 1u);
    store_dst(i, code & 255u);
}
