#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_src_block { uint src[]; };
layout(std430, set = 0, binding = 2) buffer hg_fault_block { uint hg_fault; };
layout(push_constant) uniform hg_push_block { uint hg_base0; uint hg_base1; uint hg_base2; uint hg_d_dst; uint hg_d_src; uint n; } hg_pc;
uint hg_ix_dst(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_dst; if (hg_k >= uint(dst.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_src(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_src; if (hg_k >= uint(src.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
void store_dst(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 3u) * 8u; atomicAnd(dst[hg_ix_dst(hg_i >> 2u)], ~(0xffu << hg_s)); atomicOr(dst[hg_ix_dst(hg_i >> 2u)], (hg_v & 0xffu) << hg_s); }
uint load_src(uint hg_i) { return ((src[hg_ix_src(hg_i >> 2u)] >> ((hg_i & 3u) * 8u)) & 0xffu); }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint i = (gl_GlobalInvocationID.x + hg_pc.hg_base0);
    if (i >= n) return;
    store_dst(i, load_src(i));
}
