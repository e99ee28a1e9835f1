#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_src_block { uint src[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_tx_block { uint tx[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_ty_block { uint ty[]; };
layout(std430, set = 0, binding = 4) readonly buffer hg_tz_block { uint tz[]; };
layout(push_constant) uniform hg_push_block { uint nx; uint ny; uint nz; uint ndst; } hg_pc;
uint load_dst(uint hg_i) { return dst[hg_i]; }
void store_dst(uint hg_i, uint hg_v) { dst[hg_i] = hg_v; }
uint load_src(uint hg_i) { return src[hg_i]; }
uint load_tx(uint hg_i) { return tx[hg_i]; }
uint load_ty(uint hg_i) { return ty[hg_i]; }
uint load_tz(uint hg_i) { return tz[hg_i]; }

layout(local_size_x = 32, local_size_y = 8, local_size_z = 1) in;

void main() {
    uint nx = hg_pc.nx;
    uint ny = hg_pc.ny;
    uint nz = hg_pc.nz;
    uint ndst = hg_pc.ndst;
    uint x = gl_GlobalInvocationID.x;
    uint y = gl_GlobalInvocationID.y;
    uint z = gl_GlobalInvocationID.z;
    if (x >= nx || y >= ny || z >= nz) return;
    uint f = (z * ny + y) * nx + x;
    uint d = load_tz(z) + load_ty(y) + load_tx(x);
    if (d >= ndst) return;
    store_dst(d, floatBitsToUint(uintBitsToFloat(load_dst(d)) + uintBitsToFloat(load_src(f))));
}
