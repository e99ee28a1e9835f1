#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint)((hg_v)))

__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void layout_zero_words(__global uint* restrict dst, uint n) {
    uint j = ((uint)get_global_id(0));
    if (j >= n) return;
    store_dst(j, 0u);
}
