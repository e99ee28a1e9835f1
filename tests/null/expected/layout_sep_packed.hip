#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned char)((hg_v)))
#define load_src(hg_i) ((unsigned int)(src[(hg_i)]))
#define load_tx(hg_i) (tx[(hg_i)])
#define load_ty(hg_i) (ty[(hg_i)])
#define load_tz(hg_i) (tz[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) layout_sep_packed(unsigned char* __restrict__ dst, const unsigned char* __restrict__ src, const unsigned int* __restrict__ tx, const unsigned int* __restrict__ ty, const unsigned int* __restrict__ tz, unsigned int n, unsigned int nx, unsigned int ny, unsigned int nz, unsigned int bits, unsigned int epu, unsigned int upb, unsigned int nunits, unsigned int doff, unsigned int nsrc) {
    unsigned int u = (blockIdx.x * blockDim.x + threadIdx.x);
    if (u >= nunits) return;
    unsigned int acc = 0u;
    for (unsigned int e = 0u; e < epu; e++) {
        unsigned int f = u * epu + e;
        if (f < n) {
            unsigned int x = f % nx;
            unsigned int yz = f / nx;
            unsigned int y = yz % ny;
            unsigned int z = yz / ny;
            unsigned int so = load_tz(z) + load_ty(y) + load_tx(x);
            unsigned int bit = so * bits;
            unsigned int at = doff + (bit >> 3u);
            unsigned int sh = bit & 7u;
            unsigned int code = 0u;
            if (at < nsrc) code = load_src(at) >> sh;
            if (sh + bits > 8u && at + 1u < nsrc) code = code | (load_src(at + 1u) << (8u - sh));
            acc = acc | ((code & ((1u << bits) - 1u)) << (e * bits));
        }
    }
    for (unsigned int b = 0u; b < upb; b++) {
        store_dst(u * upb + b, (acc >> (8u * b)) & 255u);
    }
}
