@group(0) @binding(0) var<storage, read_write> hg_m_err: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_mark: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_ix: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_mt: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_err: u32,
    hg_d_mark: u32,
    hg_d_ix: u32,
    hg_d_mt: u32,
    hg_a_nnz: u32,
    hg_a_rank: u32,
    hg_a_n: u32,
}
@group(0) @binding(4) var<uniform> hg_u: HgUniform;
@group(0) @binding(5) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_err: vec2<u32>;
var<private> hg_w_mark: vec2<u32>;
var<private> hg_w_ix: vec2<u32>;
var<private> hg_w_mt: vec2<u32>;
var<private> hg_bad: u32;

fn store_err(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_err.x;
    if (hg_k >= hg_w_err.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_err[hg_k] = hg_v;
}
fn load_mark(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_mark.x;
    if (hg_k >= hg_w_mark.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_mark[hg_k];
}
fn load_ix(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_ix.x;
    if (hg_k >= hg_w_ix.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_ix[hg_k];
}
fn load_mt(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_mt.x;
    if (hg_k >= hg_w_mt.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_mt[hg_k];
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_err = vec2<u32>(hg_u.hg_d_err, arrayLength(&hg_m_err));
    hg_w_mark = vec2<u32>(hg_u.hg_d_mark, arrayLength(&hg_m_mark));
    hg_w_ix = vec2<u32>(hg_u.hg_d_ix, arrayLength(&hg_m_ix));
    hg_w_mt = vec2<u32>(hg_u.hg_d_mt, arrayLength(&hg_m_mt));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let nnz: u32 = hg_u.hg_a_nnz;
    let rank: u32 = hg_u.hg_a_rank;
    let n: u32 = hg_u.hg_a_n;
    var i: u32 = hg_gid0;
    if (i >= nnz) {
        return;
    }
    var fi: u32 = 0u;
    for (var d: u32 = 0u; d < rank; d++) {
        fi = fi + (load_ix(2u * ((i * rank) + d)) * load_mt((2u * d) + 1u));
    }
    if (fi >= n) {
        return;
    }
    if (load_mark(fi) != (i + 1u)) {
        store_err(0u, 1u);
    }
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
