#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define load_kpool(hg_i) ((unsigned int)(kpool[(hg_i)]))
#define store_kpool(hg_i, hg_v) (kpool[(hg_i)] = (unsigned char)((hg_v)))
#define load_vpool(hg_i) ((unsigned int)(vpool[(hg_i)]))
#define store_vpool(hg_i, hg_v) (vpool[(hg_i)] = (unsigned char)((hg_v)))
#define load_ksrc(hg_i) ((unsigned int)(ksrc[(hg_i)]))
#define load_vsrc(hg_i) ((unsigned int)(vsrc[(hg_i)]))
#define load_slots(hg_i) (slots[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) kv_scatter_u8(unsigned char* __restrict__ kpool, unsigned char* __restrict__ vpool, const unsigned char* __restrict__ ksrc, const unsigned char* __restrict__ vsrc, const unsigned int* __restrict__ slots, unsigned int n, unsigned int lanes, unsigned int row, unsigned int num_slots) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || lanes == 0u || lanes > 4096u || row > 0xFFFFEFFFu) return;
    unsigned int t = i / lanes;
    if (t >= n / lanes) return;
    unsigned int lane = i - t * lanes;
    unsigned int slot = load_slots(t);
    // The host validates every slot; this guard keeps a bad one from writing anywhere.
    if (slot >= num_slots) return;
    if (lanes == 1u && row <= 0x7fffffffu / (max(max(num_slots, n), 1u))) {
        int len = (int)(row);
        int pos = (int)(t * row);
        int at = (int)(slot * row);
        for (int w = 0; w < len; w++) store_kpool(at + w, load_ksrc(pos + w));
        for (int w = 0; w < len; w++) store_vpool(at + w, load_vsrc(pos + w));
        return;
    }
    unsigned int from = t * row;
    unsigned int to = slot * row;
    for (unsigned int w = lane; w < row; w += lanes) {
        store_kpool(to + w, load_ksrc(from + w));
        store_vpool(to + w, load_vsrc(from + w));
    }
}
