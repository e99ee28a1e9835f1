#define store_kdst(hg_i, hg_v) vstore_half_rte((hg_v), (hg_i), kdst)
#define store_vdst(hg_i, hg_v) vstore_half_rte((hg_v), (hg_i), vdst)
#define load_kpool(hg_i) ((int)(kpool[(hg_i)]))
#define load_vpool(hg_i) ((int)(vpool[(hg_i)]))
#define load_kscales(hg_i) (kscales[(hg_i)])
#define load_vscales(hg_i) (vscales[(hg_i)])
#define load_slots(hg_i) (slots[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_q8_gather_f16(__global half* restrict kdst, __global half* restrict vdst, __global const char* restrict kpool, __global const char* restrict vpool, __global const float* restrict kscales, __global const float* restrict vscales, __global const uint* restrict slots, uint n, uint lanes, uint row, uint num_slots) {
    uint i = ((uint)get_global_id(0));
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint slot = load_slots(t);
    if (slot == 0xFFFFFFFEu) return;  // SKIP_SLOT: another window's token
    uint to = t * row;
    if (slot >= num_slots) {
        for (uint w = lane; w < row; w += lanes) {
            store_kdst(to + w, 0.0f);
            store_vdst(to + w, 0.0f);
        }
        return;
    }
    uint from = slot * row;
    {
        float s = load_kscales(slot);
        int z = 0;
        for (uint w = lane; w < row; w += lanes) {
            int q = load_kpool(from + w);
            store_kdst(to + w, s * (float)((int)((uint)(q) - (uint)(z))));
        }
    }
    {
        float s = load_vscales(slot);
        int z = 0;
        for (uint w = lane; w < row; w += lanes) {
            int q = load_vpool(from + w);
            store_vdst(to + w, s * (float)((int)((uint)(q) - (uint)(z))));
        }
    }
}
