#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint)((hg_v)))
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void layout_check_coo(__global uint* restrict err, __global const uint* restrict ix, __global const uint* restrict mt, uint nnz, uint rank, uint srt) {
    uint i = ((uint)get_global_id(0));
    if (i >= nnz) return;
    uint state = 0u;
    for (uint d = 0u; d < rank; d++) {
        uint c = 2u * (i * rank + d);
        uint v = load_ix(c);
        if (v >= load_mt(2u * d)) store_err(0u, 1u);
        if (srt != 0u && i > 0u && state == 0u) {
            uint w = load_ix(c - 2u * rank);
            if (v > w) state = 1u;
            if (v < w) state = 2u;
        }
    }
    if (srt != 0u && i > 0u && state != 1u) store_err(0u, 1u);
}
