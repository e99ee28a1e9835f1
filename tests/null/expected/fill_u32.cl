#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint)((hg_v)))

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void fill_u32(__global uint* restrict dst, uint value, uint n) {
    uint i = ((uint)get_global_id(0));
    if (i >= n) return;
    store_dst(i, value);
}
