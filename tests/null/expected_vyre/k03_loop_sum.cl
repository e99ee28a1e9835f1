#define load_b0_a(hg_i) (b0_a[(hg_i)])
#define load_b1_out(hg_i) (b1_out[(hg_i)])
#define store_b1_out(hg_i, hg_v) (b1_out[(hg_i)] = (uint)((hg_v)))

__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void vyre_73b6b3531e74b549(__global const uint* restrict b0_a, __global uint* restrict b1_out, uint n0, uint n1) {
    {
        uint l_i_1 = ((uint)get_global_id(0));
        bool t2 = l_i_1 < n1;
        if (t2) {
            uint l_acc_3 = 0x0u;
            uint t4 = (l_i_1 < n0) ? load_b0_a(l_i_1) : 0u;
            uint t5 = 0x0u;
            uint t6 = t4;
            for (uint l_j_7 = t5; l_j_7 < t6; l_j_7++) {
                uint t8 = l_acc_3 + l_j_7;
                l_acc_3 = t8;
            }
            if (l_i_1 < n1) { store_b1_out(l_i_1, l_acc_3); }
        }
    }
}
