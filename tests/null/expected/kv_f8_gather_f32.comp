#version 450

layout(std430, set = 0, binding = 0) buffer hg_kdst_block { uint kdst[]; };
layout(std430, set = 0, binding = 1) buffer hg_vdst_block { uint vdst[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_kpool_block { uint kpool[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_vpool_block { uint vpool[]; };
layout(std430, set = 0, binding = 4) readonly buffer hg_slots_block { uint slots[]; };
layout(push_constant) uniform hg_push_block { uint n; uint lanes; uint row; uint num_slots; } hg_pc;
void store_kdst(uint hg_i, float hg_v) { kdst[hg_i] = floatBitsToUint(hg_v); }
void store_vdst(uint hg_i, float hg_v) { vdst[hg_i] = floatBitsToUint(hg_v); }
uint load_kpool(uint hg_i) { return ((kpool[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
uint load_vpool(uint hg_i) { return ((vpool[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
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
    if (slot == 0xFFFFFFFEu) return;  // SKIP_SLOT: another window's token
    uint to = t * row;
    if (slot >= num_slots) {
        for (uint w = lane; w < row; w += lanes) {
            store_kdst(to + w, 0.0f);
            store_vdst(to + w, 0.0f);
        }
        return;
    }
    uint from = slot * row;
    for (uint w = lane; w < row; w += lanes) {
        uint c = load_kpool(from + w);
        uint sign = (c & 0x80u) << 24u;
        uint e = (c >> 3u) & 15u;
        uint m = c & 7u;
        float v = uintBitsToFloat(sign | ((e + 120u) << 23u) | (m << 20u));
        if (e == 15u && m == 7u) v = uintBitsToFloat(sign | 0x7fc00000u);
        if (e == 0u) v = uintBitsToFloat(sign | floatBitsToUint(float(m) * 0.001953125f));
        store_kdst(to + w, v);
    }
    for (uint w = lane; w < row; w += lanes) {
        uint c = load_vpool(from + w);
        uint sign = (c & 0x80u) << 24u;
        uint e = (c >> 3u) & 15u;
        uint m = c & 7u;
        float v = uintBitsToFloat(sign | ((e + 120u) << 23u) | (m << 20u));
        if (e == 15u && m == 7u) v = uintBitsToFloat(sign | 0x7fc00000u);
        if (e == 0u) v = uintBitsToFloat(sign | floatBitsToUint(float(m) * 0.001953125f));
        store_vdst(to + w, v);
    }
}
