#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (ushort)((hg_v)))
#define load_src(hg_i) ((uint)(src[(hg_i)]))

__kernel __attribute__((reqd_work_group_size(32, 8, 1))) void layout_hil_u16(__global ushort* restrict dst, __global const ushort* restrict src, uint nx, uint ny, uint nz, uint wpe, uint woff, uint nsrc, uint hp, uint hr) {
    uint x = ((uint)get_global_id(0));
    uint y = ((uint)get_global_id(1));
    uint z = ((uint)get_global_id(2));
    if (x >= nx || y >= ny || z >= nz) return;
    uint f = (z * ny + y) * nx + x;
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
    uint s = woff + so * wpe;
    if (wpe == 1u) {
        // The common case without the word loop: pocl vectorises it across the work-group.
        store_dst(f, s < nsrc ? load_src(s) : 0u);
        return;
    }
    uint o = f * wpe;
    for (uint w = 0u; w < wpe; w++) {
        uint v = 0u;
        if (s + w < nsrc && s + w >= s) v = load_src(s + w);
        store_dst(o + w, v);
    }
}
