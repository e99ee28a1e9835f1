#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint)((hg_v)))
#define load_ix(hg_i) (ix[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void layout_check_tree(__global uint* restrict err, __global const uint* restrict ix, uint nodes, uint pos_off, uint crd_off, uint ncrd, uint extent, uint nix, uint span) {
    uint q = ((uint)get_global_id(0));
    if (q >= nodes) return;
    uint pa = pos_off + 2u * q;
    if (pa + 2u >= nix) { store_err(0u, 1u); return; }
    uint a = load_ix(pa);
    uint b = load_ix(pa + 2u);
    if (q == 0u && a != 0u) store_err(0u, 1u);
    if (q + 1u == nodes && b != ncrd) store_err(0u, 1u);
    if (a > b || b > ncrd) { store_err(0u, 1u); return; }
    uint sp = max(span, 1u);
    if (((uint)get_global_id(1)) > (b - a) / sp) return;
    uint k0 = a + ((uint)get_global_id(1)) * sp;
    uint k1 = k0 + min(b - k0, sp);
    uint prev = 0u;
    if (k0 > a && crd_off + 2u * k0 - 2u < nix) prev = load_ix(crd_off + 2u * k0 - 2u);
    for (uint k = k0; k < k1; k++) {
        uint c = crd_off + 2u * k;
        uint v = c < nix ? load_ix(c) : extent;
        if (v >= extent || (k > a && v <= prev)) { store_err(0u, 1u); return; }
        prev = v;
    }
}
