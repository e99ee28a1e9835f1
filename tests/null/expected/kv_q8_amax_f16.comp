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

layout(std430, set = 0, binding = 0) buffer hg_kpart_block { uint kpart[]; };
layout(std430, set = 0, binding = 1) buffer hg_vpart_block { uint vpart[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_ksrc_block { uint ksrc[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_vsrc_block { uint vsrc[]; };
layout(push_constant) uniform hg_push_block { uint n; uint lanes; uint row; uint num_slots; } hg_pc;
void store_kpart(uint hg_i, uint hg_v) { kpart[hg_i] = hg_v; }
void store_vpart(uint hg_i, uint hg_v) { vpart[hg_i] = hg_v; }
float load_ksrc(uint hg_i) { return hg_f16_to_f32((ksrc[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
float load_vsrc(uint hg_i) { return hg_f16_to_f32((vsrc[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint lanes = hg_pc.lanes;
    uint row = hg_pc.row;
    uint num_slots = hg_pc.num_slots;
    uint i = gl_GlobalInvocationID.x;
    if (i >= n || lanes == 0u || lanes > 4096u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint from = t * row;
    {
        uint amax = 0u;
        for (uint w = lane; w < row; w += lanes) {
            uint a = floatBitsToUint(load_ksrc(from + w)) & 0x7fffffffu;
            if (a < 0x7f800000u) amax = max(amax, a);
        }
        store_kpart(i, amax);
    }
    {
        uint amax = 0u;
        for (uint w = lane; w < row; w += lanes) {
            uint a = floatBitsToUint(load_vsrc(from + w)) & 0x7fffffffu;
            if (a < 0x7f800000u) amax = max(amax, a);
        }
        store_vpart(i, amax);
    }
}
