#version 450

uint hg_f32_to_bf16(float v) {
    uint b = floatBitsToUint(v);
    // NaN becomes the canonical quiet NaN with its sign, as ml_dtypes does.
    if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16u) & 0x8000u) | 0x7fc0u;
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_src_block { uint src[]; };
layout(push_constant) uniform hg_push_block { uint n; } hg_pc;
void store_dst(uint hg_i, float hg_v) { uint hg_s = (hg_i & 1u) * 16u; atomicAnd(dst[hg_i >> 1u], ~(0xffffu << hg_s)); atomicOr(dst[hg_i >> 1u], (hg_f32_to_bf16(hg_v) & 0xffffu) << hg_s); }
float load_src(uint hg_i) { return uintBitsToFloat(src[hg_i]); }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint i = gl_GlobalInvocationID.x;
    if (i >= n) return;
    store_dst(i, load_src(i));
}
