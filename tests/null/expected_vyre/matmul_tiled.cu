#define load_b0_a(hg_i) (b0_a[(hg_i)])
#define load_b1_b(hg_i) (b1_b[(hg_i)])
#define load_b2_out(hg_i) (b2_out[(hg_i)])
#define store_b2_out(hg_i, hg_v) (b2_out[(hg_i)] = (unsigned int)((hg_v)))
#define load_trapflag(hg_i) (trapflag[(hg_i)])
#define store_trapflag(hg_i, hg_v) (trapflag[(hg_i)] = (unsigned int)((hg_v)))
#define load_s3_ta(hg_i) (s3_ta[(hg_i)])
#define store_s3_ta(hg_i, hg_v) (s3_ta[(hg_i)] = (hg_v))
#define load_s4_tb(hg_i) (s4_tb[(hg_i)])
#define store_s4_tb(hg_i, hg_v) (s4_tb[(hg_i)] = (hg_v))

extern "C" __global__ void __launch_bounds__(256) vyre_5f8e5e4cf0b93899(const unsigned int* __restrict__ b0_a, const unsigned int* __restrict__ b1_b, unsigned int* __restrict__ b2_out, unsigned int* __restrict__ trapflag, unsigned int n0, unsigned int n1, unsigned int n2, unsigned int passmax) {
    __shared__ unsigned int s3_ta[256];
    __shared__ unsigned int s4_tb[256];
    unsigned int upasses = 0u;
    unsigned int t1 = ((blockIdx.x * blockDim.x + threadIdx.x) % 16u) + 16u * (((blockIdx.y * blockDim.y + threadIdx.y) % 16u) + 16u * ((blockIdx.z * blockDim.z + threadIdx.z) % 1u));
    unsigned int z2 = t1;
    for (; z2 < 256u; z2 += 256u) {
        store_s3_ta(z2, 0u);
    }
    if (z2 < 256u) { store_trapflag(1u, 1u); }
    unsigned int z3 = t1;
    for (; z3 < 256u; z3 += 256u) {
        store_s4_tb(z3, 0u);
    }
    if (z3 < 256u) { store_trapflag(1u, 1u); }
    __syncthreads();
    {
        unsigned int l_c_4 = (blockIdx.x * blockDim.x + threadIdx.x);
        unsigned int l_r_5 = (blockIdx.y * blockDim.y + threadIdx.y);
        unsigned int l_acc_6 = 0x0u;
        unsigned int t7 = 0x0u;
        unsigned int t8 = 0x2u;
        unsigned int l_t_9 = t7;
        unsigned int t10 = t8 > t7 ? t7 + ((t8 - t7) < (passmax - upasses) ? (t8 - t7) : (passmax - upasses)) : t7;
        upasses = upasses + (t10 - t7);
        for (; l_t_9 < t10; l_t_9++) {
            unsigned int t11 = ((blockIdx.y * blockDim.y + threadIdx.y) % 16u) * 0x10u;
            unsigned int t12 = t11 + ((blockIdx.x * blockDim.x + threadIdx.x) % 16u);
            bool t13 = l_r_5 < 0x20u;
            unsigned int t14 = l_t_9 * 0x10u;
            unsigned int t15 = t14 + ((blockIdx.x * blockDim.x + threadIdx.x) % 16u);
            bool t16 = t15 < 0x20u;
            bool t17 = t13 && t16;
            unsigned int t18 = l_r_5 * 0x20u;
            unsigned int t19 = l_t_9 * 0x10u;
            unsigned int t20 = t19 + ((blockIdx.x * blockDim.x + threadIdx.x) % 16u);
            unsigned int t21 = t18 + t20;
            unsigned int t22 = (t21 < n0) ? load_b0_a(t21) : 0u;
            unsigned int t23 = t17 ? t22 : 0x0u;
            if (t12 < 256u) { store_s3_ta(t12, t23); }
            unsigned int t24 = ((blockIdx.y * blockDim.y + threadIdx.y) % 16u) * 0x10u;
            unsigned int t25 = t24 + ((blockIdx.x * blockDim.x + threadIdx.x) % 16u);
            unsigned int t26 = l_t_9 * 0x10u;
            unsigned int t27 = t26 + ((blockIdx.y * blockDim.y + threadIdx.y) % 16u);
            bool t28 = t27 < 0x20u;
            bool t29 = l_c_4 < 0x20u;
            bool t30 = t28 && t29;
            unsigned int t31 = l_t_9 * 0x10u;
            unsigned int t32 = t31 + ((blockIdx.y * blockDim.y + threadIdx.y) % 16u);
            unsigned int t33 = t32 * 0x20u;
            unsigned int t34 = t33 + l_c_4;
            unsigned int t35 = (t34 < n1) ? load_b1_b(t34) : 0u;
            unsigned int t36 = t30 ? t35 : 0x0u;
            if (t25 < 256u) { store_s4_tb(t25, t36); }
            __syncthreads();
            unsigned int t37 = 0x0u;
            unsigned int t38 = 0x10u;
            unsigned int l_k_39 = t37;
            unsigned int t40 = t38 > t37 ? t37 + ((t38 - t37) < (passmax - upasses) ? (t38 - t37) : (passmax - upasses)) : t37;
            upasses = upasses + (t40 - t37);
            for (; l_k_39 < t40; l_k_39++) {
                unsigned int t41 = ((blockIdx.y * blockDim.y + threadIdx.y) % 16u) * 0x10u;
                unsigned int t42 = t41 + l_k_39;
                unsigned int t43 = (t42 < 256u) ? load_s3_ta(t42) : 0u;
                unsigned int t44 = l_k_39 * 0x10u;
                unsigned int t45 = t44 + ((blockIdx.x * blockDim.x + threadIdx.x) % 16u);
                unsigned int t46 = (t45 < 256u) ? load_s4_tb(t45) : 0u;
                unsigned int t47 = t43 * t46;
                unsigned int t48 = l_acc_6 + t47;
                l_acc_6 = t48;
            }
            if (l_k_39 < t38) { store_trapflag(1u, 1u); }
            __syncthreads();
        }
        if (l_t_9 < t8) { store_trapflag(1u, 1u); }
        bool t49 = l_r_5 < 0x20u;
        bool t50 = l_c_4 < 0x20u;
        bool t51 = t49 && t50;
        if (t51) {
            unsigned int t52 = l_r_5 * 0x20u;
            unsigned int t53 = t52 + l_c_4;
            if (t53 < n2) { store_b2_out(t53, l_acc_6); }
        }
    }
}
