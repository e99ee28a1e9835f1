#version 450

layout(std430, set = 0, binding = 0) buffer hg_kpool_block { uint kpool[]; };
layout(std430, set = 0, binding = 1) buffer hg_vpool_block { uint vpool[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_ksrc_block { uint ksrc[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_vsrc_block { uint vsrc[]; };
layout(std430, set = 0, binding = 4) readonly buffer hg_slots_block { uint slots[]; };
layout(push_constant) uniform hg_push_block { uint n; uint lanes; uint row; uint num_slots; } hg_pc;
uint load_kpool(uint hg_i) { return ((kpool[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
void store_kpool(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 1u) * 16u; atomicAnd(kpool[hg_i >> 1u], ~(0xffffu << hg_s)); atomicOr(kpool[hg_i >> 1u], (hg_v & 0xffffu) << hg_s); }
uint load_vpool(uint hg_i) { return ((vpool[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
void store_vpool(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 1u) * 16u; atomicAnd(vpool[hg_i >> 1u], ~(0xffffu << hg_s)); atomicOr(vpool[hg_i >> 1u], (hg_v & 0xffffu) << hg_s); }
uint load_ksrc(uint hg_i) { return ((ksrc[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
uint load_vsrc(uint hg_i) { return ((vsrc[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
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
    if (lanes == 1u && row <= 0x7fffffffu / (max(max(num_slots, n), 1u))) {
        int len = int(row);
        int pos = int(t * row);
        int at = int(slot * row);
        for (int w = 0; w < len; w++) store_kpool(at + w, load_ksrc(pos + w));
        for (int w = 0; w < len; w++) store_vpool(at + w, load_vsrc(pos + w));
        return;
    }
    uint from = t * row;
    uint to = slot * row;
    for (uint w = lane; w < row; w += lanes) {
        store_kpool(to + w, load_ksrc(from + w));
        store_vpool(to + w, load_vsrc(from + w));
    }
}
