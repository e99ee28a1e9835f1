#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint)((hg_v)))
#define load_vals(hg_i) (vals[(hg_i)])
#define load_ci(hg_i) (ci[(hg_i)])
#define load_rp(hg_i) (rp[(hg_i)])
#define load_err(hg_i) (err[(hg_i)])
#define store_err(hg_i, hg_v) (err[(hg_i)] = (uint)((hg_v)))

__kernel __attribute__((reqd_work_group_size(64, 4, 1))) void sparse_csr_rows_u32(__global uint* restrict dst, __global const uint* restrict vals, __global const uint* restrict ci, __global const uint* restrict rp, __global uint* restrict err, uint nrows, uint ncols, uint nnz, uint wpe, uint seg) {
    uint c0 = ((uint)get_global_id(0)) * seg;
    uint r = ((uint)get_global_id(1));
    if (c0 >= ncols || r >= nrows) return;
    uint c1 = c0 + min(ncols - c0, seg);
    uint o = r * ncols;
    // The store index is the loop counter itself: a uint sum (o + c) may wrap as far as a
    // C compiler knows, which keeps it from turning the loop into a memset.
    uint z1 = (o + c1) * wpe;
    for (uint j = (o + c0) * wpe; j < z1; j++) store_dst(j, 0u);
    uint a = load_rp(2u * r);
    uint b = load_rp(2u * r + 2u);
    if ((load_rp(2u * r + 1u) | load_rp(2u * r + 3u)) != 0u || a > b || b > nnz
            || (r == 0u && a != 0u) || (r + 1u == nrows && b != nnz)) {
        store_err(0u, 1u);
        return;
    }
    uint lo = a;
    uint hi = b;
    uint k = a;
    if (c0 != 0u) {
        lo = a;
        hi = b;
        while (lo < hi) {
            uint md = lo + (hi - lo) / 2u;
            if (load_ci(2u * md + 1u) == 0u && load_ci(2u * md) < c0) {
                lo = md + 1u;
            } else {
                hi = md;
            }
        }
        k = lo;
    }
    uint next = c0;
    for (; k < b; k++) {
        uint v = load_ci(2u * k);
        if (load_ci(2u * k + 1u) != 0u || v < next) {
            store_err(0u, 1u);
            return;
        }
        if (v >= c1) break;
        next = v + 1u;
        if (wpe == 1u) {
            store_dst(o + v, load_vals(k));
        } else {
            for (uint w = 0u; w < wpe; w++) store_dst((o + v) * wpe + w, load_vals(k * wpe + w));
        }
    }
    if (c1 != ncols) {
        lo = a;
        hi = b;
        while (lo < hi) {
            uint md = lo + (hi - lo) / 2u;
            if (load_ci(2u * md + 1u) == 0u && load_ci(2u * md) < c1) {
                lo = md + 1u;
            } else {
                hi = md;
            }
        }
        if (k != lo) store_err(0u, 1u);
    } else if (k != b) {
        store_err(0u, 1u);
    }
}
