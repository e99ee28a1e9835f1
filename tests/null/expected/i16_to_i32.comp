#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_src_block { uint src[]; };
layout(push_constant) uniform hg_push_block { uint n; } hg_pc;
void store_dst(uint hg_i, int hg_v) { dst[hg_i] = uint(hg_v); }
int load_src(uint hg_i) { return bitfieldExtract(int(src[hg_i >> 1u]), int((hg_i & 1u) * 16u), 16); }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint i = gl_GlobalInvocationID.x;
    if (i >= n) return;
    store_dst(i, load_src(i));
}
