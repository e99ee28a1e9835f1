#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_kdst(hg_i, hg_v) (kdst[(hg_i)] = (float)((hg_v)))
#define store_vdst(hg_i, hg_v) (vdst[(hg_i)] = (float)((hg_v)))
#define load_kpool(hg_i) ((int)(kpool[(hg_i)]))
#define load_vpool(hg_i) ((int)(vpool[(hg_i)]))
#define load_kscales(hg_i) (kscales[(hg_i)])
#define load_vscales(hg_i) (vscales[(hg_i)])
#define load_slots(hg_i) (slots[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) kv_q8_gather_f32(float* __restrict__ kdst, float* __restrict__ vdst, const signed char* __restrict__ kpool, const signed char* __restrict__ vpool, const float* __restrict__ kscales, const float* __restrict__ vscales, const unsigned int* __restrict__ slots, unsigned int n, unsigned int lanes, unsigned int row, unsigned int num_slots) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    unsigned int t = i / lanes;
    if (t >= n / lanes) return;
    unsigned int lane = i - t * lanes;
    unsigned int slot = load_slots(t);
    if (slot == 0xFFFFFFFEu) return;  // SKIP_SLOT: another window's token
    unsigned int to = t * row;
    if (slot >= num_slots) {
        for (unsigned int w = lane; w < row; w += lanes) {
            store_kdst(to + w, 0.0f);
            store_vdst(to + w, 0.0f);
        }
        return;
    }
    unsigned int from = slot * row;
    {
        float s = load_kscales(slot);
        int z = 0;
        for (unsigned int w = lane; w < row; w += lanes) {
            int q = load_kpool(from + w);
            store_kdst(to + w, s * (float)((int)((unsigned int)(q) - (unsigned int)(z))));
        }
    }
    {
        float s = load_vscales(slot);
        int z = 0;
        for (unsigned int w = lane; w < row; w += lanes) {
            int q = load_vpool(from + w);
            store_vdst(to + w, s * (float)((int)((unsigned int)(q) - (unsigned int)(z))));
        }
    }
}
