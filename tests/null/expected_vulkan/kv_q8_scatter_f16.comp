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

layout(std430, set = 0, binding = 0) buffer hg_kpool_block { uint kpool[]; };
layout(std430, set = 0, binding = 1) buffer hg_vpool_block { uint vpool[]; };
layout(std430, set = 0, binding = 2) buffer hg_kscales_block { uint kscales[]; };
layout(std430, set = 0, binding = 3) buffer hg_vscales_block { uint vscales[]; };
layout(std430, set = 0, binding = 4) readonly buffer hg_kpart_block { uint kpart[]; };
layout(std430, set = 0, binding = 5) readonly buffer hg_vpart_block { uint vpart[]; };
layout(std430, set = 0, binding = 6) readonly buffer hg_ksrc_block { uint ksrc[]; };
layout(std430, set = 0, binding = 7) readonly buffer hg_vsrc_block { uint vsrc[]; };
layout(std430, set = 0, binding = 8) readonly buffer hg_slots_block { uint slots[]; };
layout(std430, set = 0, binding = 9) buffer hg_fault_block { uint hg_fault; };
layout(push_constant) uniform hg_push_block { uint hg_base0; uint hg_base1; uint hg_base2; uint hg_d_kpool; uint hg_d_vpool; uint hg_d_kscales; uint hg_d_vscales; uint hg_d_kpart; uint hg_d_vpart; uint hg_d_ksrc; uint hg_d_vsrc; uint hg_d_slots; uint n; uint lanes; uint row; uint num_slots; } hg_pc;
uint hg_ix_kpool(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_kpool; if (hg_k >= uint(kpool.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_vpool(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_vpool; if (hg_k >= uint(vpool.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_kscales(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_kscales; if (hg_k >= uint(kscales.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_vscales(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_vscales; if (hg_k >= uint(vscales.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_kpart(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_kpart; if (hg_k >= uint(kpart.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_vpart(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_vpart; if (hg_k >= uint(vpart.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_ksrc(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_ksrc; if (hg_k >= uint(ksrc.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_vsrc(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_vsrc; if (hg_k >= uint(vsrc.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_slots(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_slots; if (hg_k >= uint(slots.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
void store_kpool(uint hg_i, int hg_v) { uint hg_s = (hg_i & 3u) * 8u; atomicAnd(kpool[hg_ix_kpool(hg_i >> 2u)], ~(0xffu << hg_s)); atomicOr(kpool[hg_ix_kpool(hg_i >> 2u)], (uint(hg_v) & 0xffu) << hg_s); }
void store_vpool(uint hg_i, int hg_v) { uint hg_s = (hg_i & 3u) * 8u; atomicAnd(vpool[hg_ix_vpool(hg_i >> 2u)], ~(0xffu << hg_s)); atomicOr(vpool[hg_ix_vpool(hg_i >> 2u)], (uint(hg_v) & 0xffu) << hg_s); }
void store_kscales(uint hg_i, float hg_v) { kscales[hg_ix_kscales(hg_i)] = floatBitsToUint(hg_v); }
void store_vscales(uint hg_i, float hg_v) { vscales[hg_ix_vscales(hg_i)] = floatBitsToUint(hg_v); }
uint load_kpart(uint hg_i) { return kpart[hg_ix_kpart(hg_i)]; }
uint load_vpart(uint hg_i) { return vpart[hg_ix_vpart(hg_i)]; }
float load_ksrc(uint hg_i) { return hg_f16_to_f32((ksrc[hg_ix_ksrc(hg_i >> 1u)] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
float load_vsrc(uint hg_i) { return hg_f16_to_f32((vsrc[hg_ix_vsrc(hg_i >> 1u)] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
uint load_slots(uint hg_i) { return slots[hg_ix_slots(hg_i)]; }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint lanes = hg_pc.lanes;
    uint row = hg_pc.row;
    uint num_slots = hg_pc.num_slots;
    uint i = (gl_GlobalInvocationID.x + hg_pc.hg_base0);
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint slot = load_slots(t);
    if (slot >= num_slots) return;
    uint from = t * row;
    uint to = slot * row;
    {
        uint amax = 0u;
        if (lanes == 1u) {
            for (uint w = 0u; w < row; w += 1u) {
                uint a = floatBitsToUint(load_ksrc(from + w)) & 0x7fffffffu;
                if (a < 0x7f800000u) amax = max(amax, a);
            }
        } else {
            for (uint j = 0u; j < lanes; j++) amax = max(amax, load_kpart(t * lanes + j));
        }
        int e = -126;
        if (amax >= 0x00800000u) {
            e = int(amax >> 23u) - 133;
            e = max(e, -126);
            if (uintBitsToFloat(amax) * uintBitsToFloat(uint(127 - e) << 23u) >= 127.5f) e = e + 1;
        }
        float inv = uintBitsToFloat(uint(127 - e) << 23u);
        if (lane == 0u) store_kscales(slot, uintBitsToFloat(uint(127 + e) << 23u));
        if (lanes == 1u) {
            for (uint w = 0u; w < row; w++) {
                float v = load_ksrc(from + w);
                uint a = floatBitsToUint(v) & 0x7fffffffu;
                int q = 0;
                if (a == 0x7f800000u) {
                    q = (floatBitsToUint(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = min(max(int(floor(v * inv + 0.5f)), -127), 127);
                }
                store_kpool(to + w, q);
            }
        } else {
            for (uint w = lane; w < row; w += lanes) {
                float v = load_ksrc(from + w);
                uint a = floatBitsToUint(v) & 0x7fffffffu;
                int q = 0;
                if (a == 0x7f800000u) {
                    q = (floatBitsToUint(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = min(max(int(floor(v * inv + 0.5f)), -127), 127);
                }
                store_kpool(to + w, q);
            }
        }
    }
    {
        uint amax = 0u;
        if (lanes == 1u) {
            for (uint w = 0u; w < row; w += 1u) {
                uint a = floatBitsToUint(load_vsrc(from + w)) & 0x7fffffffu;
                if (a < 0x7f800000u) amax = max(amax, a);
            }
        } else {
            for (uint j = 0u; j < lanes; j++) amax = max(amax, load_vpart(t * lanes + j));
        }
        int e = -126;
        if (amax >= 0x00800000u) {
            e = int(amax >> 23u) - 133;
            e = max(e, -126);
            if (uintBitsToFloat(amax) * uintBitsToFloat(uint(127 - e) << 23u) >= 127.5f) e = e + 1;
        }
        float inv = uintBitsToFloat(uint(127 - e) << 23u);
        if (lane == 0u) store_vscales(slot, uintBitsToFloat(uint(127 + e) << 23u));
        if (lanes == 1u) {
            for (uint w = 0u; w < row; w++) {
                float v = load_vsrc(from + w);
                uint a = floatBitsToUint(v) & 0x7fffffffu;
                int q = 0;
                if (a == 0x7f800000u) {
                    q = (floatBitsToUint(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = min(max(int(floor(v * inv + 0.5f)), -127), 127);
                }
                store_vpool(to + w, q);
            }
        } else {
            for (uint w = lane; w < row; w += lanes) {
                float v = load_vsrc(from + w);
                uint a = floatBitsToUint(v) & 0x7fffffffu;
                int q = 0;
                if (a == 0x7f800000u) {
                    q = (floatBitsToUint(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = min(max(int(floor(v * inv + 0.5f)), -127), 127);
                }
                store_vpool(to + w, q);
            }
        }
    }
}
