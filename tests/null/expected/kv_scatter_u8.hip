#define load_pool(hg_i) ((unsigned int)(pool[(hg_i)]))
#define store_pool(hg_i, hg_v) (pool[(hg_i)] = (unsigned char)((hg_v)))
#define load_src(hg_i) ((unsigned int)(src[(hg_i)]))
#define load_slots(hg_i) (slots[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) kv_scatter_u8(unsigned char* __restrict__ pool, const unsigned char* __restrict__ src, const unsigned int* __restrict__ slots, unsigned int n, unsigned int lanes, unsigned int row, unsigned int num_slots) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || lanes == 0u || lanes > 4096u || row > 0xFFFFEFFFu) return;
    unsigned int t = i / lanes;
    if (t >= n / lanes) return;
    unsigned int lane = i - t * lanes;

    unsigned int slot = load_slots(t);
    // The host validates every slot; this guard keeps a bad one from writing anywhere.
    if (slot >= num_slots) return;
    unsigned int from = t * row;
    unsigned int to = slot * row;
    if (lanes == 1u) {
        for (unsigned int w = 0u; w < row; w++) {
            store_pool(to + w, load_src(from + w));
        }
        return;
    }
    for (unsigned int w = lane; w < row; w += lanes) {
        store_pool(to + w, load_src(from + w));
    }
}
