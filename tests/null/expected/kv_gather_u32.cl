#define store_kdst(hg_i, hg_v) (kdst[(hg_i)] = (uint)((hg_v)))
#define store_vdst(hg_i, hg_v) (vdst[(hg_i)] = (uint)((hg_v)))
#define load_kpool(hg_i) (kpool[(hg_i)])
#define load_vpool(hg_i) (vpool[(hg_i)])
#define load_slots(hg_i) (slots[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_gather_u32(__global uint* restrict kdst, __global uint* restrict vdst, __global const uint* restrict kpool, __global const uint* restrict vpool, __global const uint* restrict slots, uint n, uint lanes, uint row, uint num_slots) {
    uint i = ((uint)get_global_id(0));
    if (i >= n || lanes == 0u || lanes > 4096u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint slot = load_slots(t);
    if (slot == 0xFFFFFFFEu) return;  // SKIP_SLOT: another window's token
    // Slots past the pool (the padding sentinel) read as zero rows.
    if (slot >= num_slots) {
        for (uint w = lane; w < row; w += lanes) {
            store_kdst(t * row + w, 0u);
            store_vdst(t * row + w, 0u);
        }
        return;
    }
    if (lanes == 1u && row <= 0x7fffffffu / (max(max(num_slots, n), 1u))) {
        int len = (int)(row);
        int pos = (int)(slot * row);
        int at = (int)(t * row);
        for (int w = 0; w < len; w++) store_kdst(at + w, load_kpool(pos + w));
        for (int w = 0; w < len; w++) store_vdst(at + w, load_vpool(pos + w));
        return;
    }
    uint from = slot * row;
    uint to = t * row;
    for (uint w = lane; w < row; w += lanes) {
        store_kdst(to + w, load_kpool(from + w));
        store_vdst(to + w, load_vpool(from + w));
    }
}
