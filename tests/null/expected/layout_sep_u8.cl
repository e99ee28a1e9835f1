#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uchar)((hg_v)))
#define load_src(hg_i) ((uint)(src[(hg_i)]))
#define load_tx(hg_i) (tx[(hg_i)])
#define load_ty(hg_i) (ty[(hg_i)])
#define load_tz(hg_i) (tz[(hg_i)])

__kernel __attribute__((reqd_work_group_size(32, 8, 1))) void layout_sep_u8(__global uchar* restrict dst, __global const uchar* restrict src, __global const uint* restrict tx, __global const uint* restrict ty, __global const uint* restrict tz, uint nx, uint ny, uint nz, uint wpe, uint woff, uint nsrc) {
    uint x = ((uint)get_global_id(0));
    uint y = ((uint)get_global_id(1));
    uint z = ((uint)get_global_id(2));
    if (x >= nx || y >= ny || z >= nz) return;
    uint f = (z * ny + y) * nx + x;
    uint so = load_tz(z) + load_ty(y) + load_tx(x);
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
