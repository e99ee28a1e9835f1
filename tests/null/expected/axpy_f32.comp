#version 450

layout(std430, set = 0, binding = 0) buffer hg_y_block { uint y[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_x_block { uint x[]; };
layout(push_constant) uniform hg_push_block { float a; uint n; } hg_pc;
float load_y(uint hg_i) { return uintBitsToFloat(y[hg_i]); }
void store_y(uint hg_i, float hg_v) { y[hg_i] = floatBitsToUint(hg_v); }
float load_x(uint hg_i) { return uintBitsToFloat(x[hg_i]); }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    float a = hg_pc.a;
    uint n = hg_pc.n;
    uint i = gl_GlobalInvocationID.x;
    if (i >= n) return;
    store_y(i, fma(a, load_x(i), load_y(i)));
}
