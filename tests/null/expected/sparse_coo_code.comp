#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_vals_block { uint vals[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_ix_block { uint ix[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_mt_block { uint mt[]; };
layout(push_constant) uniform hg_push_block { uint nnz; uint n; uint bits; uint nix; uint rank; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 3u) * 8u; atomicAnd(dst[hg_i >> 2u], ~(0xffu << hg_s)); atomicOr(dst[hg_i >> 2u], (hg_v & 0xffu) << hg_s); }
uint load_vals(uint hg_i) { return ((vals[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
uint load_ix(uint hg_i) { return ix[hg_i]; }
uint load_mt(uint hg_i) { return mt[hg_i]; }

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint nnz = hg_pc.nnz;
    uint n = hg_pc.n;
    uint bits = hg_pc.bits;
    uint nix = hg_pc.nix;
    uint rank = hg_pc.rank;
    uint i = gl_GlobalInvocationID.x;
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
