#version 450

float hg_bf16_to_f32(uint h) {
    return uintBitsToFloat((h & 0xffffu) << 16u);
}

layout(std430, set = 0, binding = 0) buffer hg_kpool_block { uint kpool[]; };
layout(std430, set = 0, binding = 1) buffer hg_vpool_block { uint vpool[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_ksrc_block { uint ksrc[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_vsrc_block { uint vsrc[]; };
layout(std430, set = 0, binding = 4) readonly buffer hg_slots_block { uint slots[]; };
layout(push_constant) uniform hg_push_block { uint n; uint lanes; uint row; uint num_slots; } hg_pc;
void store_kpool(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 3u) * 8u; atomicAnd(kpool[hg_i >> 2u], ~(0xffu << hg_s)); atomicOr(kpool[hg_i >> 2u], (hg_v & 0xffu) << hg_s); }
void store_vpool(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 3u) * 8u; atomicAnd(vpool[hg_i >> 2u], ~(0xffu << hg_s)); atomicOr(vpool[hg_i >> 2u], (hg_v & 0xffu) << hg_s); }
float load_ksrc(uint hg_i) { return hg_bf16_to_f32((ksrc[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
float load_vsrc(uint hg_i) { return hg_bf16_to_f32((vsrc[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
uint load_slots(uint hg_i) { return slots[hg_i]; }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint lanes = hg_pc.lanes;
    uint row = hg_pc.row;
    uint num_slots = hg_pc.num_slots;
    uint i = gl_GlobalInvocationID.x;
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint slot = load_slots(t);
    if (slot >= num_slots) return;
    uint from = t * row;
    uint to = slot * row;
    for (uint w = lane; w < row; w += lanes) {
        uint b = floatBitsToUint(load_ksrc(from + w));
        uint a = b & 0x7fffffffu;
        uint code = 0u;
        if (a > 0x7f800000u) {
            code = 0x7fu;
        } else if (a >= 0x43e00000u) {
            code = 0x7eu;
        } else if (a >= 0x3c800000u) {
            code = ((a + 0x7ffffu + ((a >> 20u) & 1u)) >> 20u) - 960u;
        } else if ((a >> 23u) >= 117u) {
            // Subnormal e4m3: round m * 2^(e - 141) to nearest even (as hg_f32_to_f16 does).
            uint m = (a & 0x7fffffu) | 0x800000u;
            uint s = 141u - (a >> 23u);
            code = (m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s;
        }
        store_kpool(to + w, ((b >> 24u) & 0x80u) | code);
    }
    for (uint w = lane; w < row; w += lanes) {
        uint b = floatBitsToUint(load_vsrc(from + w));
        uint a = b & 0x7fffffffu;
        uint code = 0u;
        if (a > 0x7f800000u) {
            code = 0x7fu;
        } else if (a >= 0x43e00000u) {
            code = 0x7eu;
        } else if (a >= 0x3c800000u) {
            code = ((a + 0x7ffffu + ((a >> 20u) & 1u)) >> 20u) - 960u;
        } else if ((a >> 23u) >= 117u) {
            // Subnormal e4m3: round m * 2^(e - 141) to nearest even (as hg_f32_to_f16 does).
            uint m = (a & 0x7fffffu) | 0x800000u;
            uint s = 141u - (a >> 23u);
            code = (m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s;
        }
        store_vpool(to + w, ((b >> 24u) & 0x80u) | code);
    }
}
