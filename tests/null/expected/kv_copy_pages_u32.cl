#define load_kpool(hg_i) (kpool[(hg_i)])
#define store_kpool(hg_i, hg_v) (kpool[(hg_i)] = (uint)((hg_v)))
#define load_vpool(hg_i) (vpool[(hg_i)])
#define store_vpool(hg_i, hg_v) (vpool[(hg_i)] = (uint)((hg_v)))
#define load_kfrom(hg_i) (kfrom[(hg_i)])
#define load_vfrom(hg_i) (vfrom[(hg_i)])
#define load_pairs(hg_i) (pairs[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void kv_copy_pages_u32(__global uint* restrict kpool, __global uint* restrict vpool, __global const uint* restrict kfrom, __global const uint* restrict vfrom, __global const uint* restrict pairs, uint n, uint lanes, uint page_words, uint num_pages) {
    uint i = ((uint)get_global_id(0));
    if (i >= n || lanes == 0u || lanes > 4096u || page_words > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint src = load_pairs(2u * t);
    uint dst = load_pairs(2u * t + 1u);
    if (src >= num_pages || dst >= num_pages) return;
    if (lanes == 1u && page_words <= 0x7fffffffu / num_pages) {
        int len = (int)(page_words);
        int pos = (int)(src * page_words);
        int at = (int)(dst * page_words);
        for (int w = 0; w < len; w++) store_kpool(at + w, load_kfrom(pos + w));
        for (int w = 0; w < len; w++) store_vpool(at + w, load_vfrom(pos + w));
        return;
    }
    uint from = src * page_words;
    uint to = dst * page_words;
    for (uint w = lane; w < page_words; w += lanes) {
        store_kpool(to + w, load_kfrom(from + w));
        store_vpool(to + w, load_vfrom(from + w));
    }
}
