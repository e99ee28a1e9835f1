#version 450

layout(std430, set = 0, binding = 0) buffer hg_err_block { uint err[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_ix_block { uint ix[]; };
layout(push_constant) uniform hg_push_block { uint n; } hg_pc;
void store_err(uint hg_i, uint hg_v) { err[hg_i] = hg_v; }
uint load_ix(uint hg_i) { return ix[hg_i]; }

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint j = gl_GlobalInvocationID.x;
    if (j >= n) return;
    if (load_ix(2u * j + 1u) != 0u) store_err(0u, 1u);
}
