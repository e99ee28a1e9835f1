#define load_y(hg_i) (y[(hg_i)])
#define store_y(hg_i, hg_v) (y[(hg_i)] = (float)((hg_v)))
#define load_x(hg_i) (x[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void axpy_f32(__global float* restrict y, __global const float* restrict x, float a, uint n) {
    uint i = ((uint)get_global_id(0));
    if (i >= n) return;
    store_y(i, fma(a, load_x(i), load_y(i)));
}
