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

__device__ static inline float hg_bf16_to_f32(unsigned int h) {
    return __uint_as_float((h & 0xffffu) << 16u);
}

__device__ static inline unsigned int hg_f32_to_bf16(float v) {
    unsigned int b = __float_as_uint(v);
    // NaN becomes the canonical quiet NaN with its sign, as ml_dtypes does.
    if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16u) & 0x8000u) | 0x7fc0u;
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned short)((hg_v)))
#define load_data(hg_i) ((unsigned int)(data[(hg_i)]))
#define load_scales(hg_i) ((unsigned int)(scales[(hg_i)]))
#define load_zps(hg_i) ((unsigned int)(zps[(hg_i)]))
#define store_err(hg_i, hg_v) (err[(hg_i)] = (unsigned int)((hg_v)))
#define load_tf(hg_i) (tf[(hg_i)])
#define store_tf(hg_i, hg_v) (tf[(hg_i)] = (hg_v))

extern "C" __global__ void __launch_bounds__(64) dequant_affine_bf16(unsigned short* __restrict__ dst, const unsigned char* __restrict__ data, const unsigned char* __restrict__ scales, const unsigned char* __restrict__ zps, unsigned int* __restrict__ err, unsigned int n, unsigned int ept, unsigned int doff, unsigned int bits, unsigned int sgn, unsigned int mode, unsigned int stype, unsigned int zmode, unsigned int zoff, unsigned int nparam, unsigned int inner, unsigned int dm1, unsigned int dsh1, unsigned int ssize, unsigned int dm2, unsigned int dsh2, unsigned int omul, unsigned int kshift, int zlo, int zhi, float sval, int zval) {
    float tf[16];
    unsigned int first = (blockIdx.x * blockDim.x + threadIdx.x) * ept;
    if (first >= n) return;
    unsigned int last = min(first + ept, n);
    unsigned int t1 = __umulhi(first, dm1);
    unsigned int q1 = (t1 + ((first - t1) >> (dsh1 & 255u))) >> (dsh1 >> 8u);
    unsigned int r = first - q1 * inner;
    unsigned int t2 = __umulhi(q1, dm2);
    unsigned int o = (t2 + ((q1 - t2) >> (dsh2 & 255u))) >> (dsh2 >> 8u);
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
        if (end - i >= 32u && (bits == 4u || (bits == 8u && zmode == 0u))) {
            if ((zmode != 0u || built == 0u) && bits != 8u) {
                for (unsigned int c = 0u; c < (1u << bits); c++) {
                    {
                        unsigned int code = c;
                        unsigned int k = c;
                        // Branch-free sign extension: random signs would mispredict a branch.
                        int q = (int)(code << sx) >> sx;
                        store_tf(k, (float)((int)((unsigned int)(q) - (unsigned int)(z))));
                    }
                }
                built = 1u;
            }
            unsigned int stop = end;
            end = min(stop, (i + 7u) & 0xfffffff8u);
            for (; i < end; i++) {
                unsigned int code = 0u;
                if (bits == 8u) {
                    code = load_data(doff + i);
                } else if (bits < 8u) {
                    unsigned int bit = i * bits;
                    unsigned int at = doff + (bit >> 3u);
                    unsigned int sh = bit & 7u;
                    code = load_data(at) >> sh;
                    if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                    code = code & ((1u << bits) - 1u);
                } else if (bits == 16u) {
                    unsigned int at = doff + i * 2u;
                    code = load_data(at) | (load_data(at + 1u) << 8u);
                } else {
                    unsigned int at = doff + i * 4u;
                    code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                           | (load_data(at + 3u) << 24u);
                }
                {
                    unsigned int k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
            }
            end = stop;
            unsigned int ngrp = (end - i) >> 3u;
            unsigned int gat = doff + (i >> 3u) * bits;
            if (bits == 4u) {
                for (unsigned int hg_j = 0u; hg_j < ngrp; hg_j++) { unsigned int hg_at = gat + 4u * hg_j; unsigned int hg_k = i + 8u * hg_j; float t0 = load_tf(load_data(hg_at) & 15u); store_dst(hg_k, hg_f32_to_bf16((__float_as_uint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_tf((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, hg_f32_to_bf16((__float_as_uint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_tf(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, hg_f32_to_bf16((__float_as_uint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_tf((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, hg_f32_to_bf16((__float_as_uint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_tf(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, hg_f32_to_bf16((__float_as_uint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_tf((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, hg_f32_to_bf16((__float_as_uint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_tf(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, hg_f32_to_bf16((__float_as_uint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_tf((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, hg_f32_to_bf16((__float_as_uint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
            } else if (bits == 6u) {
            } else if (bits == 8u) {
                for (unsigned int hg_j = 0u; hg_j < ngrp; hg_j++) { unsigned int hg_at = gat + 8u * hg_j; unsigned int hg_k = i + 8u * hg_j; store_dst(hg_k + 0u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 0u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 1u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 1u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 2u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 2u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 3u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 3u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 4u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 4u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 5u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 5u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 6u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 6u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 7u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 7u) << sx) >> sx) - (unsigned int)(z))))); }
            }
            i = i + 8u * ngrp;
            for (; i < end; i++) {
                unsigned int code = 0u;
                if (bits == 8u) {
                    code = load_data(doff + i);
                } else if (bits < 8u) {
                    unsigned int bit = i * bits;
                    unsigned int at = doff + (bit >> 3u);
                    unsigned int sh = bit & 7u;
                    code = load_data(at) >> sh;
                    if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                    code = code & ((1u << bits) - 1u);
                } else if (bits == 16u) {
                    unsigned int at = doff + i * 2u;
                    code = load_data(at) | (load_data(at + 1u) << 8u);
                } else {
                    unsigned int at = doff + i * 4u;
                    code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                           | (load_data(at + 3u) << 24u);
                }
                {
                    unsigned int k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
            }
            if (inner == 1u && mode != 0u && (i & 7u) == 0u && (1u << kshift) >= 32u
                && (a & ((1u << kshift) - 1u)) == 0u && a < ssize) {
                unsigned int p = o * omul + (a >> kshift);
                unsigned int nblk = min(ssize - a, last - i) >> kshift;
                nblk = min(nblk, nparam - min(p, nparam));
                unsigned int gb = 1u << (kshift - 3u);
                unsigned int pend = p + nblk;
                if (bits == 4u) {
                    if (stype == 1u && zmode == 0u) {
                        unsigned int nq = pend - p;
                        unsigned int bat = doff + (i >> 3u) * bits;
                        if ((zmode != 0u || built == 0u) && bits != 8u) {
                            for (unsigned int c = 0u; c < (1u << bits); c++) {
                                {
                                    unsigned int code = c;
                                    unsigned int k = c;
                                    // Branch-free sign extension: random signs would mispredict a branch.
                                    int q = (int)(code << sx) >> sx;
                                    store_tf(k, (float)((int)((unsigned int)(q) - (unsigned int)(z))));
                                }
                            }
                            built = 1u;
                        }
                        for (unsigned int hg_q = 0u; hg_q < nq; hg_q++) { unsigned int hg_w4 = (p + hg_q) * 2u; unsigned int hg_e = load_scales(hg_w4) | (load_scales(hg_w4 + 1u) << 8u); if ((hg_e & 0x7c00u) == 0x7c00u || (hg_e & 0x7fffu) == 0u) store_err(0u, 1u); float hg_s = hg_f16_to_f32(hg_e); unsigned int hg_qa = bat + 4u * gb * hg_q; unsigned int hg_qk = (i) + 8u * gb * hg_q; for (unsigned int hg_j = 0u; hg_j < gb; hg_j++) { unsigned int hg_at = hg_qa + 4u * hg_j; unsigned int hg_k = hg_qk + 8u * hg_j; float t0 = load_tf(load_data(hg_at) & 15u); store_dst(hg_k, hg_f32_to_bf16((__float_as_uint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_tf((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, hg_f32_to_bf16((__float_as_uint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_tf(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, hg_f32_to_bf16((__float_as_uint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_tf((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, hg_f32_to_bf16((__float_as_uint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_tf(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, hg_f32_to_bf16((__float_as_uint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_tf((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, hg_f32_to_bf16((__float_as_uint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_tf(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, hg_f32_to_bf16((__float_as_uint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_tf((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, hg_f32_to_bf16((__float_as_uint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
                        i = i + 8u * gb * nq;
                        p = pend;
                    }
                    for (; p < pend; p++) {
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
                        if ((zmode != 0u || built == 0u) && bits != 8u) {
                            for (unsigned int c = 0u; c < (1u << bits); c++) {
                                {
                                    unsigned int code = c;
                                    unsigned int k = c;
                                    // Branch-free sign extension: random signs would mispredict a branch.
                                    int q = (int)(code << sx) >> sx;
                                    store_tf(k, (float)((int)((unsigned int)(q) - (unsigned int)(z))));
                                }
                            }
                            built = 1u;
                        }
                        unsigned int bat = doff + (i >> 3u) * bits;
                        for (unsigned int hg_j = 0u; hg_j < gb; hg_j++) { unsigned int hg_at = bat + 4u * hg_j; unsigned int hg_k = i + 8u * hg_j; float t0 = load_tf(load_data(hg_at) & 15u); store_dst(hg_k, hg_f32_to_bf16((__float_as_uint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_tf((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, hg_f32_to_bf16((__float_as_uint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_tf(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, hg_f32_to_bf16((__float_as_uint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_tf((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, hg_f32_to_bf16((__float_as_uint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_tf(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, hg_f32_to_bf16((__float_as_uint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_tf((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, hg_f32_to_bf16((__float_as_uint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_tf(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, hg_f32_to_bf16((__float_as_uint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_tf((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, hg_f32_to_bf16((__float_as_uint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
                        i = i + 8u * gb;
                    }
                } else {
                    if (bits == 8u) {
                        if (stype == 1u && zmode == 0u) {
                            unsigned int nq = pend - p;
                            unsigned int bat = doff + (i >> 3u) * bits;
                            for (unsigned int hg_q = 0u; hg_q < nq; hg_q++) { unsigned int hg_w4 = (p + hg_q) * 2u; unsigned int hg_e = load_scales(hg_w4) | (load_scales(hg_w4 + 1u) << 8u); if ((hg_e & 0x7c00u) == 0x7c00u || (hg_e & 0x7fffu) == 0u) store_err(0u, 1u); float hg_s = hg_f16_to_f32(hg_e); unsigned int hg_qa = bat + 8u * gb * hg_q; unsigned int hg_qk = (i) + 8u * gb * hg_q; for (unsigned int hg_j = 0u; hg_j < gb; hg_j++) { unsigned int hg_at = hg_qa + 8u * hg_j; unsigned int hg_k = hg_qk + 8u * hg_j; store_dst(hg_k + 0u, hg_f32_to_bf16(hg_s * (float)((int)((unsigned int)((int)(load_data(hg_at + 0u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 1u, hg_f32_to_bf16(hg_s * (float)((int)((unsigned int)((int)(load_data(hg_at + 1u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 2u, hg_f32_to_bf16(hg_s * (float)((int)((unsigned int)((int)(load_data(hg_at + 2u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 3u, hg_f32_to_bf16(hg_s * (float)((int)((unsigned int)((int)(load_data(hg_at + 3u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 4u, hg_f32_to_bf16(hg_s * (float)((int)((unsigned int)((int)(load_data(hg_at + 4u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 5u, hg_f32_to_bf16(hg_s * (float)((int)((unsigned int)((int)(load_data(hg_at + 5u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 6u, hg_f32_to_bf16(hg_s * (float)((int)((unsigned int)((int)(load_data(hg_at + 6u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 7u, hg_f32_to_bf16(hg_s * (float)((int)((unsigned int)((int)(load_data(hg_at + 7u) << sx) >> sx) - (unsigned int)(z))))); } }
                            i = i + 8u * gb * nq;
                            p = pend;
                        }
                        for (; p < pend; p++) {
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
                            if ((zmode != 0u || built == 0u) && bits != 8u) {
                                for (unsigned int c = 0u; c < (1u << bits); c++) {
                                    {
                                        unsigned int code = c;
                                        unsigned int k = c;
                                        // Branch-free sign extension: random signs would mispredict a branch.
                                        int q = (int)(code << sx) >> sx;
                                        store_tf(k, (float)((int)((unsigned int)(q) - (unsigned int)(z))));
                                    }
                                }
                                built = 1u;
                            }
                            unsigned int bat = doff + (i >> 3u) * bits;
                            for (unsigned int hg_j = 0u; hg_j < gb; hg_j++) { unsigned int hg_at = bat + 8u * hg_j; unsigned int hg_k = i + 8u * hg_j; store_dst(hg_k + 0u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 0u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 1u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 1u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 2u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 2u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 3u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 3u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 4u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 4u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 5u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 5u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 6u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 6u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 7u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 7u) << sx) >> sx) - (unsigned int)(z))))); }
                            i = i + 8u * gb;
                        }
                    } else {
                    }
                }
                a = a + (nblk << kshift);
                if (a == ssize) {
                    a = 0u;
                    o = o + 1u;
                }
            }
        }
        else if (bits == 4u) {
            if ((i & 1u) != 0u && i < end) {
                {
                    unsigned int code = load_data(doff + (i >> 1u)) >> 4u;
                    unsigned int k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
                i = i + 1u;
            }
            for (; i + 1u < end; i += 2u) {
                unsigned int pair = load_data(doff + (i >> 1u));
                {
                    unsigned int code = pair & 15u;
                    unsigned int k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
                {
                    unsigned int code = pair >> 4u;
                    unsigned int k = i + 1u;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
            }
            if (i < end) {
                {
                    unsigned int code = load_data(doff + (i >> 1u)) & 15u;
                    unsigned int k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
                i = i + 1u;
            }
        }
        else if (bits == 8u && doff == 0u) {
            unsigned int ng8 = (end - i) >> 3u;
            for (unsigned int hg_j = 0u; hg_j < ng8; hg_j++) { unsigned int hg_at = i + 8u * hg_j; unsigned int hg_k = i + 8u * hg_j; store_dst(hg_k + 0u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 0u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 1u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 1u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 2u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 2u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 3u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 3u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 4u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 4u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 5u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 5u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 6u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 6u) << sx) >> sx) - (unsigned int)(z))))); store_dst(hg_k + 7u, hg_f32_to_bf16(s * (float)((int)((unsigned int)((int)(load_data(hg_at + 7u) << sx) >> sx) - (unsigned int)(z))))); }
            i = i + 8u * ng8;
            for (; i < end; i++) {
                {
                    unsigned int code = load_data(i);
                    unsigned int k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
            }
        }
        else if (bits == 6u) {
            for (; i < end && (i & 3u) != 0u; i++) {
                {
                    unsigned int code = ((load_data(doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? load_data(doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u;
                    unsigned int k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
            }
            unsigned int ngroup = (end - i) >> 2u;
            unsigned int gat = doff + (i >> 2u) * 3u;
            for (unsigned int j = 0u; j < ngroup; j++) {
                unsigned int b = gat + 3u * j;
                unsigned int w = load_data(b) | (load_data(b + 1u) << 8u) | (load_data(b + 2u) << 16u);
                unsigned int gk = i + 4u * j;
                {
                    unsigned int code = w & 63u;
                    unsigned int k = gk;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
                {
                    unsigned int code = (w >> 6u) & 63u;
                    unsigned int k = gk + 1u;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
                {
                    unsigned int code = (w >> 12u) & 63u;
                    unsigned int k = gk + 2u;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
                {
                    unsigned int code = (w >> 18u) & 63u;
                    unsigned int k = gk + 3u;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
            }
            i = i + 4u * ngroup;
            for (; i < end; i++) {
                {
                    unsigned int code = ((load_data(doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? load_data(doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u;
                    unsigned int k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
            }
        }
        else {
            for (; i < end; i++) {
                unsigned int code = 0u;
                if (bits == 8u) {
                    code = load_data(doff + i);
                } else if (bits < 8u) {
                    unsigned int bit = i * bits;
                    unsigned int at = doff + (bit >> 3u);
                    unsigned int sh = bit & 7u;
                    code = load_data(at) >> sh;
                    if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                    code = code & ((1u << bits) - 1u);
                } else if (bits == 16u) {
                    unsigned int at = doff + i * 2u;
                    code = load_data(at) | (load_data(at + 1u) << 8u);
                } else {
                    unsigned int at = doff + i * 4u;
                    code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                           | (load_data(at + 3u) << 24u);
                }
                {
                    unsigned int k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = (int)(code << sx) >> sx;
                    store_dst(k, hg_f32_to_bf16(s * (float)((int)((unsigned int)(q) - (unsigned int)(z)))));
                }
            }
        }
    }
}
