#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define load_b0_a(hg_i) (b0_a[(hg_i)])
#define load_b1_b(hg_i) (b1_b[(hg_i)])
#define load_b2_out(hg_i) (b2_out[(hg_i)])
#define store_b2_out(hg_i, hg_v) (b2_out[(hg_i)] = (unsigned int)((hg_v)))

extern "C" __global__ void __launch_bounds__(4) vyre_ed6cb5d0d1bc3b12(const unsigned int* __restrict__ b0_a, const unsigned int* __restrict__ b1_b, unsigned int* __restrict__ b2_out, unsigned int n0, unsigned int n1, unsigned int n2) {
    {
        unsigned int l_i_1 = (blockIdx.x * blockDim.x + threadIdx.x);
        bool t2 = l_i_1 < n0;
        if (t2) {
            unsigned int t3 = (l_i_1 < n0) ? load_b0_a(l_i_1) : 0u;
            unsigned int l_x_4 = t3;
            unsigned int t5 = (l_i_1 < n1) ? load_b1_b(l_i_1) : 0u;
            unsigned int l_y_6 = t5;
            unsigned int t7 = l_i_1 * 0x6u;
            unsigned int l_base_8 = t7;
            unsigned int t9 = l_base_8 + 0x0u;
            unsigned int t10 = min(l_x_4, l_y_6);
            if (t9 < n2) { store_b2_out(t9, t10); }
            unsigned int t11 = l_base_8 + 0x1u;
            unsigned int t12 = max(l_x_4, l_y_6);
            if (t11 < n2) { store_b2_out(t11, t12); }
            unsigned int t13 = l_base_8 + 0x2u;
            unsigned int t14 = (l_x_4 > l_y_6) ? l_x_4 - l_y_6 : l_y_6 - l_x_4;
            if (t13 < n2) { store_b2_out(t13, t14); }
            unsigned int t15 = l_base_8 + 0x3u;
            unsigned int t16 = (l_x_4 + l_y_6 < l_x_4) ? 0xffffffffu : l_x_4 + l_y_6;
            if (t15 < n2) { store_b2_out(t15, t16); }
            unsigned int t17 = l_base_8 + 0x4u;
            unsigned int t18 = (l_x_4 > l_y_6) ? l_x_4 - l_y_6 : 0u;
            if (t17 < n2) { store_b2_out(t17, t18); }
            unsigned int t19 = l_base_8 + 0x5u;
            unsigned int t20 = __umulhi(l_x_4, l_y_6);
            if (t19 < n2) { store_b2_out(t19, t20); }
        }
    }
}
