#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_src_block { uint src[]; };
layout(push_constant) uniform hg_push_block { uint rows; uint cols; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { dst[hg_i] = hg_v; }
uint load_src(uint hg_i) { return src[hg_i]; }

layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

void main() {
    uint rows = hg_pc.rows;
    uint cols = hg_pc.cols;
    uint c = gl_GlobalInvocationID.x;
    uint r = gl_GlobalInvocationID.y;
    if (c >= cols || r >= rows) return;
    store_dst(c * rows + r, load_src(r * cols + c));
}
