#define load_pool(hg_i) ((uint)(pool[(hg_i)]))
#define store_pool(hg_i, hg_v) (pool[(hg_i)] = (ushort)((hg_v)))
#define load_src(hg_i) ((uint)(src[(hg_i)]))
#define load_slots(hg_i) (slots[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_scatter_u16(__global ushort* restrict pool, __global const ushort* restrict src, __global const uint* restrict slots, uint n, uint lanes, uint row, uint num_slots) {
    uint i = ((uint)get_global_id(0));
    if (i >= n || lanes == 0u || lanes > 4096u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;

    uint slot = load_slots(t);
    // The host validates every slot; this guard keeps a bad one from writing anywhere.
    if (slot >= num_slots) return;
    uint from = t * row;
    uint to = slot * row;
    if (lanes == 1u) {
        for (uint w = 0u; w < row; w++) {
            store_pool(to + w, load_src(from + w));
        }
        return;
    }
    for (uint w = lane; w < row; w += lanes) {
        store_pool(to + w, load_src(from + w));
    }
}
