#define load_b0_x(hg_i) (b0_x[(hg_i)])
#define load_b1_y(hg_i) (b1_y[(hg_i)])
#define store_b1_y(hg_i, hg_v) (b1_y[(hg_i)] = (uint)((hg_v)))

__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void vyre_3a49e86767270a58(__global const uint* restrict b0_x, __global uint* restrict b1_y, uint n0, uint n1) {
    {
        uint t1 = (((uint)get_global_id(0)) < n0) ? load_b0_x(((uint)get_global_id(0))) : 0u;
        uint t2 = as_uint(as_float(t1));
        float t3 = as_float(((t2 & 0x7fffffffu) > 0x7f800000u) ? 0x7fc00000u : ((((t2 & 0x7f800000u) == 0u)) ? (t2 & 0x80000000u) : t2));
        uint t4 = (((uint)get_global_id(0)) < n0) ? load_b0_x(((uint)get_global_id(0))) : 0u;
        uint t5 = as_uint(as_float(t4));
        float t6 = as_float(((t5 & 0x7fffffffu) > 0x7f800000u) ? 0x7fc00000u : ((((t5 & 0x7f800000u) == 0u)) ? (t5 & 0x80000000u) : t5));
        uint t7 = as_uint(fma(t3, t6, as_float(0xbf800000u)));
        float t8 = as_float(((t7 & 0x7fffffffu) > 0x7f800000u) ? 0x7fc00000u : ((((t7 & 0x7f800000u) == 0u)) ? (t7 & 0x80000000u) : t7));
        if (((uint)get_global_id(0)) < n1) { store_b1_y(((uint)get_global_id(0)), as_uint(t8)); }
    }
}
