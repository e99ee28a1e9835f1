#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_vals_block { uint vals[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_ix_block { uint ix[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_mt_block { uint mt[]; };
layout(push_constant) uniform hg_push_block { uint nnz; uint n; uint wpe; uint nix; uint nlev; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 1u) * 16u; atomicAnd(dst[hg_i >> 1u], ~(0xffffu << hg_s)); atomicOr(dst[hg_i >> 1u], (hg_v & 0xffffu) << hg_s); }
uint load_vals(uint hg_i) { return ((vals[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
uint load_ix(uint hg_i) { return ix[hg_i]; }
uint load_mt(uint hg_i) { return mt[hg_i]; }

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint nnz = hg_pc.nnz;
    uint n = hg_pc.n;
    uint wpe = hg_pc.wpe;
    uint nix = hg_pc.nix;
    uint nlev = hg_pc.nlev;
    uint i = gl_GlobalInvocationID.x;
    if (i >= nnz) return;
    uint fi = 0u;
    uint p = i;
    uint ok = 1u;
    uint l = nlev;
    while (l > 0u) {
        l = l - 1u;
        uint at = l * 6u;
        uint coord = p;
        if (load_mt(at + 5u) == 0u) {
            uint c = load_mt(at) + 2u * p;
            coord = c < nix ? load_ix(c) : 0xffffffffu;
        }
        if (coord >= load_mt(at + 4u)) ok = 0u;
        fi = fi + coord * load_mt(at + 3u);
        if (l > 0u) {
            uint po = load_mt(at + 1u);
            uint lo = 0u;
            uint hi = max(load_mt(at + 2u), 1u) - 1u;
            while (hi - lo > 1u) {
                uint md = lo + (hi - lo) / 2u;
                uint c = po + 2u * md;
                uint v = c < nix ? load_ix(c) : 0xffffffffu;
                if (v <= p) lo = md; else hi = md;
            }
            p = lo;
        }
    }
    if (ok == 0u || fi >= n) return;
    for (uint w = 0u; w < wpe; w++) store_dst(fi * wpe + w, load_vals(i * wpe + w));
}
