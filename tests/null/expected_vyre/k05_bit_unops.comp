#version 450

layout(std430, set = 0, binding = 0) readonly buffer hg_b0_a_block { uint b0_a[]; };
layout(std430, set = 0, binding = 1) buffer hg_b1_out_block { uint b1_out[]; };
layout(push_constant) uniform hg_push_block { uint n0; uint n1; } hg_pc;
uint load_b0_a(uint hg_i) { return b0_a[hg_i]; }
uint load_b1_out(uint hg_i) { return b1_out[hg_i]; }
void store_b1_out(uint hg_i, uint hg_v) { b1_out[hg_i] = hg_v; }

layout(local_size_x = 4, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n0 = hg_pc.n0;
    uint n1 = hg_pc.n1;
    {
        uint l_i_1 = gl_GlobalInvocationID.x;
        bool t2 = l_i_1 < n0;
        if (t2) {
            uint t3 = (l_i_1 < n0) ? load_b0_a(l_i_1) : 0u;
            uint l_x_4 = t3;
            uint t5 = l_i_1 * 0x4u;
            uint l_base_6 = t5;
            uint t7 = l_x_4 - ((l_x_4 >> 1u) & 0x55555555u);
            uint t8 = (t7 & 0x33333333u) + ((t7 >> 2u) & 0x33333333u);
            uint t9 = (t8 + (t8 >> 4u)) & 0x0f0f0f0fu;
            uint t10 = (t9 * 0x01010101u) >> 24u;
            if (l_base_6 < n1) { store_b1_out(l_base_6, t10); }
            uint t11 = l_base_6 + 0x1u;
            uint t12 = (l_x_4 == 0u) ? 32u : 0u;
            uint t13 = l_x_4;
            if ((t13 != 0u) && (t13 <= 0x0000ffffu)) { t12 = t12 + 16u; t13 = t13 << 16u; }
            if ((t13 != 0u) && (t13 <= 0x00ffffffu)) { t12 = t12 + 8u; t13 = t13 << 8u; }
            if ((t13 != 0u) && (t13 <= 0x0fffffffu)) { t12 = t12 + 4u; t13 = t13 << 4u; }
            if ((t13 != 0u) && (t13 <= 0x3fffffffu)) { t12 = t12 + 2u; t13 = t13 << 2u; }
            if ((t13 != 0u) && (t13 <= 0x7fffffffu)) { t12 = t12 + 1u; t13 = t13 << 1u; }
            if (t11 < n1) { store_b1_out(t11, t12); }
            uint t14 = l_base_6 + 0x2u;
            uint t15 = (l_x_4 & (0u - l_x_4)) - 1u;
            uint t16 = t15 - ((t15 >> 1u) & 0x55555555u);
            uint t17 = (t16 & 0x33333333u) + ((t16 >> 2u) & 0x33333333u);
            uint t18 = (t17 + (t17 >> 4u)) & 0x0f0f0f0fu;
            uint t19 = (t18 * 0x01010101u) >> 24u;
            if (t14 < n1) { store_b1_out(t14, t19); }
            uint t20 = l_base_6 + 0x3u;
            uint t21 = l_x_4;
            t21 = ((t21 >> 1u) & 0x55555555u) | ((t21 & 0x55555555u) << 1u);
            t21 = ((t21 >> 2u) & 0x33333333u) | ((t21 & 0x33333333u) << 2u);
            t21 = ((t21 >> 4u) & 0x0f0f0f0fu) | ((t21 & 0x0f0f0f0fu) << 4u);
            t21 = ((t21 >> 8u) & 0x00ff00ffu) | ((t21 & 0x00ff00ffu) << 8u);
            uint t22 = (t21 >> 16u) | (t21 << 16u);
            if (t20 < n1) { store_b1_out(t20, t22); }
        }
    }
}
