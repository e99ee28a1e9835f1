static inline float hg_f16_to_f32(uint h) {
    uint sign = (h & 0x8000u) << 16u;
    uint expo = (h >> 10u) & 0x1fu;
    uint mant = h & 0x3ffu;
    if (expo == 0x1fu) return as_float(sign | 0x7f800000u | (mant << 13u));
    if (expo != 0u) return as_float(sign | ((expo + 112u) << 23u) | (mant << 13u));
    // Subnormal: mant * 2^-24 is exact in float.
    return as_float(sign | as_uint((float)(mant) * 5.9604644775390625e-8f));
}

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

static inline float hg_bf16_to_f32(uint h) {
    return as_float((h & 0xffffu) << 16u);
}

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (ushort)((hg_v)))
#define load_data(hg_i) ((uint)(data[(hg_i)]))
#define load_scales(hg_i) ((uint)(scales[(hg_i)]))
#define load_zps(hg_i) ((uint)(zps[(hg_i)]))
#define load_err(hg_i) (err[(hg_i)])
#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint)((hg_v)))

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void dequant_affine_f16_hil(__global ushort* restrict dst, __global const uchar* restrict data, __global const uchar* restrict scales, __global const uchar* restrict zps, __global uint* restrict err, uint n, uint ept, uint doff, uint bits, uint sgn, uint mode, uint stype, uint zmode, uint zoff, uint nparam, uint inner, uint dm1, uint dsh1, uint ssize, uint dm2, uint dsh2, uint omul, uint kshift, int zlo, int zhi, float sval, int zval, uint hp, uint hr) {
    uint first = ((uint)get_global_id(0)) * ept;
    if (first >= n) return;
    uint last = min(first + ept, n);
    uint t1 = mul_hi(first, dm1);
    uint q1 = (t1 + ((first - t1) >> (dsh1 & 255u))) >> (dsh1 >> 8u);
    uint r = first - q1 * inner;
    uint t2 = mul_hi(q1, dm2);
    uint o = (t2 + ((q1 - t2) >> (dsh2 & 255u))) >> (dsh2 >> 8u);
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
            uint f = i;
            uint hm = (1u << hp) - 1u;
            uint hx = 0u;
            for (uint k = 0u; k < hr; k++) {
                hx = hx | (((f >> (hp * (hr - 1u - k))) & hm) << (k * hp));
            }
            uint x0 = hx & hm;
            uint hq = (1u << hp) >> 1u;
            while (hq > 1u) {
                uint p = hq - 1u;
                if ((x0 & hq) != 0u) x0 = x0 ^ p;
                for (uint k = 1u; k < hr; k++) {
                    uint sh = k * hp;
                    uint xi = (hx >> sh) & hm;
                    if ((xi & hq) != 0u) {
                        x0 = x0 ^ p;
                    } else {
                        uint t = (x0 ^ xi) & p;
                        x0 = x0 ^ t;
                        hx = hx ^ (t << sh);
                    }
                }
                hq = hq >> 1u;
            }
            uint prev = x0;
            for (uint k = 1u; k < hr; k++) {
                uint sh = k * hp;
                uint xi = ((hx >> sh) & hm) ^ prev;
                hx = (hx & ~(hm << sh)) | (xi << sh);
                prev = xi;
            }
            uint tt = 0u;
            hq = (1u << hp) >> 1u;
            while (hq > 1u) {
                if ((prev & hq) != 0u) tt = tt ^ (hq - 1u);
                hq = hq >> 1u;
            }
            x0 = x0 ^ tt;
            uint so = 0u;
            for (uint b = 0u; b < hp; b++) {
                for (uint d = 0u; d < hr; d++) {
                    uint xd = d == 0u ? x0 : (((hx >> (d * hp)) & hm) ^ tt);
                    so = so | (((xd >> b) & 1u) << (b * hr + hr - 1u - d));
                }
            }
            if (so >= n) so = 0u;
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
                store_dst(k, hg_f32_to_f16(s * (float)((int)((uint)(q) - (uint)(z)))));
            }
        }
    }
}
