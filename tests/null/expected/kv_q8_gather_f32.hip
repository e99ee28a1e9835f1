#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (float)((hg_v)))
#define load_pool(hg_i) ((int)(pool[(hg_i)]))
#define load_scales(hg_i) (scales[(hg_i)])
#define load_slots(hg_i) (slots[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) kv_q8_gather_f32(float* __restrict__ dst, const signed char* __restrict__ pool, const float* __restrict__ scales, const unsigned int* __restrict__ slots, unsigned int n, unsigned int lanes, unsigned int row, unsigned int num_slots) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    unsigned int t = i / lanes;
    if (t >= n / lanes) return;
    unsigned int lane = i - t * lanes;
    unsigned int slot = load_slots(t);

    unsigned int to = t * row;
    if (slot >= num_slots) {
        for (unsigned int w = lane; w < row; w += lanes) store_dst(to + w, 0.0f);
        return;
    }
    float scale = load_scales(slot);
    unsigned int from = slot * row;
    for (unsigned int w = lane; w < row; w += lanes) {
        store_dst(to + w, scale * (float)(load_pool(from + w)));
    }
}
