#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint)((hg_v)))
#define load_src(hg_i) (src[(hg_i)])

__kernel __attribute__((reqd_work_group_size(8, 8, 1))) void transpose_u32(__global uint* restrict dst, __global const uint* restrict src, uint rows, uint cols) {
    uint c = ((uint)get_global_id(0));
    uint r = ((uint)get_global_id(1));
    if (c >= cols || r >= rows) return;
    store_dst(c * rows + r, load_src(r * cols + c));
}
