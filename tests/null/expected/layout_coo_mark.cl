#define store_mark(hg_i, hg_v) (mark[(hg_i)] = (uint)((hg_v)))
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void layout_coo_mark(__global uint* restrict mark, __global const uint* restrict ix, __global const uint* restrict mt, uint nnz, uint rank, uint n) {
    uint i = ((uint)get_global_id(0));
    if (i >= nnz) return;
    uint fi = 0u;
    for (uint d = 0u; d < rank; d++) {
        fi = fi + load_ix(2u * (i * rank + d)) * load_mt(2u * d + 1u);
    }
    if (fi >= n) return;
    store_mark(fi, i + 1u);
}
