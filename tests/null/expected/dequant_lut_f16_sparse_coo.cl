static inline uint hg_f32_to_f16(float v) {
    uint b = as_uint(v);
    uint sign = (b >> 16u) & 0x8000u;
    uint a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        // NaN keeps its top payload bits and stays a NaN, as NumPy does.
        uint m = (a >> 13u) & 0x3ffu;
        return sign | 0x7c00u | (m == 0u ? 1u : m);
    }
    if (a >= 0x477ff000u) return sign | 0x7c00u;
    if (a >= 0x38800000u) return sign | ((a + 0xfffu + ((a >> 13u) & 1u) - 0x38000000u) >> 13u);
    uint e = a >> 23u;
    if (e < 102u) return sign;
    uint m = (a & 0x7fffffu) | 0x800000u;
    uint s = 126u - e;
    return sign | ((m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s);
}

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (ushort)((hg_v)))
#define load_data(hg_i) ((uint)(data[(hg_i)]))
#define load_lut(hg_i) (lut[(hg_i)])
#define load_scales(hg_i) ((uint)(scales[(hg_i)]))
#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint)((hg_v)))
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void dequant_lut_f16_sparse_coo(__global ushort* restrict dst, __global const uchar* restrict data, __global const float* restrict lut, __global const uchar* restrict scales, __global uint* restrict err, __global const uint* restrict ix, __global const uint* restrict mt, uint n, uint doff, uint bits, uint chk, uint mode, uint nparam, uint inner, uint ssize, uint omul, uint kshift, uint nnz, uint nix, uint rank) {
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
    float s = 1.0f;
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
            if (mode == 1u) {
                uint at = p * 4u;
                uint w = load_scales(at) | (load_scales(at + 1u) << 8u)
                        | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                // absmax must be finite and >= 0 (-0.0 included).
                if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                s = as_float(w);
            } else {
                uint e = load_scales(p);
                if (e == 0u || e == 255u) store_err(0u, 1u);
                s = as_float(e << 23u);
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
        if (mode == 1u) {
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
                    float v = s * load_lut(code);
                    if (g < nnz) store_dst(k, hg_f32_to_f16(v));
                }
            }
        } else {
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
                    if (chk != 0u && (code == 0u || code == 255u)) store_err(0u, 1u);
                    float v = load_lut(code);
                    if (mode != 0u && (as_uint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                    if (g < nnz) store_dst(k, hg_f32_to_f16(v));
                }
            }
        }
    }
}
