#define store_kdst(hg_i, hg_v) (kdst[(hg_i)] = (float)((hg_v)))
#define store_vdst(hg_i, hg_v) (vdst[(hg_i)] = (float)((hg_v)))
#define load_kpool(hg_i) ((uint)(kpool[(hg_i)]))
#define load_vpool(hg_i) ((uint)(vpool[(hg_i)]))
#define load_slots(hg_i) (slots[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_f8_gather_f32(__global float* restrict kdst, __global float* restrict vdst, __global const uchar* restrict kpool, __global const uchar* restrict vpool, __global const uint* restrict slots, uint n, uint lanes, uint row, uint num_slots) {
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
    for (uint w = lane; w < row; w += lanes) {
        uint c = load_kpool(from + w);
        uint sign = (c & 0x80u) << 24u;
        uint e = (c >> 3u) & 15u;
        uint m = c & 7u;
        float v = as_float(sign | ((e + 120u) << 23u) | (m << 20u));
        if (e == 15u && m == 7u) v = as_float(sign | 0x7fc00000u);
        if (e == 0u) v = as_float(sign | as_uint((float)(m) * 0.001953125f));
        store_kdst(to + w, v);
    }
    for (uint w = lane; w < row; w += lanes) {
        uint c = load_vpool(from + w);
        uint sign = (c & 0x80u) << 24u;
        uint e = (c >> 3u) & 15u;
        uint m = c & 7u;
        float v = as_float(sign | ((e + 120u) << 23u) | (m << 20u));
        if (e == 15u && m == 7u) v = as_float(sign | 0x7fc00000u);
        if (e == 0u) v = as_float(sign | as_uint((float)(m) * 0.001953125f));
        store_vdst(to + w, v);
    }
}
