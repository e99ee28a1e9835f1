#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned int)((hg_v)))
#define load_src(hg_i) (src[(hg_i)])
#define load_tx(hg_i) (tx[(hg_i)])
#define load_ty(hg_i) (ty[(hg_i)])
#define load_tz(hg_i) (tz[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) layout_sepblk_u32(unsigned int* __restrict__ dst, const unsigned int* __restrict__ src, const unsigned int* __restrict__ tx, const unsigned int* __restrict__ ty, const unsigned int* __restrict__ tz, unsigned int nx, unsigned int ny, unsigned int nz, unsigned int wpe, unsigned int woff, unsigned int nsrc, unsigned int bx, unsigned int by) {
    unsigned int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * bx;
    unsigned int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * by;
    unsigned int z = (blockIdx.z * blockDim.z + threadIdx.z);
    if (x0 >= nx || y0 >= ny || z >= nz) return;
    unsigned int x1 = x0 + min(nx - x0, bx);
    unsigned int y1 = y0 + min(ny - y0, by);
    unsigned int oz = load_tz(z);
    unsigned int brk = 0u;
    unsigned int mx = load_tx(x0);
    for (unsigned int x = x0 + 1u; x < x1; x++) {
        if (load_tx(x) != load_tx(x - 1u) + 1u) brk = brk | (x - x0);
        mx = max(mx, load_tx(x));
    }
    unsigned int my = 0u;
    for (unsigned int y = y0; y < y1; y++) my = max(my, load_ty(y));
    unsigned int hi = woff + oz;
    unsigned int inb = hi >= woff && hi + my >= hi && hi + my + mx >= hi + my && hi + my + mx < nsrc
        ? 1u : 0u;
    unsigned int xd = (brk & 7u) | (wpe - 1u);
    unsigned int yd = xd == 0u ? 1u : wpe - 1u;
    unsigned int zd = yd;
    for (unsigned int y = y0; y + 8u <= y1 && (yd == 0u || zd == 0u); y += 8u) {
        for (unsigned int k = 1u; k < 8u; k++) {
            unsigned int zk = (k & 1u) | ((k & 2u) << 1u) | ((k & 4u) << 2u);
            yd = yd | (load_ty(y + k) ^ (load_ty(y) + k));
            zd = zd | (load_ty(y + k) ^ (load_ty(y) + zk));
        }
    }
    for (unsigned int x = x0; x + 8u <= x1 && zd == 0u; x += 8u) {
        for (unsigned int k = 1u; k < 8u; k++) {
            unsigned int zk = ((k & 1u) << 1u) | ((k & 2u) << 2u) | ((k & 4u) << 3u);
            zd = zd | (load_tx(x + k) ^ (load_tx(x) + zk));
        }
    }
    unsigned int yt = y0;
    unsigned int sc = load_tx(x0 + min(x1 - x0 - 1u, 1u)) - load_tx(x0);
    unsigned int t16 = yd == 0u && inb == 1u && ((x1 - x0) & 15u) == 0u && ((y1 - y0) & 15u) == 0u ? 1u : 0u;
    for (unsigned int x = x0; x < x1 && t16 == 1u; x++) {
        if (load_tx(x) != load_tx(x0) + (x - x0) * sc) t16 = 0u;
    }
    for (unsigned int y = y0; y < y1 && t16 == 1u; y += 16u) {
        if (load_ty(y + 8u) != load_ty(y) + 8u) t16 = 0u;
    }
    unsigned int z16 = zd == 0u && inb == 1u && ((x1 - x0) & 15u) == 0u && ((y1 - y0) & 15u) == 0u
        ? 1u : 0u;
    for (unsigned int y = y0; y < y1 && z16 == 1u; y += 16u) {
        if (load_ty(y + 8u) != load_ty(y) + 64u) z16 = 0u;
    }
    for (unsigned int x = x0; x < x1 && z16 == 1u; x += 16u) {
        if (load_tx(x + 8u) != load_tx(x) + 128u) z16 = 0u;
    }
    unsigned int nall = nx * ny * nz;
    for (; (t16 == 1u || z16 == 1u) && yt < y1; yt += 16u) {
        unsigned int sb = hi + load_ty(yt);
        unsigned int f = (z * ny + yt) * nx;
        for (unsigned int x = x0; x < x1; x += 16u) {
            unsigned int s0 = sb + load_tx(x);
            if (t16 == 1u) {
                for (unsigned int t8j = 0u; t8j < 16u; t8j++) { for (unsigned int t8k = 0u; t8k < 16u; t8k++) { store_dst((f + x) + t8j * nx + t8k, load_src((s0) + t8k * sc + t8j)); } }
            } else {
                for (unsigned int t8j = 0u; t8j < 16u; t8j++) { for (unsigned int t8k = 0u; t8k < 16u; t8k++) { store_dst((f + x) + t8j * nx + t8k, load_src((s0) + ((t8j & 1u) | ((t8k & 1u) << 1u) | ((t8j & 2u) << 1u) | ((t8k & 2u) << 2u) | ((t8j & 4u) << 2u) | ((t8k & 4u) << 3u) | ((t8j & 8u) << 3u) | ((t8k & 8u) << 4u)))); } }
            }
        }
    }
    for (; (yd == 0u || zd == 0u) && yt + 8u <= y1; yt += 8u) {
        unsigned int sb = hi + load_ty(yt);
        unsigned int f = (z * ny + yt) * nx;
        for (unsigned int x = x0; x < x1; x += 8u) {
            unsigned int xe = min(x1 - x, 8u);
            unsigned int s0 = sb + load_tx(x);
            unsigned int sd = xe == 8u ? load_tx(x + 1u) - load_tx(x) : 0u;
            unsigned int ok = xe == 8u && (yd == 0u || (s0 + 63u < nsrc && s0 + 63u >= s0)) ? 1u : 0u;
            for (unsigned int k = 0u; k < 8u && ok == 1u && yd == 0u; k++) {
                unsigned int s = sb + load_tx(x + k);
                if (s != s0 + k * sd || s + 7u >= nsrc || s + 7u < s) ok = 0u;
            }
            if (ok == 1u && yd == 0u) {
                for (unsigned int t8j = 0u; t8j < 8u; t8j++) { for (unsigned int t8k = 0u; t8k < 8u; t8k++) { store_dst((f + x) + t8j * nx + t8k, load_src((s0) + t8k * sd + t8j)); } }
            } else if (ok == 1u) {
                for (unsigned int t8j = 0u; t8j < 8u; t8j++) { for (unsigned int t8k = 0u; t8k < 8u; t8k++) { store_dst((f + x) + t8j * nx + t8k, load_src((s0) + ((t8j & 1u) | ((t8k & 1u) << 1u) | ((t8j & 2u) << 1u) | ((t8k & 2u) << 2u) | ((t8j & 4u) << 2u) | ((t8k & 4u) << 3u)))); } }
            } else {
                for (unsigned int j = 0u; j < 8u; j++) {
                    for (unsigned int k = 0u; k < xe; k++) {
                        unsigned int s = hi + load_ty(yt + j) + load_tx(x + k);
                        store_dst(f + j * nx + x + k, s < nsrc ? load_src(s) : 0u);
                    }
                }
            }
        }
    }
    for (unsigned int y = yt; y < y1; y++) {
        unsigned int oy = oz + load_ty(y);
        unsigned int f = (z * ny + y) * nx;
        unsigned int b = woff + oy;
        unsigned int x = x0;
        for (; xd == 0u && (brk & 31u) == 0u && x + 32u <= x1; x += 32u) {
            unsigned int s = b + load_tx(x);
            if (s + 31u >= nsrc || s + 31u < s) break;
            for (unsigned int c8k = 0u; c8k < 8u; c8k++) { store_dst((f + x) + c8k, load_src((s) + c8k)); }
            for (unsigned int c8k = 0u; c8k < 8u; c8k++) { store_dst((f + x + 8u) + c8k, load_src((s + 8u) + c8k)); }
            for (unsigned int c8k = 0u; c8k < 8u; c8k++) { store_dst((f + x + 16u) + c8k, load_src((s + 16u) + c8k)); }
            for (unsigned int c8k = 0u; c8k < 8u; c8k++) { store_dst((f + x + 24u) + c8k, load_src((s + 24u) + c8k)); }
        }
        for (; xd == 0u && x + 8u <= x1; x += 8u) {
            unsigned int s = b + load_tx(x);
            if (s + 7u >= nsrc || s + 7u < s) break;
            for (unsigned int c8k = 0u; c8k < 8u; c8k++) { store_dst((f + x) + c8k, load_src((s) + c8k)); }
        }
        for (; x < x1 && wpe == 1u && inb == 1u; x++) store_dst(f + x, load_src(b + load_tx(x)));
        for (; x < x1 && wpe == 1u; x++) {
            unsigned int s = b + load_tx(x);
            store_dst(f + x, s < nsrc ? load_src(s) : 0u);
        }
        for (; x < x1; x++) {
            unsigned int s = woff + (oy + load_tx(x)) * wpe;
            for (unsigned int w = 0u; w < wpe; w++) {
                unsigned int v = 0u;
                if (s + w < nsrc && s + w >= s) v = load_src(s + w);
                store_dst((f + x) * wpe + w, v);
            }
        }
    }
}
