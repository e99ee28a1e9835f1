static inline float hg_f16_to_f32(uint h) {
    uint sign = (h & 0x8000u) << 16u;
    uint expo = (h >> 10u) & 0x1fu;
    uint mant = h & 0x3ffu;
    if (expo == 0x1fu) return as_float(sign | 0x7f800000u | (mant << 13u));
    if (expo != 0u) return as_float(sign | ((expo + 112u) << 23u) | (mant << 13u));
    // Subnormal: mant * 2^-24 is exact in float.
    return as_float(sign | as_uint((float)(mant) * 5.9604644775390625e-8f));
}

static inline float hg_bf16_to_f32(uint h) {
    return as_float((h & 0xffffu) << 16u);
}

static inline uint hg_f32_to_bf16(float v) {
    uint b = as_uint(v);
    // NaN becomes the canonical quiet NaN with its sign, as ml_dtypes does.
    if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16u) & 0x8000u) | 0x7fc0u;
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (ushort)((hg_v)))
#define load_data(hg_i) ((uint)(data[(hg_i)]))
#define load_scales(hg_i) ((uint)(scales[(hg_i)]))
#define load_zps(hg_i) ((uint)(zps[(hg_i)]))
#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint)((hg_v)))
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void dequant_affine_bf16_sparse_coo(__global ushort* restrict dst, __global const uchar* restrict data, __global const uchar* restrict scales, __global const uchar* restrict zps, __global uint* restrict err, __global const uint* restrict ix, __global const uint* restrict mt, uint n, uint doff, uint bits, uint sgn, uint mode, uint stype, uint zmode, uint zoff, uint nparam, uint inner, uint ssize, uint omul, uint kshift, int zlo, int zhi, float sval, int zval, uint nnz, uint nix, uint rank) {
    uint g = ((uint)get_global_id(0));
    if (g >= nnz + nparam) return;
    uint first = 0u;
    uint so = 0u;
    if (g < nnz) {
        uint i = g;
        uint fi = 0u;
        uint ok = 1u;
        for (uint d = 0u; d < rank; d++) {
            uint c = 2u * (i * rank + d);
            uint coord = c < nix ? load_ix(c) : 0xffffffffu;
            if (coord >= load_mt(2u * d)) ok = 0u;
            fi = fi + coord * load_mt(2u * d + 1u);
        }
        if (ok == 0u || fi >= n) return;
        first = fi;
        so = g;
    } else {
        uint pb = g - nnz;
        uint ob = 0u;
        uint rb = 0u;
        uint ab = pb << kshift;
        if (omul != 0u) {
            uint rest = pb / omul;
            ab = (pb - rest * omul) << kshift;
            ob = rest / inner;
            rb = rest - ob * inner;
        }
        if (ob >= n || ab >= ssize) return;
        first = (ob * ssize + ab) * inner + rb;
        if (first >= n) return;
    }
    uint last = first + 1u;
    uint q1 = first / inner;
    uint r = first - q1 * inner;
    uint o = q1 / ssize;
    uint a = q1 - o * ssize;
    uint i = first;
    uint sx = (sgn != 0u && bits < 32u) ? 32u - bits : 0u;
    float s = sval;
    int z = zval;
    uint built = 0u;
    while (i < last) {
        uint end = last;
        if (mode != 0u) {
            uint p = (o * inner + r) * omul + (a >> kshift);
            if (p >= nparam) {
                store_err(0u, 2u);
                return;
            }
            uint run = 1u;
            if (inner == 1u) run = min((1u << kshift) - (a & ((1u << kshift) - 1u)), ssize - a);
            end = min(i + run, last);
            if (stype == 3u) {
                uint at = p * 4u;
                uint w = load_scales(at) | (load_scales(at + 1u) << 8u)
                        | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                if ((w & 0x7f800000u) == 0x7f800000u || (w & 0x7fffffffu) == 0u) {
                    store_err(0u, 1u);
                }
                s = as_float(w);
            } else {
                uint at = p * 2u;
                uint h = load_scales(at) | (load_scales(at + 1u) << 8u);
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
                uint at = zoff + p * 4u;
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
            uint code = 0u;
            if (bits == 8u) {
                code = load_data(doff + so);
            } else if (bits < 8u) {
                uint bit = so * bits;
                uint at = doff + (bit >> 3u);
                uint sh = bit & 7u;
                code = load_data(at) >> sh;
                if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                code = code & ((1u << bits) - 1u);
            } else if (bits == 16u) {
                uint at = doff + so * 2u;
                code = load_data(at) | (load_data(at + 1u) << 8u);
            } else {
                uint at = doff + so * 4u;
                code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                       | (load_data(at + 3u) << 24u);
            }
            {
                uint k = i;
                // Branch-free sign extension: random signs would mispredict a branch.
                int q = (int)(code << sx) >> sx;
                if (g < nnz) store_dst(k, hg_f32_to_bf16(s * (float)((int)((uint)(q) - (uint)(z)))));
            }
        }
    }
}
