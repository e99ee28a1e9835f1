#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uchar)((hg_v)))
#define load_src(hg_i) ((uint)(src[(hg_i)]))

__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void layout_pack_codes(__global uchar* restrict dst, __global const uchar* restrict src, uint n, uint bits, uint epu, uint upb) {
    uint u = ((uint)get_global_id(0));
    if (u * epu >= n) return;
    uint acc = 0u;
    for (uint e = 0u; e < epu; e++) {
        uint f = u * epu + e;
        if (f < n) acc = acc | ((load_src(f) & ((1u << bits) - 1u)) << (e * bits));
    }
    for (uint b = 0u; b < upb; b++) store_dst(u * upb + b, (acc >> (8u * b)) & 255u);
}
