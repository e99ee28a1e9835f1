#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

__device__ static inline float hg_f16_to_f32(unsigned int h) {
    unsigned int sign = (h & 0x8000u) << 16u;
    unsigned int expo = (h >> 10u) & 0x1fu;
    unsigned int mant = h & 0x3ffu;
    if (expo == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (mant << 13u));
    if (expo != 0u) return __uint_as_float(sign | ((expo + 112u) << 23u) | (mant << 13u));
    // Subnormal: mant * 2^-24 is exact in float.
    return __uint_as_float(sign | __float_as_uint((float)(mant) * 5.9604644775390625e-8f));
}

__device__ static inline unsigned int hg_f32_to_f16(float v) {
    unsigned int b = __float_as_uint(v);
    unsigned int sign = (b >> 16u) & 0x8000u;
    unsigned int a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        // NaN keeps its top payload bits and stays a NaN, as NumPy does.
        unsigned int m = (a >> 13u) & 0x3ffu;
        return sign | 0x7c00u | (m == 0u ? 1u : m);
    }
    if (a >= 0x477ff000u) return sign | 0x7c00u;
    if (a >= 0x38800000u) return sign | ((a + 0xfffu + ((a >> 13u) & 1u) - 0x38000000u) >> 13u);
    unsigned int e = a >> 23u;
    if (e < 102u) return sign;
    unsigned int m = (a & 0x7fffffu) | 0x800000u;
    unsigned int s = 126u - e;
    return sign | ((m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s);
}

__device__ static inline float hg_bf16_to_f32(unsigned int h) {
    return __uint_as_float((h & 0xffffu) << 16u);
}

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned short)((hg_v)))
#define load_data(hg_i) ((unsigned int)(data[(hg_i)]))
#define load_scales(hg_i) ((unsigned int)(scales[(hg_i)]))
#define load_zps(hg_i) ((unsigned int)(zps[(hg_i)]))
#define store_err(hg_i, hg_v) (err[(hg_i)] = (unsigned int)((hg_v)))
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) dequant_affine_f16_sparse_coo(unsigned short* __restrict__ dst, const unsigned char* __restrict__ data, const unsigned char* __restrict__ scales, const unsigned char* __restrict__ zps, unsigned int* __restrict__ err, const unsigned int* __restrict__ ix, const unsigned int* __restrict__ mt, unsigned int n, unsigned int doff, unsigned int bits, unsigned int sgn, unsigned int mode, unsigned int stype, unsigned int zmode, unsigned int zoff, unsigned int nparam, unsigned int inner, unsigned int ssize, unsigned int omul, unsigned int kshift, int zlo, int zhi, float sval, int zval, unsigned int nnz, unsigned int nix, unsigned int rank) {
    unsigned int g = (blockIdx.x * blockDim.x + threadIdx.x);
    if (g >= nnz + nparam) return;
    unsigned int first = 0u;
    unsigned int so = 0u;
    if (g < nnz) {
        unsigned int i = g;
        unsigned int fi = 0u;
        unsigned int ok = 1u;
        for (unsigned int d = 0u; d < rank; d++) {
            unsigned int c = 2u * (i * rank + d);
            unsigned int coord = c < nix ? load_ix(c) : 0xffffffffu;
            if (coord >= load_mt(2u * d)) ok = 0u;
            fi = fi + coord * load_mt(2u * d + 1u);
        }
        if (ok == 0u || fi >= n) return;
        first = fi;
        so = g;
    } else {
        unsigned int pb = g - nnz;
        unsigned int ob = 0u;
        unsigned int rb = 0u;
        unsigned int ab = pb << kshift;
        if (omul != 0u) {
            unsigned int rest = pb / omul;
            ab = (pb - rest * omul) << kshift;
            ob = rest / inner;
            rb = rest - ob * inner;
        }
        if (ob >= n || ab >= ssize) return;
        first = (ob * ssize + ab) * inner + rb;
        if (first >= n) return;
    }
    unsigned int last = first + 1u;
    unsigned int q1 = first / inner;
    unsigned int r = first - q1 * inner;
    unsigned int o = q1 / ssize;
    unsigned int a = q1 - o * ssize;
    unsigned int i = first;
    unsigned int sx = (sgn != 0u && bits < 32u) ? 32u - bits : 0u;
    float s = sval;
    int z = zval;
    unsigned int built = 0u;
    while (i < last) {
        unsigned int end = last;
        if (mode != 0u) {
            unsigned int p = (o * inner + r) * omul + (a >> kshift);
            if (p >= nparam) {
                store_err(0u, 2u);
                return;
            }
            unsigned int run = 1u;
            if (inner == 1u) run = min((1u << kshift) - (a & ((1u << kshift) - 1u)), ssize - a);
            end = min(i + run, last);
            if (stype == 3u) {
                unsigned int at = p * 4u;
                unsigned int w = load_scales(at) | (load_scales(at + 1u) << 8u)
                        | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                if ((w & 0x7f800000u) == 0x7f800000u || (w & 0x7fffffffu) == 0u) {
                    store_err(0u, 1u);
                }
                s = __uint_as_float(w);
            } else {
                unsigned int at = p * 2u;
                unsigned int h = load_scales(at) | (load_scales(at + 1u) << 8u);
                if (stype == 1u) {
                    if ((h & 0x7c00u) == 0x7c00u || (h & 0x7fffu) == 0u) store_err(0u, 1u);
                    s = hg_f16_to_f32(h);
                } else {
                    if ((h & 0x7f80u) == 0x7f80u || (h & 0x7fffu) == 0u) store_err(0u, 1u);
                    s = hg_bf16_to_f32(h);
                }
            }
            if (zmode != 0u) {
                // Zero points may start at 2 mod 4 in a shared [scales | zero_points] buffer.
                unsigned int at = zoff + p * 4u;
                z = (int)(load_zps(at) | (load_zps(at + 1u) << 8u)
                        | (load_zps(at + 2u) << 16u) | (load_zps(at + 3u) << 24u));
                if (z < zlo || z > zhi) store_err(0u, 1u);
            }
            if (inner == 1u) {
                a = a + run;
            } else {
                r = r + 1u;
                if (r == inner) {
                    r = 0u;
                    a = a + 1u;
                }
            }
            if (a == ssize) {
                a = 0u;
                o = o + 1u;
            }
        }
        for (; i < end; i++) {
            unsigned int code = 0u;
            if (bits == 8u) {
                code = load_data(doff + so);
            } else if (bits < 8u) {
                unsigned int bit = so * bits;
                unsigned int at = doff + (bit >> 3u);
                unsigned int sh = bit & 7u;
                code = load_data(at) >> sh;
                if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                code = code & ((1u << bits) - 1u);
            } else if (bits == 16u) {
                unsigned int at = doff + so * 2u;
                code = load_data(at) | (load_data(at + 1u) << 8u);
            } else {
                unsigned int at = doff + so * 4u;
                code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                       | (load_data(at + 3u) << 24u);
            }
            {
                unsigned int k = i;
                // Branch-free sign extension: random signs would mispredict a branch.
                int q = (int)(code << sx) >> sx;
                if (g < nnz) store_dst(k, hg_f32_to_f16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
            }
        }
    }
}
