@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> hg_m_data: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_data: u32,
    hg_a_n: u32,
    hg_a_doff: u32,
    hg_a_bits: u32,
    hg_a_sgn: u32,
}
@group(0) @binding(2) var<uniform> hg_u: HgUniform;
@group(0) @binding(3) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_dst: vec2<u32>;
var<private> hg_w_data: vec2<u32>;
var<private> hg_bad: u32;

fn store_dst(hg_i: u32, hg_v: u32) {
    let hg_k = (hg_i >> 2u) + hg_w_dst.x;
    if (hg_k >= hg_w_dst.y) {
        hg_bad = 1u;
        return;
    }
    let hg_s = (hg_i & 3u) * 8u;
    atomicAnd(&hg_m_dst[hg_k], ~(0xffu << hg_s));
    atomicOr(&hg_m_dst[hg_k], (hg_v & 0xffu) << hg_s);
}
fn load_data(hg_i: u32) -> u32 {
    let hg_k = (hg_i >> 2u) + hg_w_data.x;
    if (hg_k >= hg_w_data.y) {
        hg_bad = 1u;
        return 0u;
    }
    return ((hg_m_data[hg_k] >> ((hg_i & 3u) * 8u)) & 0xffu);
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_dst = vec2<u32>(hg_u.hg_d_dst, arrayLength(&hg_m_dst));
    hg_w_data = vec2<u32>(hg_u.hg_d_data, arrayLength(&hg_m_data));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n: u32 = hg_u.hg_a_n;
    let doff: u32 = hg_u.hg_a_doff;
    let bits: u32 = hg_u.hg_a_bits;
    let sgn: u32 = hg_u.hg_a_sgn;
    var i: u32 = hg_gid0;
    if (i >= n) {
        return;
    }
    var bit: u32 = i * bits;
    var code: u32 = (load_data(doff + (bit >> 3u)) >> (bit & 7u)) & ((1u << bits) - 1u);
    if ((sgn != 0u) && (code >= (1u << (bits - 1u)))) {
        code = code | (~((1u << bits) - 1u));
    }
    store_dst(i, code & 255u);
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
