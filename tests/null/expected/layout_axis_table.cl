#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint)((hg_v)))
#define load_lp(hg_i) (lp[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void layout_axis_table(__global uint* restrict dst, __global const uint* restrict lp, uint n, uint d0, uint nd, uint base, uint dat) {
    uint j = ((uint)get_global_id(0));
    if (j >= n) return;
    uint off = base;
    uint rest = j;
    uint k = d0 + nd;
    while (k > d0) {
        k = k - 1u;
        uint at = k * 22u;
        uint ext = max(load_lp(at), 1u);
        uint x = rest % ext;
        rest = rest / ext;
        if (load_lp(at + 1u) == 0u) {
            uint nlev = min(load_lp(at + 2u), 9u);
            for (uint l = 0u; l < nlev; l++) {
                uint t = max(load_lp(at + 4u + 2u * l), 1u);
                uint q = x / t;
                x = x - q * t;
                off = off + q * load_lp(at + 5u + 2u * l);
            }
            off = off + x * load_lp(at + 3u);
        } else {
            uint nb = min(load_lp(at + 2u), 32u);
            uint d = load_lp(at + 3u);
            uint r = load_lp(at + 4u);
            for (uint b = 0u; b < nb; b++) {
                uint pos = b * r + d;
                if (pos < 32u) off = off + (((x >> b) & 1u) << pos);
            }
        }
    }
    store_dst(dat + j, off);
}
