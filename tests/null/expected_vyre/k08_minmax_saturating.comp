#version 450

uint hg_umulhi(uint a, uint b) {
    uint hi;
    uint lo;
    umulExtended(a, b, hi, lo);
    return hi;
}

layout(std430, set = 0, binding = 0) readonly buffer hg_b0_a_block { uint b0_a[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_b1_b_block { uint b1_b[]; };
layout(std430, set = 0, binding = 2) buffer hg_b2_out_block { uint b2_out[]; };
layout(push_constant) uniform hg_push_block { uint n0; uint n1; uint n2; } hg_pc;
uint load_b0_a(uint hg_i) { return b0_a[hg_i]; }
uint load_b1_b(uint hg_i) { return b1_b[hg_i]; }
uint load_b2_out(uint hg_i) { return b2_out[hg_i]; }
void store_b2_out(uint hg_i, uint hg_v) { b2_out[hg_i] = hg_v; }

layout(local_size_x = 4, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n0 = hg_pc.n0;
    uint n1 = hg_pc.n1;
    uint n2 = hg_pc.n2;
    {
        uint l_i_1 = gl_GlobalInvocationID.x;
        bool t2 = l_i_1 < n0;
        if (t2) {
            uint t3 = (l_i_1 < n0) ? load_b0_a(l_i_1) : 0u;
            uint l_x_4 = t3;
            uint t5 = (l_i_1 < n1) ? load_b1_b(l_i_1) : 0u;
            uint l_y_6 = t5;
            uint t7 = l_i_1 * 0x6u;
            uint l_base_8 = t7;
            uint t9 = l_base_8 + 0x0u;
            uint t10 = min(l_x_4, l_y_6);
            if (t9 < n2) { store_b2_out(t9, t10); }
            uint t11 = l_base_8 + 0x1u;
            uint t12 = max(l_x_4, l_y_6);
            if (t11 < n2) { store_b2_out(t11, t12); }
            uint t13 = l_base_8 + 0x2u;
            uint t14 = (l_x_4 > l_y_6) ? l_x_4 - l_y_6 : l_y_6 - l_x_4;
            if (t13 < n2) { store_b2_out(t13, t14); }
            uint t15 = l_base_8 + 0x3u;
            uint t16 = (l_x_4 + l_y_6 < l_x_4) ? 0xffffffffu : l_x_4 + l_y_6;
            if (t15 < n2) { store_b2_out(t15, t16); }
            uint t17 = l_base_8 + 0x4u;
            uint t18 = (l_x_4 > l_y_6) ? l_x_4 - l_y_6 : 0u;
            if (t17 < n2) { store_b2_out(t17, t18); }
            uint t19 = l_base_8 + 0x5u;
            uint t20 = hg_umulhi(l_x_4, l_y_6);
            if (t19 < n2) { store_b2_out(t19, t20); }
        }
    }
}
