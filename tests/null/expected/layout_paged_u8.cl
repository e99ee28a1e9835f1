#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uchar)((hg_v)))
#define load_pool(hg_i) ((uint)(pool[(hg_i)]))
#define load_bt(hg_i) (bt[(hg_i)])
#define load_sp(hg_i) (sp[(hg_i)])
#define load_ts(hg_i) (ts[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 4, 1))) void layout_paged_u8(__global uchar* restrict dst, __global const uchar* restrict pool, __global const uint* restrict bt, __global const uint* restrict sp, __global const uint* restrict ts, uint row, uint ntok, uint nseq, uint ps, uint npages, uint nbt, uint iw, uint wpe, uint npool) {
    uint x = ((uint)get_global_id(0));
    uint y = ((uint)get_global_id(1));
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
