#define load_kpool(hg_i) ((uint)(kpool[(hg_i)]))
#define store_kpool(hg_i, hg_v) (kpool[(hg_i)] = (ushort)((hg_v)))
#define load_vpool(hg_i) ((uint)(vpool[(hg_i)]))
#define store_vpool(hg_i, hg_v) (vpool[(hg_i)] = (ushort)((hg_v)))
#define load_ksrc(hg_i) ((uint)(ksrc[(hg_i)]))
#define load_vsrc(hg_i) ((uint)(vsrc[(hg_i)]))
#define load_slots(hg_i) (slots[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_scatter_u16(__global ushort* restrict kpool, __global ushort* restrict vpool, __global const ushort* restrict ksrc, __global const ushort* restrict vsrc, __global const uint* restrict slots, uint n, uint lanes, uint row, uint num_slots) {
    uint i = ((uint)get_global_id(0));
    if (i >= n || lanes == 0u || lanes > 4096u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint slot = load_slots(t);
    // The host validates every slot; this guard keeps a bad one from writing anywhere.
    if (slot >= num_slots) return;
    if (lanes == 1u && row <= 0x7fffffffu / (max(max(num_slots, n), 1u))) {
        int len = (int)(row);
        int pos = (int)(t * row);
        int at = (int)(slot * row);
        for (int w = 0; w < len; w++) store_kpool(at + w, load_ksrc(pos + w));
        for (int w = 0; w < len; w++) store_vpool(at + w, load_vsrc(pos + w));
        return;
    }
    uint from = t * row;
    uint to = slot * row;
    for (uint w = lane; w < row; w += lanes) {
        store_kpool(to + w, load_ksrc(from + w));
        store_vpool(to + w, load_vsrc(from + w));
    }
}
