#define store_dst(hg_i, hg_v) vstore_half_rte((hg_v), (hg_i), dst)
#define load_src(hg_i) (src[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void f32_to_f16(__global half* restrict dst, __global const float* restrict src, uint n) {
    uint i = ((uint)get_global_id(0));
    if (i >= n) return;
    store_dst(i, load_src(i));
}
