#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (ushort)((hg_v)))
#define load_src(hg_i) ((uint)(src[(hg_i)]))
#define load_tx(hg_i) (tx[(hg_i)])
#define load_ty(hg_i) (ty[(hg_i)])
#define load_tz(hg_i) (tz[(hg_i)])

__kernel __attribute__((reqd_work_group_size(8, 8, 1))) void layout_sepblk_u16(__global ushort* restrict dst, __global const ushort* restrict src, __global const uint* restrict tx, __global const uint* restrict ty, __global const uint* restrict tz, uint nx, uint ny, uint nz, uint wpe, uint woff, uint nsrc, uint bx, uint by) {
    uint x0 = ((uint)get_global_id(0)) * bx;
    uint y0 = ((uint)get_global_id(1)) * by;
    uint z = ((uint)get_global_id(2));
    if (x0 >= nx || y0 >= ny || z >= nz) return;
    uint x1 = x0 + min(nx - x0, bx);
    uint y1 = y0 + min(ny - y0, by);
    uint oz = load_tz(z);
    for (uint y = y0; y < y1; y++) {
        uint oy = oz + load_ty(y);
        uint f = (z * ny + y) * nx;
        if (wpe == 1u) {
            uint b = woff + oy;
            for (uint x = x0; x < x1; x++) {
                uint s = b + load_tx(x);
                store_dst(f + x, s < nsrc ? load_src(s) : 0u);
            }
        } else {
            for (uint x = x0; x < x1; x++) {
                uint s = woff + (oy + load_tx(x)) * wpe;
                uint o = (f + x) * wpe;
                for (uint w = 0u; w < wpe; w++) {
                    uint v = 0u;
                    if (s + w < nsrc && s + w >= s) v = load_src(s + w);
                    store_dst(o + w, v);
                }
            }
        }
    }
}
