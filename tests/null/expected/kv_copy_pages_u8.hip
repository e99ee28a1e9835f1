#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define load_kpool(hg_i) ((unsigned int)(kpool[(hg_i)]))
#define store_kpool(hg_i, hg_v) (kpool[(hg_i)] = (unsigned char)((hg_v)))
#define load_vpool(hg_i) ((unsigned int)(vpool[(hg_i)]))
#define store_vpool(hg_i, hg_v) (vpool[(hg_i)] = (unsigned char)((hg_v)))
#define load_kfrom(hg_i) ((unsigned int)(kfrom[(hg_i)]))
#define load_vfrom(hg_i) ((unsigned int)(vfrom[(hg_i)]))
#define load_pairs(hg_i) (pairs[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) kv_copy_pages_u8(unsigned char* __restrict__ kpool, unsigned char* __restrict__ vpool, const unsigned char* __restrict__ kfrom, const unsigned char* __restrict__ vfrom, const unsigned int* __restrict__ pairs, unsigned int n, unsigned int lanes, unsigned int page_words, unsigned int num_pages) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || lanes == 0u || lanes > 4096u || page_words > 0xFFFFEFFFu) return;
    unsigned int t = i / lanes;
    if (t >= n / lanes) return;
    unsigned int lane = i - t * lanes;
    unsigned int src = load_pairs(2u * t);
    unsigned int dst = load_pairs(2u * t + 1u);
    if (src >= num_pages || dst >= num_pages) return;
    if (lanes == 1u && page_words <= 0x7fffffffu / num_pages) {
        int len = (int)(page_words);
        int pos = (int)(src * page_words);
        int at = (int)(dst * page_words);
        for (int w = 0; w < len; w++) store_kpool(at + w, load_kfrom(pos + w));
        for (int w = 0; w < len; w++) store_vpool(at + w, load_vfrom(pos + w));
        return;
    }
    unsigned int from = src * page_words;
    unsigned int to = dst * page_words;
    for (unsigned int w = lane; w < page_words; w += lanes) {
        store_kpool(to + w, load_kfrom(from + w));
        store_vpool(to + w, load_vfrom(from + w));
    }
}
