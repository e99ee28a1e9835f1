#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

__device__ static inline float hg_bf16_to_f32(unsigned int h) {
    return __uint_as_float((h & 0xffffu) << 16u);
}

#define store_kpart(hg_i, hg_v) (kpart[(hg_i)] = (unsigned int)((hg_v)))
#define store_vpart(hg_i, hg_v) (vpart[(hg_i)] = (unsigned int)((hg_v)))
#define load_ksrc(hg_i) (hg_bf16_to_f32(ksrc[(hg_i)]))
#define load_vsrc(hg_i) (hg_bf16_to_f32(vsrc[(hg_i)]))

extern "C" __global__ void __launch_bounds__(64) kv_q8_amax_bf16(unsigned int* __restrict__ kpart, unsigned int* __restrict__ vpart, const unsigned short* __restrict__ ksrc, const unsigned short* __restrict__ vsrc, unsigned int n, unsigned int lanes, unsigned int row, unsigned int num_slots) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || lanes == 0u || lanes > 4096u || row > 0xFFFFEFFFu) return;
    unsigned int t = i / lanes;
    if (t >= n / lanes) return;
    unsigned int lane = i - t * lanes;
    unsigned int from = t * row;
    {
        unsigned int amax = 0u;
        for (unsigned int w = lane; w < row; w += lanes) {
            unsigned int a = __float_as_uint(load_ksrc(from + w)) & 0x7fffffffu;
            if (a < 0x7f800000u) amax = max(amax, a);
        }
        store_kpart(i, amax);
    }
    {
        unsigned int amax = 0u;
        for (unsigned int w = lane; w < row; w += lanes) {
            unsigned int a = __float_as_uint(load_vsrc(from + w)) & 0x7fffffffu;
            if (a < 0x7f800000u) amax = max(amax, a);
        }
        store_vpart(i, amax);
    }
}
