#version 450

layout(std430, set = 0, binding = 0) readonly buffer hg_b0_x_block { uint b0_x[]; };
layout(std430, set = 0, binding = 1) buffer hg_b1_y_block { uint b1_y[]; };
layout(std430, set = 0, binding = 2) buffer hg_b2_z_block { uint b2_z[]; };
layout(push_constant) uniform hg_push_block { uint n0; uint n1; uint n2; } hg_pc;
uint load_b0_x(uint hg_i) { return b0_x[hg_i]; }
uint load_b1_y(uint hg_i) { return b1_y[hg_i]; }
void store_b1_y(uint hg_i, uint hg_v) { b1_y[hg_i] = hg_v; }
uint load_b2_z(uint hg_i) { return b2_z[hg_i]; }
void store_b2_z(uint hg_i, uint hg_v) { b2_z[hg_i] = hg_v; }

layout(local_size_x = 4, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n0 = hg_pc.n0;
    uint n1 = hg_pc.n1;
    uint n2 = hg_pc.n2;
    {
        bool t1 = gl_GlobalInvocationID.x < n0;
        uint t2w0 = t1 ? load_b0_x(2u * (gl_GlobalInvocationID.x)) : 0u;
        uint t2w1 = t1 ? load_b0_x(2u * (gl_GlobalInvocationID.x) + 1u) : 0u;
        if (gl_GlobalInvocationID.x < n1) { store_b1_y(2u * (gl_GlobalInvocationID.x), t2w0); store_b1_y(2u * (gl_GlobalInvocationID.x) + 1u, t2w1); }
        bool t3 = gl_GlobalInvocationID.x < n0;
        uint t4w0 = t3 ? load_b0_x(2u * (gl_GlobalInvocationID.x)) : 0u;
        uint t4w1 = t3 ? load_b0_x(2u * (gl_GlobalInvocationID.x) + 1u) : 0u;
        bool t5 = gl_GlobalInvocationID.x < n1;
        uint t6w0 = t5 ? load_b1_y(2u * (gl_GlobalInvocationID.x)) : 0u;
        uint t6w1 = t5 ? load_b1_y(2u * (gl_GlobalInvocationID.x) + 1u) : 0u;
        bool t7 = (t4w1 < t6w1) || ((t4w1 == t6w1) && (t4w0 < t6w0));
        uint t8 = t7 ? 1u : 0u;
        if (gl_GlobalInvocationID.x < n2) { store_b2_z(gl_GlobalInvocationID.x, t8); }
    }
}
