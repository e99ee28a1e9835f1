#define load_b0_data(hg_i) (b0_data[(hg_i)])
#define load_b1_hist(hg_i) (b1_hist[(hg_i)])
#define store_b1_hist(hg_i, hg_v) (b1_hist[(hg_i)] = (uint)((hg_v)))
#define atomic_add_b1_hist(hg_i, hg_v) (atomic_add(&b1_hist[(hg_i)], (hg_v)))

__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void vyre_85f76cb1a71fdc3c(__global const uint* restrict b0_data, __global uint* restrict b1_hist, uint n0, uint n1) {
    {
        uint l_i_1 = ((uint)get_global_id(0));
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
