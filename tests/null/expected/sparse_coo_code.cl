#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uchar)((hg_v)))
#define load_vals(hg_i) ((uint)(vals[(hg_i)]))
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void sparse_coo_code(__global uchar* restrict dst, __global const uchar* restrict vals, __global const uint* restrict ix, __global const uint* restrict mt, uint nnz, uint n, uint bits, uint nix, uint rank) {
    uint i = ((uint)get_global_id(0));
    if (i >= nnz) return;
    uint fi = 0u;
    uint ok = 1u;
    for (uint d = 0u; d < rank; d++) {
        uint c = 2u * (i * rank + d);
        uint coord = c < nix ? load_ix(c) : 0xffffffffu;
        if (coord >= load_mt(2u * d)) ok = 0u;
        fi = fi + coord * load_mt(2u * d + 1u);
    }
    if (ok == 0u || fi >= n) return;
    uint bit = i * bits;
    uint at = bit >> 3u;
    uint sh = bit & 7u;
    uint code = load_vals(at) >> sh;
    if (sh + bits > 8u) code = code | (load_vals(at + 1u) << (8u - sh));
    store_dst(fi, code & ((1u << bits) - 1u));
}
