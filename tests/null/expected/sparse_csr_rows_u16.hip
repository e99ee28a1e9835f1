#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned short)((hg_v)))
#define load_vals(hg_i) ((unsigned int)(vals[(hg_i)]))
#define load_ci(hg_i) (ci[(hg_i)])
#define load_rp(hg_i) (rp[(hg_i)])
#define load_err(hg_i) (err[(hg_i)])
#define store_err(hg_i, hg_v) (err[(hg_i)] = (unsigned int)((hg_v)))

extern "C" __global__ void __launch_bounds__(256) sparse_csr_rows_u16(unsigned short* __restrict__ dst, const unsigned short* __restrict__ vals, const unsigned int* __restrict__ ci, const unsigned int* __restrict__ rp, unsigned int* __restrict__ err, unsigned int nrows, unsigned int ncols, unsigned int nnz, unsigned int wpe, unsigned int seg) {
    unsigned int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * seg;
    unsigned int r = (blockIdx.y * blockDim.y + threadIdx.y);
    if (c0 >= ncols || r >= nrows) return;
    unsigned int c1 = c0 + min(ncols - c0, seg);
    unsigned int o = r * ncols;
    // The store index is the loop counter itself: a unsigned int sum (o + c) may wrap as far as a
    // C compiler knows, which keeps it from turning the loop into a memset.
    unsigned int z1 = (o + c1) * wpe;
    for (unsigned int j = (o + c0) * wpe; j < z1; j++) store_dst(j, 0u);
    unsigned int a = load_rp(2u * r);
    unsigned int b = load_rp(2u * r + 2u);
    if ((load_rp(2u * r + 1u) | load_rp(2u * r + 3u)) != 0u || a > b || b > nnz
            || (r == 0u && a != 0u) || (r + 1u == nrows && b != nnz)) {
        store_err(0u, 1u);
        return;
    }
    unsigned int lo = a;
    unsigned int hi = b;
    unsigned int k = a;
    if (c0 != 0u) {
        lo = a;
        hi = b;
        while (lo < hi) {
            unsigned int md = lo + (hi - lo) / 2u;
            if (load_ci(2u * md + 1u) == 0u && load_ci(2u * md) < c0) {
                lo = md + 1u;
            } else {
                hi = md;
            }
        }
        k = lo;
    }
    unsigned int next = c0;
    for (; k < b; k++) {
        unsigned int v = load_ci(2u * k);
        if (load_ci(2u * k + 1u) != 0u || v < next) {
            store_err(0u, 1u);
            return;
        }
        if (v >= c1) break;
        next = v + 1u;
        if (wpe == 1u) {
            store_dst(o + v, load_vals(k));
        } else {
            for (unsigned int w = 0u; w < wpe; w++) store_dst((o + v) * wpe + w, load_vals(k * wpe + w));
        }
    }
    if (c1 != ncols) {
        lo = a;
        hi = b;
        while (lo < hi) {
            unsigned int md = lo + (hi - lo) / 2u;
            if (load_ci(2u * md + 1u) == 0u && load_ci(2u * md) < c1) {
                lo = md + 1u;
            } else {
                hi = md;
            }
        }
        if (k != lo) store_err(0u, 1u);
    } else if (k != b) {
        store_err(0u, 1u);
    }
}
