#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_src_block { uint src[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_tx_block { uint tx[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_ty_block { uint ty[]; };
layout(std430, set = 0, binding = 4) readonly buffer hg_tz_block { uint tz[]; };
layout(push_constant) uniform hg_push_block { uint n; uint nx; uint ny; uint nz; uint bits; uint epu; uint upb; uint nunits; uint doff; uint nsrc; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 3u) * 8u; atomicAnd(dst[hg_i >> 2u], ~(0xffu << hg_s)); atomicOr(dst[hg_i >> 2u], (hg_v & 0xffu) << hg_s); }
uint load_src(uint hg_i) { return ((src[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
uint load_tx(uint hg_i) { return tx[hg_i]; }
uint load_ty(uint hg_i) { return ty[hg_i]; }
uint load_tz(uint hg_i) { return tz[hg_i]; }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint nx = hg_pc.nx;
    uint ny = hg_pc.ny;
    uint nz = hg_pc.nz;
    uint bits = hg_pc.bits;
    uint epu = hg_pc.epu;
    uint upb = hg_pc.upb;
    uint nunits = hg_pc.nunits;
    uint doff = hg_pc.doff;
    uint nsrc = hg_pc.nsrc;
    uint u = gl_GlobalInvocationID.x;
    if (u >= nunits) return;
    uint acc = 0u;
    for (uint e = 0u; e < epu; e++) {
        uint f = u * epu + e;
        if (f < n) {
            uint x = f % nx;
            uint yz = f / nx;
            uint y = yz % ny;
            uint z = yz / ny;
            uint so = load_tz(z) + load_ty(y) + load_tx(x);
            uint bit = so * bits;
            uint at = doff + (bit >> 3u);
            uint sh = bit & 7u;
            uint code = 0u;
            if (at < nsrc) code = load_src(at) >> sh;
            if (sh + bits > 8u && at + 1u < nsrc) code = code | (load_src(at + 1u) << (8u - sh));
            acc = acc | ((code & ((1u << bits) - 1u)) << (e * bits));
        }
    }
    for (uint b = 0u; b < upb; b++) {
        store_dst(u * upb + b, (acc >> (8u * b)) & 255u);
    }
}
