#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_src_block { uint src[]; };
layout(push_constant) uniform hg_push_block { uint n; uint bits; uint epu; uint upb; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 3u) * 8u; atomicAnd(dst[hg_i >> 2u], ~(0xffu << hg_s)); atomicOr(dst[hg_i >> 2u], (hg_v & 0xffu) << hg_s); }
uint load_src(uint hg_i) { return ((src[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint bits = hg_pc.bits;
    uint epu = hg_pc.epu;
    uint upb = hg_pc.upb;
    uint u = gl_GlobalInvocationID.x;
    if (u * epu >= n) return;
    uint acc = 0u;
    for (uint e = 0u; e < epu; e++) {
        uint f = u * epu + e;
        if (f < n) acc = acc | ((load_src(f) & ((1u << bits) - 1u)) << (e * bits));
    }
    for (uint b = 0u; b < upb; b++) store_dst(u * upb + b, (acc >> (8u * b)) & 255u);
}
