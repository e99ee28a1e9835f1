#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_pool_block { uint pool[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_slots_block { uint slots[]; };
layout(push_constant) uniform hg_push_block { uint n; uint lanes; uint row; uint num_slots; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 1u) * 16u; atomicAnd(dst[hg_i >> 1u], ~(0xffffu << hg_s)); atomicOr(dst[hg_i >> 1u], (hg_v & 0xffffu) << hg_s); }
uint load_pool(uint hg_i) { return ((pool[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
uint load_slots(uint hg_i) { return slots[hg_i]; }

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

    uint slot = load_slots(t);
    // Slots past the pool (the padding sentinel) read as zero rows.
    if (slot >= num_slots) {
        for (uint w = lane; w < row; w += lanes) {
            store_dst(t * row + w, 0u);
        }
        return;
    }
    uint from = slot * row;
    uint to = t * row;
    if (lanes == 1u) {
        // Unit stride (the host's one item per row): a plain row copy.
        for (uint w = 0u; w < row; w++) {
            store_dst(to + w, load_pool(from + w));
        }
        return;
    }
    for (uint w = lane; w < row; w += lanes) {
        store_dst(to + w, load_pool(from + w));
    }
}
