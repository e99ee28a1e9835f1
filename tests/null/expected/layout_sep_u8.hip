#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned char)((hg_v)))
#define load_src(hg_i) ((unsigned int)(src[(hg_i)]))
#define load_tx(hg_i) (tx[(hg_i)])
#define load_ty(hg_i) (ty[(hg_i)])
#define load_tz(hg_i) (tz[(hg_i)])

extern "C" __global__ void __launch_bounds__(256) layout_sep_u8(unsigned char* __restrict__ dst, const unsigned char* __restrict__ src, const unsigned int* __restrict__ tx, const unsigned int* __restrict__ ty, const unsigned int* __restrict__ tz, unsigned int nx, unsigned int ny, unsigned int nz, unsigned int wpe, unsigned int woff, unsigned int nsrc) {
    unsigned int x = (blockIdx.x * blockDim.x + threadIdx.x);
    unsigned int y = (blockIdx.y * blockDim.y + threadIdx.y);
    unsigned int z = (blockIdx.z * blockDim.z + threadIdx.z);
    if (x >= nx || y >= ny || z >= nz) return;
    unsigned int f = (z * ny + y) * nx + x;
    unsigned int so = load_tz(z) + load_ty(y) + load_tx(x);
    unsigned int s = woff + so * wpe;
    if (wpe == 1u) {
        // The common case without the word loop: pocl vectorises it across the work-group.
        store_dst(f, s < nsrc ? load_src(s) : 0u);
        return;
    }
    unsigned int o = f * wpe;
    for (unsigned int w = 0u; w < wpe; w++) {
        unsigned int v = 0u;
        if (s + w < nsrc && s + w >= s) v = load_src(s + w);
        store_dst(o + w, v);
    }
}
