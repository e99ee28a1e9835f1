#version 450

layout(std430, set = 0, binding = 0) buffer hg_err_block { uint err[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_ix_block { uint ix[]; };
layout(push_constant) uniform hg_push_block { uint nodes; uint pos_off; uint crd_off; uint ncrd; uint extent; uint nix; } hg_pc;
void store_err(uint hg_i, uint hg_v) { err[hg_i] = hg_v; }
uint load_ix(uint hg_i) { return ix[hg_i]; }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint nodes = hg_pc.nodes;
    uint pos_off = hg_pc.pos_off;
    uint crd_off = hg_pc.crd_off;
    uint ncrd = hg_pc.ncrd;
    uint extent = hg_pc.extent;
    uint nix = hg_pc.nix;
    uint q = gl_GlobalInvocationID.x;
    if (q >= nodes) return;
    uint pa = pos_off + 2u * q;
    if (pa + 2u >= nix) { store_err(0u, 1u); return; }
    uint a = load_ix(pa);
    uint b = load_ix(pa + 2u);
    if (q == 0u && a != 0u) store_err(0u, 1u);
    if (q + 1u == nodes && b != ncrd) store_err(0u, 1u);
    if (a > b || b > ncrd) { store_err(0u, 1u); return; }
    uint prev = 0u;
    for (uint k = a; k < b; k++) {
        uint c = crd_off + 2u * k;
        uint v = c < nix ? load_ix(c) : extent;
        if (v >= extent || (k > a && v <= prev)) { store_err(0u, 1u); return; }
        prev = v;
    }
}
