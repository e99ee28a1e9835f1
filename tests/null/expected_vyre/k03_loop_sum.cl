#define load_b0_a(hg_i) (b0_a[(hg_i)])
#define load_b1_out(hg_i) (b1_out[(hg_i)])
#define store_b1_out(hg_i, hg_v) (b1_out[(hg_i)] = (uint)((hg_v)))
#define load_trapflag(hg_i) (trapflag[(hg_i)])
#define store_trapflag(hg_i, hg_v) (trapflag[(hg_i)] = (uint)((hg_v)))

__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void vyre_73b6b3531e74b549(__global const uint* restrict b0_a, __global uint* restrict b1_out, __global uint* restrict trapflag, uint n0, uint n1, uint passmax) {
    uint passes = 0u;
    {
        uint l_i_1 = ((uint)get_global_id(0));
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
