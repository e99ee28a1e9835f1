#version 450

layout(std430, set = 0, binding = 0) readonly buffer hg_b0_a_block { uint b0_a[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_b1_b_block { uint b1_b[]; };
layout(std430, set = 0, binding = 2) buffer hg_b2_out_block { uint b2_out[]; };
layout(std430, set = 0, binding = 3) buffer hg_trapflag_block { uint trapflag[]; };
layout(push_constant) uniform hg_push_block { uint n0; uint n1; uint n2; uint passmax; } hg_pc;
uint load_b0_a(uint hg_i) { return b0_a[hg_i]; }
uint load_b1_b(uint hg_i) { return b1_b[hg_i]; }
uint load_b2_out(uint hg_i) { return b2_out[hg_i]; }
void store_b2_out(uint hg_i, uint hg_v) { b2_out[hg_i] = hg_v; }
uint load_trapflag(uint hg_i) { return trapflag[hg_i]; }
void store_trapflag(uint hg_i, uint hg_v) { trapflag[hg_i] = hg_v; }
shared uint s3_ta[256];
uint load_s3_ta(uint hg_i) { return s3_ta[hg_i]; }
void store_s3_ta(uint hg_i, uint hg_v) { s3_ta[hg_i] = hg_v; }
shared uint s4_tb[256];
uint load_s4_tb(uint hg_i) { return s4_tb[hg_i]; }
void store_s4_tb(uint hg_i, uint hg_v) { s4_tb[hg_i] = hg_v; }

layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;

void main() {
    uint n0 = hg_pc.n0;
    uint n1 = hg_pc.n1;
    uint n2 = hg_pc.n2;
    uint passmax = hg_pc.passmax;
    uint upasses = 0u;
    uint t1 = (gl_GlobalInvocationID.x % 16u) + 16u * ((gl_GlobalInvocationID.y % 16u) + 16u * (gl_GlobalInvocationID.z % 1u));
    uint z2 = t1;
    for (; z2 < 256u; z2 += 256u) {
        store_s3_ta(z2, 0u);
    }
    if (z2 < 256u) { store_trapflag(1u, 1u); }
    uint z3 = t1;
    for (; z3 < 256u; z3 += 256u) {
        store_s4_tb(z3, 0u);
    }
    if (z3 < 256u) { store_trapflag(1u, 1u); }
    memoryBarrierShared(); memoryBarrierBuffer(); barrier();
    {
        uint l_c_4 = gl_GlobalInvocationID.x;
        uint l_r_5 = gl_GlobalInvocationID.y;
        uint l_acc_6 = 0x0u;
        uint t7 = 0x0u;
        uint t8 = 0x2u;
        uint l_t_9 = t7;
        uint t10 = t8 > t7 ? t7 + ((t8 - t7) < (passmax - upasses) ? (t8 - t7) : (passmax - upasses)) : t7;
        upasses = upasses + (t10 - t7);
        for (; l_t_9 < t10; l_t_9++) {
            uint t11 = (gl_GlobalInvocationID.y % 16u) * 0x10u;
            uint t12 = t11 + (gl_GlobalInvocationID.x % 16u);
            bool t13 = l_r_5 < 0x20u;
            uint t14 = l_t_9 * 0x10u;
            uint t15 = t14 + (gl_GlobalInvocationID.x % 16u);
            bool t16 = t15 < 0x20u;
            bool t17 = t13 && t16;
            uint t18 = l_r_5 * 0x20u;
            uint t19 = l_t_9 * 0x10u;
            uint t20 = t19 + (gl_GlobalInvocationID.x % 16u);
            uint t21 = t18 + t20;
            uint t22 = (t21 < n0) ? load_b0_a(t21) : 0u;
            uint t23 = t17 ? t22 : 0x0u;
            if (t12 < 256u) { store_s3_ta(t12, t23); }
            uint t24 = (gl_GlobalInvocationID.y % 16u) * 0x10u;
            uint t25 = t24 + (gl_GlobalInvocationID.x % 16u);
            uint t26 = l_t_9 * 0x10u;
            uint t27 = t26 + (gl_GlobalInvocationID.y % 16u);
            bool t28 = t27 < 0x20u;
            bool t29 = l_c_4 < 0x20u;
            bool t30 = t28 && t29;
            uint t31 = l_t_9 * 0x10u;
            uint t32 = t31 + (gl_GlobalInvocationID.y % 16u);
            uint t33 = t32 * 0x20u;
            uint t34 = t33 + l_c_4;
            uint t35 = (t34 < n1) ? load_b1_b(t34) : 0u;
            uint t36 = t30 ? t35 : 0x0u;
            if (t25 < 256u) { store_s4_tb(t25, t36); }
            memoryBarrierShared(); memoryBarrierBuffer(); barrier();
            uint t37 = 0x0u;
            uint t38 = 0x10u;
            uint l_k_39 = t37;
            uint t40 = t38 > t37 ? t37 + ((t38 - t37) < (passmax - upasses) ? (t38 - t37) : (passmax - upasses)) : t37;
            upasses = upasses + (t40 - t37);
            for (; l_k_39 < t40; l_k_39++) {
                uint t41 = (gl_GlobalInvocationID.y % 16u) * 0x10u;
                uint t42 = t41 + l_k_39;
                uint t43 = (t42 < 256u) ? load_s3_ta(t42) : 0u;
                uint t44 = l_k_39 * 0x10u;
                uint t45 = t44 + (gl_GlobalInvocationID.x % 16u);
                uint t46 = (t45 < 256u) ? load_s4_tb(t45) : 0u;
                uint t47 = t43 * t46;
                uint t48 = l_acc_6 + t47;
                l_acc_6 = t48;
            }
            if (l_k_39 < t38) { store_trapflag(1u, 1u); }
            memoryBarrierShared(); memoryBarrierBuffer(); barrier();
        }
        if (l_t_9 < t8) { store_trapflag(1u, 1u); }
        bool t49 = l_r_5 < 0x20u;
        bool t50 = l_c_4 < 0x20u;
        bool t51 = t49 && t50;
        if (t51) {
            uint t52 = l_r_5 * 0x20u;
            uint t53 = t52 + l_c_4;
            if (t53 < n2) { store_b2_out(t53, l_acc_6); }
        }
    }
}
