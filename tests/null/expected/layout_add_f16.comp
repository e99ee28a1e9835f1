#version 450

float hg_f16_to_f32(uint h) {
    uint sign = (h & 0x8000u) << 16u;
    uint expo = (h >> 10u) & 0x1fu;
    uint mant = h & 0x3ffu;
    if (expo == 0x1fu) return uintBitsToFloat(sign | 0x7f800000u | (mant << 13u));
    if (expo != 0u) return uintBitsToFloat(sign | ((expo + 112u) << 23u) | (mant << 13u));
    // Subnormal: mant * 2^-24 is exact in float.
    return uintBitsToFloat(sign | floatBitsToUint(float(mant) * 5.9604644775390625e-8f));
}

uint hg_f32_to_f16(float v) {
    uint b = floatBitsToUint(v);
    uint sign = (b >> 16u) & 0x8000u;
    uint a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        // NaN keeps its top payload bits and stays a NaN, as NumPy does.
        uint m = (a >> 13u) & 0x3ffu;
        return sign | 0x7c00u | (m == 0u ? 1u : m);
    }
    if (a >= 0x477ff000u) return sign | 0x7c00u;
    if (a >= 0x38800000u) return sign | ((a + 0xfffu + ((a >> 13u) & 1u) - 0x38000000u) >> 13u);
    uint e = a >> 23u;
    if (e < 102u) return sign;
    uint m = (a & 0x7fffffu) | 0x800000u;
    uint s = 126u - e;
    return sign | ((m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s);
}

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_src_block { uint src[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_tx_block { uint tx[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_ty_block { uint ty[]; };
layout(std430, set = 0, binding = 4) readonly buffer hg_tz_block { uint tz[]; };
layout(push_constant) uniform hg_push_block { uint nx; uint ny; uint nz; uint ndst; } hg_pc;
uint load_dst(uint hg_i) { return ((dst[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
void store_dst(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 1u) * 16u; atomicAnd(dst[hg_i >> 1u], ~(0xffffu << hg_s)); atomicOr(dst[hg_i >> 1u], (hg_v & 0xffffu) << hg_s); }
uint load_src(uint hg_i) { return ((src[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
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
    store_dst(d, hg_f32_to_f16(hg_f16_to_f32(load_dst(d)) + hg_f16_to_f32(load_src(f))));
}
