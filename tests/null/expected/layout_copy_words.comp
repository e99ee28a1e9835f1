#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_src_block { uint src[]; };
layout(push_constant) uniform hg_push_block { uint n; uint dat; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { dst[hg_i] = hg_v; }
uint load_src(uint hg_i) { return src[hg_i]; }

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint dat = hg_pc.dat;
    uint j = gl_GlobalInvocationID.x;
    if (j >= n) return;
    store_dst(dat + j, load_src(j));
}
