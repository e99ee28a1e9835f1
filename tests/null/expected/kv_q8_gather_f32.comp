#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_pool_block { uint pool[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_scales_block { uint scales[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_slots_block { uint slots[]; };
layout(push_constant) uniform hg_push_block { uint n; uint lanes; uint row; uint num_slots; } hg_pc;
void store_dst(uint hg_i, float hg_v) { dst[hg_i] = floatBitsToUint(hg_v); }
int load_pool(uint hg_i) { return bitfieldExtract(int(pool[hg_i >> 2u]), int((hg_i & 3u) * 8u), 8); }
float load_scales(uint hg_i) { return uintBitsToFloat(scales[hg_i]); }
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

    uint to = t * row;
    if (slot >= num_slots) {
        for (uint w = lane; w < row; w += lanes) store_dst(to + w, 0.0f);
        return;
    }
    float scale = load_scales(slot);
    uint from = slot * row;
    for (uint w = lane; w < row; w += lanes) {
        store_dst(to + w, scale * float(load_pool(from + w)));
    }
}
