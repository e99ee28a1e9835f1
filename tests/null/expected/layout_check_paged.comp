#version 450

layout(std430, set = 0, binding = 0) buffer hg_err_block { uint err[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_bt_block { uint bt[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_sp_block { uint sp[]; };
layout(push_constant) uniform hg_push_block { uint nbt; uint nseq; uint npages; uint iw; } hg_pc;
void store_err(uint hg_i, uint hg_v) { err[hg_i] = hg_v; }
uint load_bt(uint hg_i) { return bt[hg_i]; }
uint load_sp(uint hg_i) { return sp[hg_i]; }

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint nbt = hg_pc.nbt;
    uint nseq = hg_pc.nseq;
    uint npages = hg_pc.npages;
    uint iw = hg_pc.iw;
    uint j = gl_GlobalInvocationID.x;
    if (j < nbt) {
        if (load_bt(j * iw) >= npages) store_err(0u, 1u);
        if (iw == 2u && load_bt(j * 2u + 1u) != 0u) store_err(0u, 1u);
    }
    if (j <= nseq) {
        uint v = load_sp(j * iw);
        if (iw == 2u && load_sp(j * 2u + 1u) != 0u) store_err(0u, 1u);
        if (j == 0u && v != 0u) store_err(0u, 1u);
        if (j == nseq && v != nbt) store_err(0u, 1u);
        if (j > 0u && v < load_sp((j - 1u) * iw)) store_err(0u, 1u);
    }
}
