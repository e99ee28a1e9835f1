#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (ushort)((hg_v)))
#define load_pool(hg_i) ((uint)(pool[(hg_i)]))
#define load_slots(hg_i) (slots[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_gather_u16(__global ushort* restrict dst, __global const ushort* restrict pool, __global const uint* restrict slots, uint n, uint lanes, uint row, uint num_slots) {
    uint i = ((uint)get_global_id(0));
    if (i >= n || lanes == 0u || lanes > 4096u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;

    uint slot = load_slots(t);
    // Slots past the pool (the padding sentinel) read as zero rows.
    if (slot >= num_slots) {
        for (uint w = lane; w < row; w += lanes) {
            store_dst(t * row + w, 0u);
        }
        return;
    }
    uint from = slot * row;
    uint to = t * row;
    if (lanes == 1u) {
        // Unit stride (the host's one item per row): a plain row copy.
        for (uint w = 0u; w < row; w++) {
            store_dst(to + w, load_pool(from + w));
        }
        return;
    }
    for (uint w = lane; w < row; w += lanes) {
        store_dst(to + w, load_pool(from + w));
    }
}
