#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uchar)((hg_v)))
#define load_vals(hg_i) ((uint)(vals[(hg_i)]))
#define load_ix(hg_i) (ix[(hg_i)])
#define load_mt(hg_i) (mt[(hg_i)])

__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void sparse_tree_u8(__global uchar* restrict dst, __global const uchar* restrict vals, __global const uint* restrict ix, __global const uint* restrict mt, uint nnz, uint n, uint wpe, uint nix, uint nlev) {
    uint i = ((uint)get_global_id(0));
    if (i >= nnz) return;
    uint fi = 0u;
    uint p = i;
    uint ok = 1u;
    uint l = nlev;
    while (l > 0u) {
        l = l - 1u;
        uint at = l * 6u;
        uint coord = p;
        if (load_mt(at + 5u) == 0u) {
            uint c = load_mt(at) + 2u * p;
            coord = c < nix ? load_ix(c) : 0xffffffffu;
        }
        if (coord >= load_mt(at + 4u)) ok = 0u;
        fi = fi + coord * load_mt(at + 3u);
        if (l > 0u) {
            uint po = load_mt(at + 1u);
            uint lo = 0u;
            uint hi = max(load_mt(at + 2u), 1u) - 1u;
            while (hi - lo > 1u) {
                uint md = lo + (hi - lo) / 2u;
                uint c = po + 2u * md;
                uint v = c < nix ? load_ix(c) : 0xffffffffu;
                if (v <= p) lo = md; else hi = md;
            }
            p = lo;
        }
    }
    if (ok == 0u || fi >= n) return;
    for (uint w = 0u; w < wpe; w++) store_dst(fi * wpe + w, load_vals(i * wpe + w));
}
