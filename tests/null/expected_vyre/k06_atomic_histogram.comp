#version 450

layout(std430, set = 0, binding = 0) readonly buffer hg_b0_data_block { uint b0_data[]; };
layout(std430, set = 0, binding = 1) buffer hg_b1_hist_block { uint b1_hist[]; };
layout(push_constant) uniform hg_push_block { uint n0; uint n1; } hg_pc;
uint load_b0_data(uint hg_i) { return b0_data[hg_i]; }
uint load_b1_hist(uint hg_i) { return b1_hist[hg_i]; }
void store_b1_hist(uint hg_i, uint hg_v) { b1_hist[hg_i] = hg_v; }
uint atomic_add_b1_hist(uint hg_i, uint hg_v) { return atomicAdd(b1_hist[hg_i], hg_v); }

layout(local_size_x = 4, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n0 = hg_pc.n0;
    uint n1 = hg_pc.n1;
    {
        uint l_i_1 = gl_GlobalInvocationID.x;
        bool t2 = l_i_1 < n0;
        if (t2) {
            uint t3 = (l_i_1 < n0) ? load_b0_data(l_i_1) : 0u;
            uint t4 = (0x4u == 0u) ? 0u : t3 % ((0x4u == 0u) ? 1u : 0x4u);
            uint t5 = 0u;
            if (t4 < n1) { t5 = atomic_add_b1_hist(t4, 0x1u); }
            uint l_old_6 = t5;
        }
    }
}
