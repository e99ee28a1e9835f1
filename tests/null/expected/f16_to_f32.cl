#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (float)((hg_v)))
#define load_src(hg_i) (vload_half((hg_i), src))

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void f16_to_f32(__global float* restrict dst, __global const half* restrict src, uint n) {
    uint i = ((uint)get_global_id(0));
    if (i >= n) return;
    store_dst(i, load_src(i));
}
