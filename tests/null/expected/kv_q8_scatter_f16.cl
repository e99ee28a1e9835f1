#define store_kpool(hg_i, hg_v) (kpool[(hg_i)] = (char)((hg_v)))
#define store_vpool(hg_i, hg_v) (vpool[(hg_i)] = (char)((hg_v)))
#define store_kscales(hg_i, hg_v) (kscales[(hg_i)] = (float)((hg_v)))
#define store_vscales(hg_i, hg_v) (vscales[(hg_i)] = (float)((hg_v)))
#define load_kpart(hg_i) (kpart[(hg_i)])
#define load_vpart(hg_i) (vpart[(hg_i)])
#define load_ksrc(hg_i) (vload_half((hg_i), ksrc))
#define load_vsrc(hg_i) (vload_half((hg_i), vsrc))
#define load_slots(hg_i) (slots[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_q8_scatter_f16(__global char* restrict kpool, __global char* restrict vpool, __global float* restrict kscales, __global float* restrict vscales, __global const uint* restrict kpart, __global const uint* restrict vpart, __global const half* restrict ksrc, __global const half* restrict vsrc, __global const uint* restrict slots, uint n, uint lanes, uint row, uint num_slots) {
    uint i = ((uint)get_global_id(0));
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint slot = load_slots(t);
    if (slot >= num_slots) return;
    uint from = t * row;
    uint to = slot * row;
    {
        uint amax = 0u;
        if (lanes == 1u) {
            for (uint w = 0u; w < row; w += 1u) {
                uint a = as_uint(load_ksrc(from + w)) & 0x7fffffffu;
                if (a < 0x7f800000u) amax = max(amax, a);
            }
        } else {
            for (uint j = 0u; j < lanes; j++) amax = max(amax, load_kpart(t * lanes + j));
        }
        int e = -126;
        if (amax >= 0x00800000u) {
            e = (int)(amax >> 23u) - 133;
            e = max(e, -126);
            if (as_float(amax) * as_float((uint)(127 - e) << 23u) >= 127.5f) e = e + 1;
        }
        float inv = as_float((uint)(127 - e) << 23u);
        if (lane == 0u) store_kscales(slot, as_float((uint)(127 + e) << 23u));
        if (lanes == 1u) {
            for (uint w = 0u; w < row; w++) {
                float v = load_ksrc(from + w);
                uint a = as_uint(v) & 0x7fffffffu;
                int q = 0;
                if (a == 0x7f800000u) {
                    q = (as_uint(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = min(max((int)(floor(v * inv + 0.5f)), -127), 127);
                }
                store_kpool(to + w, q);
            }
        } else {
            for (uint w = lane; w < row; w += lanes) {
                float v = load_ksrc(from + w);
                uint a = as_uint(v) & 0x7fffffffu;
                int q = 0;
                if (a == 0x7f800000u) {
                    q = (as_uint(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = min(max((int)(floor(v * inv + 0.5f)), -127), 127);
                }
                store_kpool(to + w, q);
            }
        }
    }
    {
        uint amax = 0u;
        if (lanes == 1u) {
            for (uint w = 0u; w < row; w += 1u) {
                uint a = as_uint(load_vsrc(from + w)) & 0x7fffffffu;
                if (a < 0x7f800000u) amax = max(amax, a);
            }
        } else {
            for (uint j = 0u; j < lanes; j++) amax = max(amax, load_vpart(t * lanes + j));
        }
        int e = -126;
        if (amax >= 0x00800000u) {
            e = (int)(amax >> 23u) - 133;
            e = max(e, -126);
            if (as_float(amax) * as_float((uint)(127 - e) << 23u) >= 127.5f) e = e + 1;
        }
        float inv = as_float((uint)(127 - e) << 23u);
        if (lane == 0u) store_vscales(slot, as_float((uint)(127 + e) << 23u));
        if (lanes == 1u) {
            for (uint w = 0u; w < row; w++) {
                float v = load_vsrc(from + w);
                uint a = as_uint(v) & 0x7fffffffu;
                int q = 0;
                if (a == 0x7f800000u) {
                    q = (as_uint(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = min(max((int)(floor(v * inv + 0.5f)), -127), 127);
                }
                store_vpool(to + w, q);
            }
        } else {
            for (uint w = lane; w < row; w += lanes) {
                float v = load_vsrc(from + w);
                uint a = as_uint(v) & 0x7fffffffu;
                int q = 0;
                if (a == 0x7f800000u) {
                    q = (as_uint(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = min(max((int)(floor(v * inv + 0.5f)), -127), 127);
                }
                store_vpool(to + w, q);
            }
        }
    }
}
