#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint)((hg_v)))
#define load_ix(hg_i) (ix[(hg_i)])

__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void layout_check_hi(__global uint* restrict err, __global const uint* restrict ix, uint n) {
    uint j = ((uint)get_global_id(0));
    if (j >= n) return;
    if (load_ix(2u * j + 1u) != 0u) store_err(0u, 1u);
}
