#version 450

layout(std430, set = 0, binding = 0) buffer hg_pool_block { uint pool[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_pairs_block { uint pairs[]; };
layout(push_constant) uniform hg_push_block { uint n; uint lanes; uint page_words; uint num_pages; } hg_pc;
uint load_pool(uint hg_i) { return ((pool[hg_i >> 1u] >> ((hg_i & 1u) * 16u)) & 0xffffu); }
void store_pool(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 1u) * 16u; atomicAnd(pool[hg_i >> 1u], ~(0xffffu << hg_s)); atomicOr(pool[hg_i >> 1u], (hg_v & 0xffffu) << hg_s); }
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
    for (uint w = lane; w < page_words; w += lanes) {
        store_pool(dst * page_words + w, load_pool(src * page_words + w));
    }
}
