#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned char)((hg_v)))
#define load_src(hg_i) ((unsigned int)(src[(hg_i)]))

extern "C" __global__ void __launch_bounds__(64) layout_hil_packed(unsigned char* __restrict__ dst, const unsigned char* __restrict__ src, unsigned int n, unsigned int nx, unsigned int ny, unsigned int nz, unsigned int bits, unsigned int epu, unsigned int upb, unsigned int nunits, unsigned int doff, unsigned int nsrc, unsigned int hp, unsigned int hr) {
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
