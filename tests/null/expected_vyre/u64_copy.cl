#define load_b0_x(hg_i) (b0_x[(hg_i)])
#define load_b1_y(hg_i) (b1_y[(hg_i)])
#define store_b1_y(hg_i, hg_v) (b1_y[(hg_i)] = (uint)((hg_v)))
#define load_b2_z(hg_i) (b2_z[(hg_i)])
#define store_b2_z(hg_i, hg_v) (b2_z[(hg_i)] = (uint)((hg_v)))

__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void vyre_02e8db7f85ed0612(__global const uint* restrict b0_x, __global uint* restrict b1_y, __global uint* restrict b2_z, uint n0, uint n1, uint n2) {
    {
        bool t1 = ((uint)get_global_id(0)) < n0;
        uint t2w0 = t1 ? load_b0_x(2u * (((uint)get_global_id(0)))) : 0u;
        uint t2w1 = t1 ? load_b0_x(2u * (((uint)get_global_id(0))) + 1u) : 0u;
        if (((uint)get_global_id(0)) < n1) { store_b1_y(2u * (((uint)get_global_id(0))), t2w0); store_b1_y(2u * (((uint)get_global_id(0))) + 1u, t2w1); }
        bool t3 = ((uint)get_global_id(0)) < n0;
        uint t4w0 = t3 ? load_b0_x(2u * (((uint)get_global_id(0)))) : 0u;
        uint t4w1 = t3 ? load_b0_x(2u * (((uint)get_global_id(0))) + 1u) : 0u;
        bool t5 = ((uint)get_global_id(0)) < n1;
        uint t6w0 = t5 ? load_b1_y(2u * (((uint)get_global_id(0)))) : 0u;
        uint t6w1 = t5 ? load_b1_y(2u * (((uint)get_global_id(0))) + 1u) : 0u;
        bool t7 = (t4w1 < t6w1) || ((t4w1 == t6w1) && (t4w0 < t6w0));
        uint t8 = t7 ? 1u : 0u;
        if (((uint)get_global_id(0)) < n2) { store_b2_z(((uint)get_global_id(0)), t8); }
    }
}
