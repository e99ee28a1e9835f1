#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_lp_block { uint lp[]; };
layout(push_constant) uniform hg_push_block { uint n; uint d0; uint nd; uint base; uint dat; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { dst[hg_i] = hg_v; }
uint load_lp(uint hg_i) { return lp[hg_i]; }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint d0 = hg_pc.d0;
    uint nd = hg_pc.nd;
    uint base = hg_pc.base;
    uint dat = hg_pc.dat;
    uint j = gl_GlobalInvocationID.x;
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
