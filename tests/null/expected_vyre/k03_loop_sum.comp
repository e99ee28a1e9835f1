#version 450

layout(std430, set = 0, binding = 0) readonly buffer hg_b0_a_block { uint b0_a[]; };
layout(std430, set = 0, binding = 1) buffer hg_b1_out_block { uint b1_out[]; };
layout(std430, set = 0, binding = 2) buffer hg_trapflag_block { uint trapflag[]; };
layout(push_constant) uniform hg_push_block { uint n0; uint n1; uint passmax; } hg_pc;
uint load_b0_a(uint hg_i) { return b0_a[hg_i]; }
uint load_b1_out(uint hg_i) { return b1_out[hg_i]; }
void store_b1_out(uint hg_i, uint hg_v) { b1_out[hg_i] = hg_v; }
uint load_trapflag(uint hg_i) { return trapflag[hg_i]; }
void store_trapflag(uint hg_i, uint hg_v) { trapflag[hg_i] = hg_v; }

layout(local_size_x = 4, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n0 = hg_pc.n0;
    uint n1 = hg_pc.n1;
    uint passmax = hg_pc.passmax;
    uint passes = 0u;
    {
        uint l_i_1 = gl_GlobalInvocationID.x;
        bool t2 = l_i_1 < n1;
        if (t2) {
            uint l_acc_3 = 0x0u;
            uint t4 = (l_i_1 < n0) ? load_b0_a(l_i_1) : 0u;
            uint t5 = 0x0u;
            uint t6 = t4;
            uint l_j_7 = t5;
            uint t8 = t6 > t5 ? t5 + ((t6 - t5) < (passmax - passes) ? (t6 - t5) : (passmax - passes)) : t5;
            passes = passes + (t8 - t5);
            for (; l_j_7 < t8; l_j_7++) {
                uint t9 = l_acc_3 + l_j_7;
                l_acc_3 = t9;
            }
            if (l_j_7 < t6) { store_trapflag(1u, 1u); }
            if (l_i_1 < n1) { store_b1_out(l_i_1, l_acc_3); }
        }
    }
}
