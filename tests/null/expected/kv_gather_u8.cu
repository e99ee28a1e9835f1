#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned char)((hg_v)))
#define load_pool(hg_i) ((unsigned int)(pool[(hg_i)]))
#define load_slots(hg_i) (slots[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) kv_gather_u8(unsigned char* __restrict__ dst, const unsigned char* __restrict__ pool, const unsigned int* __restrict__ slots, unsigned int n, unsigned int lanes, unsigned int row, unsigned int num_slots) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || lanes == 0u || lanes > 4096u || row > 0xFFFFEFFFu) return;
    unsigned int t = i / lanes;
    if (t >= n / lanes) return;
    unsigned int lane = i - t * lanes;

    unsigned int slot = load_slots(t);
    // Slots past the pool (the padding sentinel) read as zero rows.
    if (slot >= num_slots) {
        for (unsigned int w = lane; w < row; w += lanes) {
            store_dst(t * row + w, 0u);
        }
        return;
    }
    unsigned int from = slot * row;
    unsigned int to = t * row;
    if (lanes == 1u) {
        // Unit stride (the host's one item per row): a plain row copy.
        for (unsigned int w = 0u; w < row; w++) {
            store_dst(to + w, load_pool(from + w));
        }
        return;
    }
    for (unsigned int w = lane; w < row; w += lanes) {
        store_dst(to + w, load_pool(from + w));
    }
}
