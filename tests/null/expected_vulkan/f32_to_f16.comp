#version 450

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
layout(std430, set = 0, binding = 2) buffer hg_fault_block { uint hg_fault; };
layout(push_constant) uniform hg_push_block { uint hg_base0; uint hg_base1; uint hg_base2; uint hg_d_dst; uint hg_d_src; uint n; } hg_pc;
uint hg_ix_dst(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_dst; if (hg_k >= uint(dst.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_src(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_src; if (hg_k >= uint(src.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
void store_dst(uint hg_i, float hg_v) { uint hg_s = (hg_i & 1u) * 16u; atomicAnd(dst[hg_ix_dst(hg_i >> 1u)], ~(0xffffu << hg_s)); atomicOr(dst[hg_ix_dst(hg_i >> 1u)], (hg_f32_to_f16(hg_v) & 0xffffu) << hg_s); }
float load_src(uint hg_i) { return uintBitsToFloat(src[hg_ix_src(hg_i)]); }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint i = (gl_GlobalInvocationID.x + hg_pc.hg_base0);
    if (i >= n) return;
    store_dst(i, load_src(i));
}
