#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_vals_block { uint vals[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_ci_block { uint ci[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_rp_block { uint rp[]; };
layout(std430, set = 0, binding = 4) buffer hg_err_block { uint err[]; };
layout(std430, set = 0, binding = 5) buffer hg_fault_block { uint hg_fault; };
layout(push_constant) uniform hg_push_block { uint hg_base0; uint hg_base1; uint hg_base2; uint hg_d_dst; uint hg_d_vals; uint hg_d_ci; uint hg_d_rp; uint hg_d_err; uint nrows; uint ncols; uint nnz; uint wpe; uint seg; } hg_pc;
uint hg_ix_dst(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_dst; if (hg_k >= uint(dst.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_vals(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_vals; if (hg_k >= uint(vals.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_ci(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_ci; if (hg_k >= uint(ci.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_rp(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_rp; if (hg_k >= uint(rp.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_err(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_err; if (hg_k >= uint(err.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
void store_dst(uint hg_i, uint hg_v) { dst[hg_ix_dst(hg_i)] = hg_v; }
uint load_vals(uint hg_i) { return vals[hg_ix_vals(hg_i)]; }
uint load_ci(uint hg_i) { return ci[hg_ix_ci(hg_i)]; }
uint load_rp(uint hg_i) { return rp[hg_ix_rp(hg_i)]; }
uint load_err(uint hg_i) { return err[hg_ix_err(hg_i)]; }
void store_err(uint hg_i, uint hg_v) { err[hg_ix_err(hg_i)] = hg_v; }

layout(local_size_x = 64, local_size_y = 4, local_size_z = 1) in;

void main() {
    uint nrows = hg_pc.nrows;
    uint ncols = hg_pc.ncols;
    uint nnz = hg_pc.nnz;
    uint wpe = hg_pc.wpe;
    uint seg = hg_pc.seg;
    uint c0 = (gl_GlobalInvocationID.x + hg_pc.hg_base0) * seg;
    uint r = (gl_GlobalInvocationID.y + hg_pc.hg_base1);
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
