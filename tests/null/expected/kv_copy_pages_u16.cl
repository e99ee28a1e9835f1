#define load_pool(hg_i) ((uint)(pool[(hg_i)]))
#define store_pool(hg_i, hg_v) (pool[(hg_i)] = (ushort)((hg_v)))
#define load_pairs(hg_i) (pairs[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_copy_pages_u16(__global ushort* restrict pool, __global const uint* restrict pairs, uint n, uint lanes, uint page_words, uint num_pages) {
    uint i = ((uint)get_global_id(0));
    if (i >= n || lanes == 0u || lanes > 4096u || page_words > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;

    uint src = load_pairs(2u * t);
    uint dst = load_pairs(2u * t + 1u);
    if (src >= num_pages || dst >= num_pages) return;
    for (uint w = lane; w < page_words; w += lanes) {
        store_pool(dst * page_words + w, load_pool(src * page_words + w));
    }
}
