#version 450

layout(std430, set = 0, binding = 0) buffer hg_kdst_block { uint kdst[]; };
layout(std430, set = 0, binding = 1) buffer hg_vdst_block { uint vdst[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_kpool_block { uint kpool[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_vpool_block { uint vpool[]; };
layout(std430, set = 0, binding = 4) readonly buffer hg_slots_block { uint slots[]; };
layout(push_constant) uniform hg_push_block { uint n; uint lanes; uint row; uint num_slots; } hg_pc;
void store_kdst(uint hg_i, uint hg_v) { kdst[hg_i] = hg_v; }
void store_vdst(uint hg_i, uint hg_v) { vdst[hg_i] = hg_v; }
uint load_kpool(uint hg_i) { return kpool[hg_i]; }
uint load_vpool(uint hg_i) { return vpool[hg_i]; }
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
    if (slot == 0xFFFFFFFEu) return;  // SKIP_SLOT: another window's token
    // Slots past the pool (the padding sentinel) read as zero rows.
    if (slot >= num_slots) {
        for (uint w = lane; w < row; w += lanes) {
            store_kdst(t * row + w, 0u);
            store_vdst(t * row + w, 0u);
        }
        return;
    }
    if (lanes == 1u && row <= 0x7fffffffu / (max(max(num_slots, n), 1u))) {
        int len = int(row);
        int pos = int(slot * row);
        int at = int(t * row);
        for (int w = 0; w < len; w++) store_kdst(at + w, load_kpool(pos + w));
        for (int w = 0; w < len; w++) store_vdst(at + w, load_vpool(pos + w));
        return;
    }
    uint from = slot * row;
    uint to = t * row;
    for (uint w = lane; w < row; w += lanes) {
        store_kdst(to + w, load_kpool(from + w));
        store_vdst(to + w, load_vpool(from + w));
    }
}
