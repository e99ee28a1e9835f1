#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

__device__ static inline unsigned int hg_f32_to_bf16(float v) {
    unsigned int b = __float_as_uint(v);
    // NaN becomes the canonical quiet NaN with its sign, as ml_dtypes does.
    if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16u) & 0x8000u) | 0x7fc0u;
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

#define store_kdst(hg_i, hg_v) (kdst[(hg_i)] = (unsigned short)hg_f32_to_bf16((hg_v)))
#define store_vdst(hg_i, hg_v) (vdst[(hg_i)] = (unsigned short)hg_f32_to_bf16((hg_v)))
#define load_kpool(hg_i) ((unsigned int)(kpool[(hg_i)]))
#define load_vpool(hg_i) ((unsigned int)(vpool[(hg_i)]))
#define load_slots(hg_i) (slots[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) kv_f8_gather_bf16(unsigned short* __restrict__ kdst, unsigned short* __restrict__ vdst, const unsigned char* __restrict__ kpool, const unsigned char* __restrict__ vpool, const unsigned int* __restrict__ slots, unsigned int n, unsigned int lanes, unsigned int row, unsigned int num_slots) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    unsigned int t = i / lanes;
    if (t >= n / lanes) return;
    unsigned int lane = i - t * lanes;
    unsigned int slot = load_slots(t);
    if (slot == 0xFFFFFFFEu) return;  // SKIP_SLOT: another window's token
    unsigned int to = t * row;
    if (slot >= num_slots) {
        for (unsigned int w = lane; w < row; w += lanes) {
            store_kdst(to + w, 0.0f);
            store_vdst(to + w, 0.0f);
        }
        return;
    }
    unsigned int from = slot * row;
    for (unsigned int w = lane; w < row; w += lanes) {
        unsigned int c = load_kpool(from + w);
        unsigned int sign = (c & 0x80u) << 24u;
        unsigned int e = (c >> 3u) & 15u;
        unsigned int m = c & 7u;
        float v = __uint_as_float(sign | ((e + 120u) << 23u) | (m << 20u));
        if (e == 15u && m == 7u) v = __uint_as_float(sign | 0x7fc00000u);
        if (e == 0u) v = __uint_as_float(sign | __float_as_uint((float)(m) * 0.001953125f));
        store_kdst(to + w, v);
    }
    for (unsigned int w = lane; w < row; w += lanes) {
        unsigned int c = load_vpool(from + w);
        unsigned int sign = (c & 0x80u) << 24u;
        unsigned int e = (c >> 3u) & 15u;
        unsigned int m = c & 7u;
        float v = __uint_as_float(sign | ((e + 120u) << 23u) | (m << 20u));
        if (e == 15u && m == 7u) v = __uint_as_float(sign | 0x7fc00000u);
        if (e == 0u) v = __uint_as_float(sign | __float_as_uint((float)(m) * 0.001953125f));
        store_vdst(to + w, v);
    }
}
