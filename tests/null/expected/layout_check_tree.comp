#version 450

layout(std430, set = 0, binding = 0) buffer hg_err_block { uint err[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_ix_block { uint ix[]; };
layout(push_constant) uniform hg_push_block { uint nodes; uint pos_off; uint crd_off; uint ncrd; uint extent; uint nix; uint span; } hg_pc;
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
    uint span = hg_pc.span;
    uint q = gl_GlobalInvocationID.x;
    if (q >= nodes) return;
    uint pa = pos_off + 2u * q;
    if (pa + 2u >= nix) { store_err(0u, 1u); return; }
    uint a = load_ix(pa);
    uint b = load_ix(pa + 2u);
    if (q == 0u && a != 0u) store_err(0u, 1u);
    if (q + 1u == nodes && b != ncrd) store_err(0u, 1u);
    if (a > b || b > ncrd) { store_err(0u, 1u); return; }
    uint sp = max(span, 1u);
    if (gl_GlobalInvocationID.y > (b - a) / sp) return;
    uint k0 = a + gl_GlobalInvocationID.y * sp;
    uint k1 = k0 + min(b - k0, sp);
    uint prev = 0u;
    if (k0 > a && crd_off + 2u * k0 - 2u < nix) prev = load_ix(crd_off + 2u * k0 - 2u);
    for (uint k = k0; k < k1; k++) {
        uint c = crd_off + 2u * k;
        uint v = c < nix ? load_ix(c) : extent;
        if (v >= extent || (k > a && v <= prev)) { store_err(0u, 1u); return; }
        prev = v;
    }
}
