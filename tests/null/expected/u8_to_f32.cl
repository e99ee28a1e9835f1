#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (float)((hg_v)))
#define load_src(hg_i) ((uint)(src[(hg_i)]))

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void u8_to_f32(__global float* restrict dst, __global const uchar* restrict src, uint n) {
    uint i = ((uint)get_global_id(0));
    if (i >= n) return;
    store_dst(i, load_src(i));
}
