#define load_pool(hg_i) (pool[(hg_i)])
#define store_pool(hg_i, hg_v) (pool[(hg_i)] = (unsigned int)((hg_v)))
#define load_pairs(hg_i) (pairs[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) kv_copy_pages_u32(unsigned int* __restrict__ pool, const unsigned int* __restrict__ pairs, unsigned int n, unsigned int lanes, unsigned int page_words, unsigned int num_pages) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || lanes == 0u || lanes > 4096u || page_words > 0xFFFFEFFFu) return;
    unsigned int t = i / lanes;
    if (t >= n / lanes) return;
    unsigned int lane = i - t * lanes;

    unsigned int src = load_pairs(2u * t);
    unsigned int dst = load_pairs(2u * t + 1u);
    if (src >= num_pages || dst >= num_pages) return;
    for (unsigned int w = lane; w < page_words; w += lanes) {
        store_pool(dst * page_words + w, load_pool(src * page_words + w));
    }
}
