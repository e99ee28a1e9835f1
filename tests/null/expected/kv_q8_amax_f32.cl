#define store_kpart(hg_i, hg_v) (kpart[(hg_i)] = (uint)((hg_v)))
#define store_vpart(hg_i, hg_v) (vpart[(hg_i)] = (uint)((hg_v)))
#define load_ksrc(hg_i) (ksrc[(hg_i)])
#define load_vsrc(hg_i) (vsrc[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_q8_amax_f32(__global uint* restrict kpart, __global uint* restrict vpart, __global const float* restrict ksrc, __global const float* restrict vsrc, uint n, uint lanes, uint row, uint num_slots) {
    uint i = ((uint)get_global_id(0));
    if (i >= n || lanes == 0u || lanes > 4096u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint from = t * row;
    {
        uint amax = 0u;
        for (uint w = lane; w < row; w += lanes) {
            uint a = as_uint(load_ksrc(from + w)) & 0x7fffffffu;
            if (a < 0x7f800000u) amax = max(amax, a);
        }
        store_kpart(i, amax);
    }
    {
        uint amax = 0u;
        for (uint w = lane; w < row; w += lanes) {
            uint a = as_uint(load_vsrc(from + w)) & 0x7fffffffu;
            if (a < 0x7f800000u) amax = max(amax, a);
        }
        store_vpart(i, amax);
    }
}
