#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

__device__ static inline float hg_bf16_to_f32(unsigned int h) {
    return __uint_as_float((h & 0xffffu) << 16u);
}

__device__ static inline unsigned int hg_f32_to_bf16(float v) {
    unsigned int b = __float_as_uint(v);
    // NaN becomes the canonical quiet NaN with its sign, as ml_dtypes does.
    if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16u) & 0x8000u) | 0x7fc0u;
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

#define load_dst(hg_i) ((unsigned int)(dst[(hg_i)]))
#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned short)((hg_v)))
#define load_src(hg_i) ((unsigned int)(src[(hg_i)]))
#define load_tx(hg_i) (tx[(hg_i)])
#define load_ty(hg_i) (ty[(hg_i)])
#define load_tz(hg_i) (tz[(hg_i)])

extern "C" __global__ void __launch_bounds__(256) layout_add_bf16(unsigned short* __restrict__ dst, const unsigned short* __restrict__ src, const unsigned int* __restrict__ tx, const unsigned int* __restrict__ ty, const unsigned int* __restrict__ tz, unsigned int nx, unsigned int ny, unsigned int nz, unsigned int ndst) {
    unsigned int x = (blockIdx.x * blockDim.x + threadIdx.x);
    unsigned int y = (blockIdx.y * blockDim.y + threadIdx.y);
    unsigned int z = (blockIdx.z * blockDim.z + threadIdx.z);
    if (x >= nx || y >= ny || z >= nz) return;
    unsigned int f = (z * ny + y) * nx + x;
    unsigned int d = load_tz(z) + load_ty(y) + load_tx(x);
    if (d >= ndst) return;
    store_dst(d, hg_f32_to_bf16(hg_bf16_to_f32(load_dst(d)) + hg_bf16_to_f32(load_src(f))));
}
