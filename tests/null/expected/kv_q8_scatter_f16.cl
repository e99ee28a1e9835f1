#define store_pool(hg_i, hg_v) (pool[(hg_i)] = (char)((hg_v)))
#define store_scales(hg_i, hg_v) (scales[(hg_i)] = (float)((hg_v)))
#define load_src(hg_i) (vload_half((hg_i), src))
#define load_slots(hg_i) (slots[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_q8_scatter_f16(__global char* restrict pool, __global float* restrict scales, __global const half* restrict src, __global const uint* restrict slots, uint n, uint lanes, uint row, uint num_slots) {
    uint i = ((uint)get_global_id(0));
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint slot = load_slots(t);

    if (slot >= num_slots || lane != 0u) return;
    uint from = t * row;
    uint to = slot * row;
    uint amax = 0u;
    for (uint w = 0u; w < row; w++) {
        uint a = as_uint(load_src(from + w)) & 0x7fffffffu;
        if (a < 0x7f800000u) amax = max(amax, a);
    }
    int e = -126;
    if (amax >= 0x00800000u) {
        e = (int)(amax >> 23u) - 133;
        e = max(e, -126);
        if (as_float(amax) * as_float((uint)(127 - e) << 23u) >= 127.5f) e = e + 1;
    }
    float inv = as_float((uint)(127 - e) << 23u);
    store_scales(slot, as_float((uint)(127 + e) << 23u));
    for (uint w = 0u; w < row; w++) {
        float v = load_src(from + w);
        uint a = as_uint(v) & 0x7fffffffu;
        int q = 0;
        if (a == 0x7f800000u) {
            q = (as_uint(v) >> 31u) != 0u ? -127 : 127;
        } else if (a >= 0x00800000u && a < 0x7f800000u) {
            q = min(max((int)(floor(v * inv + 0.5f)), -127), 127);
        }
        store_pool(to + w, q);
    }
}
