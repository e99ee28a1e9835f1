#define store_kpool(hg_i, hg_v) (kpool[(hg_i)] = (uchar)((hg_v)))
#define store_vpool(hg_i, hg_v) (vpool[(hg_i)] = (uchar)((hg_v)))
#define load_ksrc(hg_i) (vload_half((hg_i), ksrc))
#define load_vsrc(hg_i) (vload_half((hg_i), vsrc))
#define load_slots(hg_i) (slots[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_f8_scatter_f16(__global uchar* restrict kpool, __global uchar* restrict vpool, __global const half* restrict ksrc, __global const half* restrict vsrc, __global const uint* restrict slots, uint n, uint lanes, uint row, uint num_slots) {
    uint i = ((uint)get_global_id(0));
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint slot = load_slots(t);
    if (slot >= num_slots) return;
    uint from = t * row;
    uint to = slot * row;
    for (uint w = lane; w < row; w += lanes) {
        uint b = as_uint(load_ksrc(from + w));
        uint a = b & 0x7fffffffu;
        uint code = 0u;
        if (a > 0x7f800000u) {
            code = 0x7fu;
        } else if (a >= 0x43e00000u) {
            code = 0x7eu;
        } else if (a >= 0x3c800000u) {
            code = ((a + 0x7ffffu + ((a >> 20u) & 1u)) >> 20u) - 960u;
        } else if ((a >> 23u) >= 117u) {
            // Subnormal e4m3: round m * 2^(e - 141) to nearest even (as hg_f32_to_f16 does).
            uint m = (a & 0x7fffffu) | 0x800000u;
            uint s = 141u - (a >> 23u);
            code = (m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s;
        }
        store_kpool(to + w, ((b >> 24u) & 0x80u) | code);
    }
    for (uint w = lane; w < row; w += lanes) {
        uint b = as_uint(load_vsrc(from + w));
        uint a = b & 0x7fffffffu;
        uint code = 0u;
        if (a > 0x7f800000u) {
            code = 0x7fu;
        } else if (a >= 0x43e00000u) {
            code = 0x7eu;
        } else if (a >= 0x3c800000u) {
            code = ((a + 0x7ffffu + ((a >> 20u) & 1u)) >> 20u) - 960u;
        } else if ((a >> 23u) >= 117u) {
            // Subnormal e4m3: round m * 2^(e - 141) to nearest even (as hg_f32_to_f16 does).
            uint m = (a & 0x7fffffu) | 0x800000u;
            uint s = 141u - (a >> 23u);
            code = (m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s;
        }
        store_vpool(to + w, ((b >> 24u) & 0x80u) | code);
    }
}
