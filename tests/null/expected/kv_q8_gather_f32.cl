#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (float)((hg_v)))
#define load_pool(hg_i) ((int)(pool[(hg_i)]))
#define load_scales(hg_i) (scales[(hg_i)])
#define load_slots(hg_i) (slots[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_q8_gather_f32(__global float* restrict dst, __global const char* restrict pool, __global const float* restrict scales, __global const uint* restrict slots, uint n, uint lanes, uint row, uint num_slots) {
    uint i = ((uint)get_global_id(0));
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint slot = load_slots(t);

    uint to = t * row;
    if (slot >= num_slots) {
        for (uint w = lane; w < row; w += lanes) store_dst(to + w, 0.0f);
        return;
    }
    float scale = load_scales(slot);
    uint from = slot * row;
    for (uint w = lane; w < row; w += lanes) {
        store_dst(to + w, scale * (float)(load_pool(from + w)));
    }
}
