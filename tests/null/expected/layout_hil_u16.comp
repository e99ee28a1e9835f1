#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_src_block { uint src[]; };
layout(push_constant) uniform hg_push_block { uint nx; uint ny; uint nz; uint wpe; uint woff; uint nsrc; uint hp; uint hr; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 1u) * 16u; atomicAnd(dst[hg_i >> 1u], ~(0xffffu << hg_s)); atomicOr(dst[hg_i >> 1u], (hg_v & 0xffffu) << hg_s); }
uint load_src(uint hg_i) { return ((src[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }

layout(local_size_x = 32, local_size_y = 8, local_size_z = 1) in;

void main() {
    uint nx = hg_pc.nx;
    uint ny = hg_pc.ny;
    uint nz = hg_pc.nz;
    uint wpe = hg_pc.wpe;
    uint woff = hg_pc.woff;
    uint nsrc = hg_pc.nsrc;
    uint hp = hg_pc.hp;
    uint hr = hg_pc.hr;
    uint x = gl_GlobalInvocationID.x;
    uint y = gl_GlobalInvocationID.y;
    uint z = gl_GlobalInvocationID.z;
    if (x >= nx || y >= ny || z >= nz) return;
    uint f = (z * ny + y) * nx + x;
    uint hm = (1u << hp) - 1u;
    uint hx = 0u;
    for (uint k = 0u; k < hr; k++) {
        hx = hx | (((f >> (hp * (hr - 1u - k))) & hm) << (k * hp));
    }
    uint x0 = hx & hm;
    uint hq = (1u << hp) >> 1u;
    while (hq > 1u) {
        uint p = hq - 1u;
        if ((x0 & hq) != 0u) x0 = x0 ^ p;
        for (uint k = 1u; k < hr; k++) {
            uint sh = k * hp;
            uint xi = (hx >> sh) & hm;
            if ((xi & hq) != 0u) {
                x0 = x0 ^ p;
            } else {
                uint t = (x0 ^ xi) & p;
                x0 = x0 ^ t;
                hx = hx ^ (t << sh);
            }
        }
        hq = hq >> 1u;
    }
    uint prev = x0;
    for (uint k = 1u; k < hr; k++) {
        uint sh = k * hp;
        uint xi = ((hx >> sh) & hm) ^ prev;
        hx = (hx & ~(hm << sh)) | (xi << sh);
        prev = xi;
    }
    uint tt = 0u;
    hq = (1u << hp) >> 1u;
    while (hq > 1u) {
        if ((prev & hq) != 0u) tt = tt ^ (hq - 1u);
        hq = hq >> 1u;
    }
    x0 = x0 ^ tt;
    uint so = 0u;
    for (uint b = 0u; b < hp; b++) {
        for (uint d = 0u; d < hr; d++) {
            uint xd = d == 0u ? x0 : (((hx >> (d * hp)) & hm) ^ tt);
            so = so | (((xd >> b) & 1u) << (b * hr + hr - 1u - d));
        }
    }
    uint s = woff + so * wpe;
    if (wpe == 1u) {
        // The common case without the word loop: pocl vectorises it across the work-group.
        store_dst(f, s < nsrc ? load_src(s) : 0u);
        return;
    }
    uint o = f * wpe;
    for (uint w = 0u; w < wpe; w++) {
        uint v = 0u;
        if (s + w < nsrc && s + w >= s) v = load_src(s + w);
        store_dst(o + w, v);
    }
}
