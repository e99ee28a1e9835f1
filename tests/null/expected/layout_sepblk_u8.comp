#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_src_block { uint src[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_tx_block { uint tx[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_ty_block { uint ty[]; };
layout(std430, set = 0, binding = 4) readonly buffer hg_tz_block { uint tz[]; };
layout(push_constant) uniform hg_push_block { uint nx; uint ny; uint nz; uint wpe; uint woff; uint nsrc; uint bx; uint by; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 3u) * 8u; atomicAnd(dst[hg_i >> 2u], ~(0xffu << hg_s)); atomicOr(dst[hg_i >> 2u], (hg_v & 0xffu) << hg_s); }
uint load_src(uint hg_i) { return ((src[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
uint load_tx(uint hg_i) { return tx[hg_i]; }
uint load_ty(uint hg_i) { return ty[hg_i]; }
uint load_tz(uint hg_i) { return tz[hg_i]; }

layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

void main() {
    uint nx = hg_pc.nx;
    uint ny = hg_pc.ny;
    uint nz = hg_pc.nz;
    uint wpe = hg_pc.wpe;
    uint woff = hg_pc.woff;
    uint nsrc = hg_pc.nsrc;
    uint bx = hg_pc.bx;
    uint by = hg_pc.by;
    uint x0 = gl_GlobalInvocationID.x * bx;
    uint y0 = gl_GlobalInvocationID.y * by;
    uint z = gl_GlobalInvocationID.z;
    if (x0 >= nx || y0 >= ny || z >= nz) return;
    uint x1 = x0 + min(nx - x0, bx);
    uint y1 = y0 + min(ny - y0, by);
    uint oz = load_tz(z);
    for (uint y = y0; y < y1; y++) {
        uint oy = oz + load_ty(y);
        uint f = (z * ny + y) * nx;
        if (wpe == 1u) {
            uint b = woff + oy;
            for (uint x = x0; x < x1; x++) {
                uint s = b + load_tx(x);
                store_dst(f + x, s < nsrc ? load_src(s) : 0u);
            }
        } else {
            for (uint x = x0; x < x1; x++) {
                uint s = woff + (oy + load_tx(x)) * wpe;
                uint o = (f + x) * wpe;
                for (uint w = 0u; w < wpe; w++) {
                    uint v = 0u;
                    if (s + w < nsrc && s + w >= s) v = load_src(s + w);
                    store_dst(o + w, v);
                }
            }
        }
    }
}
