#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_data_block { uint data[]; };
layout(push_constant) uniform hg_push_block { uint n; uint doff; uint bits; uint sgn; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 3u) * 8u; atomicAnd(dst[hg_i >> 2u], ~(0xffu << hg_s)); atomicOr(dst[hg_i >> 2u], (hg_v & 0xffu) << hg_s); }
uint load_data(uint hg_i) { return ((data[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint doff = hg_pc.doff;
    uint bits = hg_pc.bits;
    uint sgn = hg_pc.sgn;
    uint i = gl_GlobalInvocationID.x;
    if (i >= n) return;
    uint bit = i * bits;
    uint code = (load_data(doff + (bit >> 3u)) >> (bit & 7u)) & ((1u << bits) - 1u);
    if (sgn != 0u && code >= (1u << (bits - 1u))) code = code | ~((1u << bits) - 1u);
    store_dst(i, code & 255u);
}
