#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint)((hg_v)))
#define load_bt(hg_i) (bt[(hg_i)])
#define load_sp(hg_i) (sp[(hg_i)])

__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void layout_check_paged(__global uint* restrict err, __global const uint* restrict bt, __global const uint* restrict sp, uint nbt, uint nseq, uint npages, uint iw) {
    uint j = ((uint)get_global_id(0));
    if (j < nbt) {
        if (load_bt(j * iw) >= npages) store_err(0u, 1u);
        if (iw == 2u && load_bt(j * 2u + 1u) != 0u) store_err(0u, 1u);
    }
    if (j <= nseq) {
        uint v = load_sp(j * iw);
        if (iw == 2u && load_sp(j * 2u + 1u) != 0u) store_err(0u, 1u);
        if (j == 0u && v != 0u) store_err(0u, 1u);
        if (j == nseq && v != nbt) store_err(0u, 1u);
        if (j > 0u && v < load_sp((j - 1u) * iw)) store_err(0u, 1u);
    }
}
