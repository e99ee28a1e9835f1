#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_kdst(hg_i, hg_v) (kdst[(hg_i)] = (unsigned int)((hg_v)))
#define store_vdst(hg_i, hg_v) (vdst[(hg_i)] = (unsigned int)((hg_v)))
#define load_kpool(hg_i) (kpool[(hg_i)])
#define load_vpool(hg_i) (vpool[(hg_i)])
#define load_slots(hg_i) (slots[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) kv_gather_u32(unsigned int* __restrict__ kdst, unsigned int* __restrict__ vdst, const unsigned int* __restrict__ kpool, const unsigned int* __restrict__ vpool, const unsigned int* __restrict__ slots, unsigned int n, unsigned int lanes, unsigned int row, unsigned int num_slots) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || lanes == 0u || lanes > 4096u || row > 0xFFFFEFFFu) return;
    unsigned int t = i / lanes;
    if (t >= n / lanes) return;
    unsigned int lane = i - t * lanes;
    unsigned int slot = load_slots(t);
    if (slot == 0xFFFFFFFEu) return;  // SKIP_SLOT: another window's token
    // Slots past the pool (the padding sentinel) read as zero rows.
    if (slot >= num_slots) {
        for (unsigned int w = lane; w < row; w += lanes) {
            store_kdst(t * row + w, 0u);
            store_vdst(t * row + w, 0u);
        }
        return;
    }
    if (lanes == 1u && row <= 0x7fffffffu / (max(max(num_slots, n), 1u))) {
        int len = (int)(row);
        int pos = (int)(slot * row);
        int at = (int)(t * row);
        for (int w = 0; w < len; w++) store_kdst(at + w, load_kpool(pos + w));
        for (int w = 0; w < len; w++) store_vdst(at + w, load_vpool(pos + w));
        return;
    }
    unsigned int from = slot * row;
    unsigned int to = t * row;
    for (unsigned int w = lane; w < row; w += lanes) {
        store_kdst(to + w, load_kpool(from + w));
        store_vdst(to + w, load_vpool(from + w));
    }
}
