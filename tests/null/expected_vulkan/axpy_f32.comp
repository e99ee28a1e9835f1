#version 450

layout(std430, set = 0, binding = 0) buffer hg_y_block { uint y[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_x_block { uint x[]; };
layout(std430, set = 0, binding = 2) buffer hg_fault_block { uint hg_fault; };
layout(push_constant) uniform hg_push_block { uint hg_base0; uint hg_base1; uint hg_base2; uint hg_d_y; uint hg_d_x; float a; uint n; } hg_pc;
uint hg_ix_y(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_y; if (hg_k >= uint(y.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_x(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_x; if (hg_k >= uint(x.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
float load_y(uint hg_i) { return uintBitsToFloat(y[hg_ix_y(hg_i)]); }
void store_y(uint hg_i, float hg_v) { y[hg_ix_y(hg_i)] = floatBitsToUint(hg_v); }
float load_x(uint hg_i) { return uintBitsToFloat(x[hg_ix_x(hg_i)]); }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    float a = hg_pc.a;
    uint n = hg_pc.n;
    uint i = (gl_GlobalInvocationID.x + hg_pc.hg_base0);
    if (i >= n) return;
    store_y(i, fma(a, load_x(i), load_y(i)));
}
