@group(0) @binding(0) var<storage, read_write> hg_m_kpool: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_vpool: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_kfrom: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_vfrom: array<u32>;
@group(0) @binding(4) var<storage, read_write> hg_m_pairs: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_kpool: u32,
    hg_d_vpool: u32,
    hg_d_kfrom: u32,
    hg_d_vfrom: u32,
    hg_d_pairs: u32,
    hg_a_n: u32,
    hg_a_lanes: u32,
    hg_a_page_words: u32,
    hg_a_num_pages: u32,
}
@group(0) @binding(5) var<uniform> hg_u: HgUniform;
@group(0) @binding(6) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_kpool: vec2<u32>;
var<private> hg_w_vpool: vec2<u32>;
var<private> hg_w_kfrom: vec2<u32>;
var<private> hg_w_vfrom: vec2<u32>;
var<private> hg_w_pairs: vec2<u32>;
var<private> hg_bad: u32;

fn load_kpool(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_kpool.x;
    if (hg_k >= hg_w_kpool.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_kpool[hg_k];
}
fn store_kpool(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_kpool.x;
    if (hg_k >= hg_w_kpool.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_kpool[hg_k] = hg_v;
}
fn load_vpool(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_vpool.x;
    if (hg_k >= hg_w_vpool.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_vpool[hg_k];
}
fn store_vpool(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_vpool.x;
    if (hg_k >= hg_w_vpool.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_vpool[hg_k] = hg_v;
}
fn load_kfrom(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_kfrom.x;
    if (hg_k >= hg_w_kfrom.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_kfrom[hg_k];
}
fn load_vfrom(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_vfrom.x;
    if (hg_k >= hg_w_vfrom.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_vfrom[hg_k];
}
fn load_pairs(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_pairs.x;
    if (hg_k >= hg_w_pairs.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_pairs[hg_k];
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_kpool = vec2<u32>(hg_u.hg_d_kpool, arrayLength(&hg_m_kpool));
    hg_w_vpool = vec2<u32>(hg_u.hg_d_vpool, arrayLength(&hg_m_vpool));
    hg_w_kfrom = vec2<u32>(hg_u.hg_d_kfrom, arrayLength(&hg_m_kfrom));
    hg_w_vfrom = vec2<u32>(hg_u.hg_d_vfrom, arrayLength(&hg_m_vfrom));
    hg_w_pairs = vec2<u32>(hg_u.hg_d_pairs, arrayLength(&hg_m_pairs));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n: u32 = hg_u.hg_a_n;
    let lanes: u32 = hg_u.hg_a_lanes;
    let page_words: u32 = hg_u.hg_a_page_words;
    let num_pages: u32 = hg_u.hg_a_num_pages;
    var i: u32 = hg_gid0;
    if ((((i >= n) || (lanes == 0u)) || (lanes > 0x1000u)) || (page_words > 0xffffefffu)) {
        return;
    }
    var t: u32 = i / lanes;
    if (t >= (n / lanes)) {
        return;
    }
    var lane: u32 = i - (t * lanes);
    var src: u32 = load_pairs(2u * t);
    var dst: u32 = load_pairs((2u * t) + 1u);
    if ((src >= num_pages) || (dst >= num_pages)) {
        return;
    }
    if ((lanes == 1u) && (page_words <= (0x7fffffffu / num_pages))) {
        var len: i32 = i32(page_words);
        var pos: i32 = i32(src * page_words);
        var at: i32 = i32(dst * page_words);
        for (var w: i32 = 0i; w < len; w++) {
            store_kpool(u32(at + w), load_kfrom(u32(pos + w)));
        }
        for (var w: i32 = 0i; w < len; w++) {
            store_vpool(u32(at + w), load_vfrom(u32(pos + w)));
        }
        return;
    }
    var from_: u32 = src * page_words;
    var to: u32 = dst * page_words;
    for (var w: u32 = lane; w < page_words; w += lanes) {
        store_kpool(to + w, load_kfrom(from_ + w));
        store_vpool(to + w, load_vfrom(from_ + w));
    }
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
