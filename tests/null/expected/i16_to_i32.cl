#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (int)((hg_v)))
#define load_src(hg_i) ((int)(src[(hg_i)]))

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void i16_to_i32(__global int* restrict dst, __global const short* restrict src, uint n) {
    uint i = ((uint)get_global_id(0));
    if (i >= n) return;
    store_dst(i, load_src(i));
}
