#version 450

layout(std430, set = 0, binding = 0) buffer hg_pool_block { uint pool[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_src_block { uint src[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_slots_block { uint slots[]; };
layout(push_constant) uniform hg_push_block { uint n; uint lanes; uint row; uint num_slots; } hg_pc;
uint load_pool(uint hg_i) { return ((pool[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
void store_pool(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 1u) * 16u; atomicAnd(pool[hg_i >> 1u], ~(0xffffu << hg_s)); atomicOr(pool[hg_i >> 1u], (hg_v & 0xffffu) << hg_s); }
uint load_src(uint hg_i) { return ((src[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
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
    // The host validates every slot; this guard keeps a bad one from writing anywhere.
    if (slot >= num_slots) return;
    uint from = t * row;
    uint to = slot * row;
    if (lanes == 1u) {
        for (uint w = 0u; w < row; w++) {
            store_pool(to + w, load_src(from + w));
        }
        return;
    }
    for (uint w = lane; w < row; w += lanes) {
        store_pool(to + w, load_src(from + w));
    }
}
