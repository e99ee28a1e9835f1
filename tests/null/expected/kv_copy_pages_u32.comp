#version 450

layout(std430, set = 0, binding = 0) buffer hg_kpool_block { uint kpool[]; };
layout(std430, set = 0, binding = 1) buffer hg_vpool_block { uint vpool[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_kfrom_block { uint kfrom[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_vfrom_block { uint vfrom[]; };
layout(std430, set = 0, binding = 4) readonly buffer hg_pairs_block { uint pairs[]; };
layout(push_constant) uniform hg_push_block { uint n; uint lanes; uint page_words; uint num_pages; } hg_pc;
uint load_kpool(uint hg_i) { return kpool[hg_i]; }
void store_kpool(uint hg_i, uint hg_v) { kpool[hg_i] = hg_v; }
uint load_vpool(uint hg_i) { return vpool[hg_i]; }
void store_vpool(uint hg_i, uint hg_v) { vpool[hg_i] = hg_v; }
uint load_kfrom(uint hg_i) { return kfrom[hg_i]; }
uint load_vfrom(uint hg_i) { return vfrom[hg_i]; }
uint load_pairs(uint hg_i) { return pairs[hg_i]; }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint lanes = hg_pc.lanes;
    uint page_words = hg_pc.page_words;
    uint num_pages = hg_pc.num_pages;
    uint i = gl_GlobalInvocationID.x;
    if (i >= n || lanes == 0u || lanes > 4096u || page_words > 0xFFFFEFFFu) return;
    uint t = i / lanes;
    if (t >= n / lanes) return;
    uint lane = i - t * lanes;
    uint src = load_pairs(2u * t);
    uint dst = load_pairs(2u * t + 1u);
    if (src >= num_pages || dst >= num_pages) return;
    if (lanes == 1u && page_words <= 0x7fffffffu / num_pages) {
        int len = int(page_words);
        int pos = int(src * page_words);
        int at = int(dst * page_words);
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
