#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned int)((hg_v)))
#define load_lp(hg_i) (lp[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) layout_axis_table(unsigned int* __restrict__ dst, const unsigned int* __restrict__ lp, unsigned int n, unsigned int d0, unsigned int nd, unsigned int base, unsigned int dat) {
    unsigned int j = (blockIdx.x * blockDim.x + threadIdx.x);
    if (j >= n) return;
    unsigned int off = base;
    unsigned int rest = j;
    unsigned int k = d0 + nd;
    while (k > d0) {
        k = k - 1u;
        unsigned int at = k * 22u;
        unsigned int ext = max(load_lp(at), 1u);
        unsigned int x = rest % ext;
        rest = rest / ext;
        if (load_lp(at + 1u) == 0u) {
            unsigned int nlev = min(load_lp(at + 2u), 9u);
            for (unsigned int l = 0u; l < nlev; l++) {
                unsigned int t = max(load_lp(at + 4u + 2u * l), 1u);
                unsigned int q = x / t;
                x = x - q * t;
                off = off + q * load_lp(at + 5u + 2u * l);
            }
            off = off + x * load_lp(at + 3u);
        } else {
            unsigned int nb = min(load_lp(at + 2u), 32u);
            unsigned int d = load_lp(at + 3u);
            unsigned int r = load_lp(at + 4u);
            for (unsigned int b = 0u; b < nb; b++) {
                unsigned int pos = b * r + d;
                if (pos < 32u) off = off + (((x >> b) & 1u) << pos);
            }
        }
    }
    store_dst(dat + j, off);
}
