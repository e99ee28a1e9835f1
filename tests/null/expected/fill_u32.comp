#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(push_constant) uniform hg_push_block { uint value; uint n; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { dst[hg_i] = hg_v; }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint value = hg_pc.value;
    uint n = hg_pc.n;
    uint i = gl_GlobalInvocationID.x;
    if (i >= n) return;
    store_dst(i, value);
}
