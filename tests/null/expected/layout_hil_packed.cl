#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uchar)((hg_v)))
#define load_src(hg_i) ((uint)(src[(hg_i)]))

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void layout_hil_packed(__global uchar* restrict dst, __global const uchar* restrict src, uint n, uint nx, uint ny, uint nz, uint bits, uint epu, uint upb, uint nunits, uint doff, uint nsrc, uint hp, uint hr) {
    uint u = ((uint)get_global_id(0));
    if (u >= nunits) return;
    uint acc = 0u;
    for (uint e = 0u; e < epu; e++) {
        uint f = u * epu + e;
        if (f < n) {
            uint x = f % nx;
            uint yz = f / nx;
            uint y = yz % ny;
            uint z = yz / ny;
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
            uint bit = so * bits;
            uint at = doff + (bit >> 3u);
            uint sh = bit & 7u;
            uint code = 0u;
            if (at < nsrc) code = load_src(at) >> sh;
            if (sh + bits > 8u && at + 1u < nsrc) code = code | (load_src(at + 1u) << (8u - sh));
            acc = acc | ((code & ((1u << bits) - 1u)) << (e * bits));
        }
    }
    for (uint b = 0u; b < upb; b++) {
        store_dst(u * upb + b, (acc >> (8u * b)) & 255u);
    }
}
