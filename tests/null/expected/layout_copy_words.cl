#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint)((hg_v)))
#define load_src(hg_i) (src[(hg_i)])

__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void layout_copy_words(__global uint* restrict dst, __global const uint* restrict src, uint n, uint dat) {
    uint j = ((uint)get_global_id(0));
    if (j >= n) return;
    store_dst(dat + j, load_src(j));
}
