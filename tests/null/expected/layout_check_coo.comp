#version 450

layout(std430, set = 0, binding = 0) buffer hg_err_block { uint err[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_ix_block { uint ix[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_mt_block { uint mt[]; };
layout(push_constant) uniform hg_push_block { uint nnz; uint rank; uint srt; } hg_pc;
void store_err(uint hg_i, uint hg_v) { err[hg_i] = hg_v; }
uint load_ix(uint hg_i) { return ix[hg_i]; }
uint load_mt(uint hg_i) { return mt[hg_i]; }

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint nnz = hg_pc.nnz;
    uint rank = hg_pc.rank;
    uint srt = hg_pc.srt;
    uint i = gl_GlobalInvocationID.x;
    if (i >= nnz) return;
    uint state = 0u;
    for (uint d = 0u; d < rank; d++) {
        uint c = 2u * (i * rank + d);
        uint v = load_ix(c);
        if (v >= load_mt(2u * d)) store_err(0u, 1u);
        if (srt != 0u && i > 0u && state == 0u) {
            uint w = load_ix(c - 2u * rank);
            if (v > w) state = 1u;
            if (v < w) state = 2u;
        }
    }
    if (srt != 0u && i > 0u && state != 1u) store_err(0u, 1u);
}
