static inline uint hg_f32_to_bf16(float v) {
    uint b = as_uint(v);
    // NaN becomes the canonical quiet NaN with its sign, as ml_dtypes does.
    if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16u) & 0x8000u) | 0x7fc0u;
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (ushort)((hg_v)))
#define load_data(hg_i) ((uint)(data[(hg_i)]))
#define load_lut(hg_i) (lut[(hg_i)])
#define load_scales(hg_i) ((uint)(scales[(hg_i)]))
#define load_err(hg_i) (err[(hg_i)])
#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint)((hg_v)))

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void dequant_lut_bf16_hil(__global ushort* restrict dst, __global const uchar* restrict data, __global const float* restrict lut, __global const uchar* restrict scales, __global uint* restrict err, uint n, uint ept, uint doff, uint bits, uint chk, uint mode, uint nparam, uint inner, uint dm1, uint dsh1, uint ssize, uint dm2, uint dsh2, uint omul, uint kshift, uint hp, uint hr) {
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
                    float v = s * load_lut(code);
                    store_dst(k, hg_f32_to_bf16(v));
                }
            }
        } else {
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
                    if (chk != 0u && (code == 0u || code == 255u)) store_err(0u, 1u);
                    float v = load_lut(code);
                    if (mode != 0u && (as_uint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                    store_dst(k, hg_f32_to_bf16(v));
                }
            }
        }
    }
}
