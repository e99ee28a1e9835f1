#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_err(hg_i, hg_v) (err[(hg_i)] = (unsigned int)((hg_v)))
#define load_bt(hg_i) (bt[(hg_i)])
#define load_sp(hg_i) (sp[(hg_i)])

extern "C" __global__ void __launch_bounds__(256) layout_check_paged(unsigned int* __restrict__ err, const unsigned int* __restrict__ bt, const unsigned int* __restrict__ sp, unsigned int nbt, unsigned int nseq, unsigned int npages, unsigned int iw) {
    unsigned int j = (blockIdx.x * blockDim.x + threadIdx.x);
    if (j < nbt) {
        if (load_bt(j * iw) >= npages) store_err(0u, 1u);
        if (iw == 2u && load_bt(j * 2u + 1u) != 0u) store_err(0u, 1u);
    }
    if (j <= nseq) {
        unsigned int v = load_sp(j * iw);
        if (iw == 2u && load_sp(j * 2u + 1u) != 0u) store_err(0u, 1u);
        if (j == 0u && v != 0u) store_err(0u, 1u);
        if (j == nseq && v != nbt) store_err(0u, 1u);
        if (j > 0u && v < load_sp((j - 1u) * iw)) store_err(0u, 1u);
    }
}
