#version 450

layout(std430, set = 0, binding = 0) buffer hg_kdst_block { uint kdst[]; };
layout(std430, set = 0, binding = 1) buffer hg_vdst_block { uint vdst[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_kpool_block { uint kpool[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_vpool_block { uint vpool[]; };
layout(std430, set = 0, binding = 4) readonly buffer hg_kscales_block { uint kscales[]; };
layout(std430, set = 0, binding = 5) readonly buffer hg_vscales_block { uint vscales[]; };
layout(std430, set = 0, binding = 6) readonly buffer hg_slots_block { uint slots[]; };
layout(push_constant) uniform hg_push_block { uint n; uint lanes; uint row; uint num_slots; } hg_pc;
void store_kdst(uint hg_i, float hg_v) { kdst[hg_i] = floatBitsToUint(hg_v); }
void store_vdst(uint hg_i, float hg_v) { vdst[hg_i] = floatBitsToUint(hg_v); }
int load_kpool(uint hg_i) { return bitfieldExtract(int(kpool[hg_i >> 2u]), int((hg_i & 3u) * 8u), 8); }
int load_vpool(uint hg_i) { return bitfieldExtract(int(vpool[hg_i >> 2u]), int((hg_i & 3u) * 8u), 8); }
float load_kscales(uint hg_i) { return uintBitsToFloat(kscales[hg_i]); }
float load_vscales(uint hg_i) { return uintBitsToFloat(vscales[hg_i]); }
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
    {
        float s = load_kscales(slot);
        int z = 0;
        for (uint w = lane; w < row; w += lanes) {
            int q = load_kpool(from + w);
            store_kdst(to + w, s * float(int(uint(q) - uint(z))));
        }
    }
    {
        float s = load_vscales(slot);
        int z = 0;
        for (uint w = lane; w < row; w += lanes) {
            int q = load_vpool(from + w);
            store_vdst(to + w, s * float(int(uint(q) - uint(z))));
        }
    }
}
