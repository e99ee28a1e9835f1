#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define load_b0_a(hg_i) (b0_a[(hg_i)])
#define load_b1_out(hg_i) (b1_out[(hg_i)])
#define store_b1_out(hg_i, hg_v) (b1_out[(hg_i)] = (unsigned int)((hg_v)))

extern "C" __global__ void __launch_bounds__(4) vyre_3776adb47dc05210(const unsigned int* __restrict__ b0_a, unsigned int* __restrict__ b1_out, unsigned int n0, unsigned int n1) {
    {
        unsigned int l_i_1 = (blockIdx.x * blockDim.x + threadIdx.x);
        bool t2 = l_i_1 < n0;
        if (t2) {
            unsigned int t3 = (l_i_1 < n0) ? load_b0_a(l_i_1) : 0u;
            unsigned int l_x_4 = t3;
            unsigned int t5 = l_i_1 * 0x4u;
            unsigned int l_base_6 = t5;
            unsigned int t7 = l_x_4 - ((l_x_4 >> 1u) & 0x55555555u);
            unsigned int t8 = (t7 & 0x33333333u) + ((t7 >> 2u) & 0x33333333u);
            unsigned int t9 = (t8 + (t8 >> 4u)) & 0x0f0f0f0fu;
            unsigned int t10 = (t9 * 0x01010101u) >> 24u;
            if (l_base_6 < n1) { store_b1_out(l_base_6, t10); }
            unsigned int t11 = l_base_6 + 0x1u;
            unsigned int t12 = (l_x_4 == 0u) ? 32u : 0u;
            unsigned int t13 = l_x_4;
            if ((t13 != 0u) && (t13 <= 0x0000ffffu)) { t12 = t12 + 16u; t13 = t13 << 16u; }
            if ((t13 != 0u) && (t13 <= 0x00ffffffu)) { t12 = t12 + 8u; t13 = t13 << 8u; }
            if ((t13 != 0u) && (t13 <= 0x0fffffffu)) { t12 = t12 + 4u; t13 = t13 << 4u; }
            if ((t13 != 0u) && (t13 <= 0x3fffffffu)) { t12 = t12 + 2u; t13 = t13 << 2u; }
            if ((t13 != 0u) && (t13 <= 0x7fffffffu)) { t12 = t12 + 1u; t13 = t13 << 1u; }
            if (t11 < n1) { store_b1_out(t11, t12); }
            unsigned int t14 = l_base_6 + 0x2u;
            unsigned int t15 = (l_x_4 & (0u - l_x_4)) - 1u;
            unsigned int t16 = t15 - ((t15 >> 1u) & 0x55555555u);
            unsigned int t17 = (t16 & 0x33333333u) + ((t16 >> 2u) & 0x33333333u);
            unsigned int t18 = (t17 + (t17 >> 4u)) & 0x0f0f0f0fu;
            unsigned int t19 = (t18 * 0x01010101u) >> 24u;
            if (t14 < n1) { store_b1_out(t14, t19); }
            unsigned int t20 = l_base_6 + 0x3u;
            unsigned int t21 = l_x_4;
            t21 = ((t21 >> 1u) & 0x55555555u) | ((t21 & 0x55555555u) << 1u);
            t21 = ((t21 >> 2u) & 0x33333333u) | ((t21 & 0x33333333u) << 2u);
            t21 = ((t21 >> 4u) & 0x0f0f0f0fu) | ((t21 & 0x0f0f0f0fu) << 4u);
            t21 = ((t21 >> 8u) & 0x00ff00ffu) | ((t21 & 0x00ff00ffu) << 8u);
            unsigned int t22 = (t21 >> 16u) | (t21 << 16u);
            if (t20 < n1) { store_b1_out(t20, t22); }
        }
    }
}
