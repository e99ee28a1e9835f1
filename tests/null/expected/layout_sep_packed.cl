#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uchar)((hg_v)))
#define load_src(hg_i) ((uint)(src[(hg_i)]))
#define load_tx(hg_i) (tx[(hg_i)])
#define load_ty(hg_i) (ty[(hg_i)])
#define load_tz(hg_i) (tz[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void layout_sep_packed(__global uchar* restrict dst, __global const uchar* restrict src, __global const uint* restrict tx, __global const uint* restrict ty, __global const uint* restrict tz, uint n, uint nx, uint ny, uint nz, uint bits, uint epu, uint upb, uint nunits, uint doff, uint nsrc) {
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
            uint so = load_tz(z) + load_ty(y) + load_tx(x);
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
