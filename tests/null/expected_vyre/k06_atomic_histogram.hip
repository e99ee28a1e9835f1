#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define load_b0_data(hg_i) (b0_data[(hg_i)])
#define load_b1_hist(hg_i) (b1_hist[(hg_i)])
#define store_b1_hist(hg_i, hg_v) (b1_hist[(hg_i)] = (unsigned int)((hg_v)))
#define atomic_add_b1_hist(hg_i, hg_v) (atomicAdd(&b1_hist[(hg_i)], (hg_v)))

extern "C" __global__ void __launch_bounds__(4) vyre_85f76cb1a71fdc3c(const unsigned int* __restrict__ b0_data, unsigned int* __restrict__ b1_hist, unsigned int n0, unsigned int n1) {
    {
        unsigned int l_i_1 = (blockIdx.x * blockDim.x + threadIdx.x);
        bool t2 = l_i_1 < n0;
        if (t2) {
            unsigned int t3 = (l_i_1 < n0) ? load_b0_data(l_i_1) : 0u;
            unsigned int t4 = (0x4u == 0u) ? 0u : t3 % ((0x4u == 0u) ? 1u : 0x4u);
            unsigned int t5 = 0u;
            if (t4 < n1) { t5 = atomic_add_b1_hist(t4, 0x1u); }
            unsigned int l_old_6 = t5;
        }
    }
}
