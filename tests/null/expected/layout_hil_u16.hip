#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned short)((hg_v)))
#define load_src(hg_i) ((unsigned int)(src[(hg_i)]))

extern "C" __global__ void __launch_bounds__(256) layout_hil_u16(unsigned short* __restrict__ dst, const unsigned short* __restrict__ src, unsigned int nx, unsigned int ny, unsigned int nz, unsigned int wpe, unsigned int woff, unsigned int nsrc, unsigned int hp, unsigned int hr) {
    unsigned int x = (blockIdx.x * blockDim.x + threadIdx.x);
    unsigned int y = (blockIdx.y * blockDim.y + threadIdx.y);
    unsigned int z = (blockIdx.z * blockDim.z + threadIdx.z);
    if (x >= nx || y >= ny || z >= nz) return;
    unsigned int f = (z * ny + y) * nx + x;
    unsigned int hm = (1u << hp) - 1u;
    unsigned int hx = 0u;
    for (unsigned int k = 0u; k < hr; k++) {
        hx = hx | (((f >> (hp * (hr - 1u - k))) & hm) << (k * hp));
    }
    unsigned int x0 = hx & hm;
    unsigned int hq = (1u << hp) >> 1u;
    while (hq > 1u) {
        unsigned int p = hq - 1u;
        if ((x0 & hq) != 0u) x0 = x0 ^ p;
        for (unsigned int k = 1u; k < hr; k++) {
            unsigned int sh = k * hp;
            unsigned int xi = (hx >> sh) & hm;
            if ((xi & hq) != 0u) {
                x0 = x0 ^ p;
            } else {
                unsigned int t = (x0 ^ xi) & p;
                x0 = x0 ^ t;
                hx = hx ^ (t << sh);
            }
        }
        hq = hq >> 1u;
    }
    unsigned int prev = x0;
    for (unsigned int k = 1u; k < hr; k++) {
        unsigned int sh = k * hp;
        unsigned int xi = ((hx >> sh) & hm) ^ prev;
        hx = (hx & ~(hm << sh)) | (xi << sh);
        prev = xi;
    }
    unsigned int tt = 0u;
    hq = (1u << hp) >> 1u;
    while (hq > 1u) {
        if ((prev & hq) != 0u) tt = tt ^ (hq - 1u);
        hq = hq >> 1u;
    }
    x0 = x0 ^ tt;
    unsigned int so = 0u;
    for (unsigned int b = 0u; b < hp; b++) {
        for (unsigned int d = 0u; d < hr; d++) {
            unsigned int xd = d == 0u ? x0 : (((hx >> (d * hp)) & hm) ^ tt);
            so = so | (((xd >> b) & 1u) << (b * hr + hr - 1u - d));
        }
    }
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
