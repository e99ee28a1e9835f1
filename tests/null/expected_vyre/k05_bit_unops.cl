#define load_b0_a(hg_i) (b0_a[(hg_i)])
#define load_b1_out(hg_i) (b1_out[(hg_i)])
#define store_b1_out(hg_i, hg_v) (b1_out[(hg_i)] = (uint)((hg_v)))

__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void vyre_3776adb47dc05210(__global const uint* restrict b0_a, __global uint* restrict b1_out, uint n0, uint n1) {
    {
        uint l_i_1 = ((uint)get_global_id(0));
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
