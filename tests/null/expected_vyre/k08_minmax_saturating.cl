#define load_b0_a(hg_i) (b0_a[(hg_i)])
#define load_b1_b(hg_i) (b1_b[(hg_i)])
#define load_b2_out(hg_i) (b2_out[(hg_i)])
#define store_b2_out(hg_i, hg_v) (b2_out[(hg_i)] = (uint)((hg_v)))

__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void vyre_ed6cb5d0d1bc3b12(__global const uint* restrict b0_a, __global const uint* restrict b1_b, __global uint* restrict b2_out, uint n0, uint n1, uint n2) {
    {
        uint l_i_1 = ((uint)get_global_id(0));
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
            uint t20 = mul_hi(l_x_4, l_y_6);
            if (t19 < n2) { store_b2_out(t19, t20); }
        }
    }
}
