#version 450

layout(std430, set = 0, binding = 0) buffer hg_mark_block { uint mark[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_ix_block { uint ix[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_mt_block { uint mt[]; };
layout(push_constant) uniform hg_push_block { uint nnz; uint rank; uint n; } hg_pc;
void store_mark(uint hg_i, uint hg_v) { mark[hg_i] = hg_v; }
uint load_ix(uint hg_i) { return ix[hg_i]; }
uint load_mt(uint hg_i) { return mt[hg_i]; }

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint nnz = hg_pc.nnz;
    uint rank = hg_pc.rank;
    uint n = hg_pc.n;
    uint i = gl_GlobalInvocationID.x;
    if (i >= nnz) return;
    uint fi = 0u;
    for (uint d = 0u; d < rank; d++) {
        fi = fi + load_ix(2u * (i * rank + d)) * load_mt(2u * d + 1u);
    }
    if (fi >= n) return;
    store_mark(fi, i + 1u);
}
