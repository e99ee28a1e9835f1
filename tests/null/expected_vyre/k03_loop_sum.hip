#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define load_b0_a(hg_i) (b0_a[(hg_i)])
#define load_b1_out(hg_i) (b1_out[(hg_i)])
#define store_b1_out(hg_i, hg_v) (b1_out[(hg_i)] = (unsigned int)((hg_v)))
#define load_trapflag(hg_i) (trapflag[(hg_i)])
#define store_trapflag(hg_i, hg_v) (trapflag[(hg_i)] = (unsigned int)((hg_v)))

extern "C" __global__ void __launch_bounds__(4) vyre_73b6b3531e74b549(const unsigned int* __restrict__ b0_a, unsigned int* __restrict__ b1_out, unsigned int* __restrict__ trapflag, unsigned int n0, unsigned int n1, unsigned int passmax) {
    unsigned int passes = 0u;
    {
        unsigned int l_i_1 = (blockIdx.x * blockDim.x + threadIdx.x);
        bool t2 = l_i_1 < n1;
        if (t2) {
            unsigned int l_acc_3 = 0x0u;
            unsigned int t4 = (l_i_1 < n0) ? load_b0_a(l_i_1) : 0u;
            unsigned int t5 = 0x0u;
            unsigned int t6 = t4;
            unsigned int l_j_7 = t5;
            unsigned int t8 = t6 > t5 ? t5 + ((t6 - t5) < (passmax - passes) ? (t6 - t5) : (passmax - passes)) : t5;
            passes = passes + (t8 - t5);
            for (; l_j_7 < t8; l_j_7++) {
                unsigned int t9 = l_acc_3 + l_j_7;
                l_acc_3 = t9;
            }
            if (l_j_7 < t6) { store_trapflag(1u, 1u); }
            if (l_i_1 < n1) { store_b1_out(l_i_1, l_acc_3); }
        }
    }
}
