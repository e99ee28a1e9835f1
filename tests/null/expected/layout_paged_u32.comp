#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_pool_block { uint pool[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_bt_block { uint bt[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_sp_block { uint sp[]; };
layout(std430, set = 0, binding = 4) readonly buffer hg_ts_block { uint ts[]; };
layout(push_constant) uniform hg_push_block { uint row; uint ntok; uint nseq; uint ps; uint npages; uint nbt; uint iw; uint wpe; uint npool; } hg_pc;
void store_dst(uint hg_i, uint hg_v) { dst[hg_i] = hg_v; }
uint load_pool(uint hg_i) { return pool[hg_i]; }
uint load_bt(uint hg_i) { return bt[hg_i]; }
uint load_sp(uint hg_i) { return sp[hg_i]; }
uint load_ts(uint hg_i) { return ts[hg_i]; }

layout(local_size_x = 64, local_size_y = 4, local_size_z = 1) in;

void main() {
    uint row = hg_pc.row;
    uint ntok = hg_pc.ntok;
    uint nseq = hg_pc.nseq;
    uint ps = hg_pc.ps;
    uint npages = hg_pc.npages;
    uint nbt = hg_pc.nbt;
    uint iw = hg_pc.iw;
    uint wpe = hg_pc.wpe;
    uint npool = hg_pc.npool;
    uint x = gl_GlobalInvocationID.x;
    uint y = gl_GlobalInvocationID.y;
    if (x >= row || y >= ntok) return;
    uint lo = 0u;
    uint hi = nseq;
    while (hi - lo > 1u) {
        uint md = lo + (hi - lo) / 2u;
        if (load_ts(md) <= y) lo = md; else hi = md;
    }
    uint t = y - load_ts(lo);
    uint slot = load_sp(lo * iw) + t / ps;
    uint page = slot < nbt ? load_bt(slot * iw) : npages;
    uint ok = page < npages ? 1u : 0u;
    uint src = 0u;
    if (ok != 0u) src = ((page * ps + t % ps) * row + x) * wpe;
    uint o = (y * row + x) * wpe;
    for (uint w = 0u; w < wpe; w++) {
        uint v = 0u;
        if (ok != 0u && src + w < npool) v = load_pool(src + w);
        store_dst(o + w, v);
    }
}
