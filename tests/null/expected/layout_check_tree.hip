#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_err(hg_i, hg_v) (err[(hg_i)] = (unsigned int)((hg_v)))
#define load_ix(hg_i) (ix[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) layout_check_tree(unsigned int* __restrict__ err, const unsigned int* __restrict__ ix, unsigned int nodes, unsigned int pos_off, unsigned int crd_off, unsigned int ncrd, unsigned int extent, unsigned int nix, unsigned int span) {
    unsigned int q = (blockIdx.x * blockDim.x + threadIdx.x);
    if (q >= nodes) return;
    unsigned int pa = pos_off + 2u * q;
    if (pa + 2u >= nix) { store_err(0u, 1u); return; }
    unsigned int a = load_ix(pa);
    unsigned int b = load_ix(pa + 2u);
    if (q == 0u && a != 0u) store_err(0u, 1u);
    if (q + 1u == nodes && b != ncrd) store_err(0u, 1u);
    if (a > b || b > ncrd) { store_err(0u, 1u); return; }
    unsigned int sp = max(span, 1u);
    if ((blockIdx.y * blockDim.y + threadIdx.y) > (b - a) / sp) return;
    unsigned int k0 = a + (blockIdx.y * blockDim.y + threadIdx.y) * sp;
    unsigned int k1 = k0 + min(b - k0, sp);
    unsigned int prev = 0u;
    if (k0 > a && crd_off + 2u * k0 - 2u < nix) prev = load_ix(crd_off + 2u * k0 - 2u);
    for (unsigned int k = k0; k < k1; k++) {
        unsigned int c = crd_off + 2u * k;
        unsigned int v = c < nix ? load_ix(c) : extent;
        if (v >= extent || (k > a && v <= prev)) { store_err(0u, 1u); return; }
        prev = v;
    }
}
