@group(0) @binding(0) var<storage, read_write> hg_m_err: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_bt: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_sp: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_err: u32,
    hg_d_bt: u32,
    hg_d_sp: u32,
    hg_a_nbt: u32,
    hg_a_nseq: u32,
    hg_a_npages: u32,
    hg_a_iw: u32,
}
@group(0) @binding(3) var<uniform> hg_u: HgUniform;
@group(0) @binding(4) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_err: vec2<u32>;
var<private> hg_w_bt: vec2<u32>;
var<private> hg_w_sp: vec2<u32>;
var<private> hg_bad: u32;

fn store_err(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_err.x;
    if (hg_k >= hg_w_err.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_err[hg_k] = hg_v;
}
fn load_bt(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_bt.x;
    if (hg_k >= hg_w_bt.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_bt[hg_k];
}
fn load_sp(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_sp.x;
    if (hg_k >= hg_w_sp.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_sp[hg_k];
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_err = vec2<u32>(hg_u.hg_d_err, arrayLength(&hg_m_err));
    hg_w_bt = vec2<u32>(hg_u.hg_d_bt, arrayLength(&hg_m_bt));
    hg_w_sp = vec2<u32>(hg_u.hg_d_sp, arrayLength(&hg_m_sp));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let nbt: u32 = hg_u.hg_a_nbt;
    let nseq: u32 = hg_u.hg_a_nseq;
    let npages: u32 = hg_u.hg_a_npages;
    let iw: u32 = hg_u.hg_a_iw;
    var j: u32 = hg_gid0;
    if (j < nbt) {
        if (load_bt(j * iw) >= npages) {
            store_err(0u, 1u);
        }
        if ((iw == 2u) && (load_bt((j * 2u) + 1u) != 0u)) {
            store_err(0u, 1u);
        }
    }
    if (j <= nseq) {
        var v: u32 = load_sp(j * iw);
        if ((iw == 2u) && (load_sp((j * 2u) + 1u) != 0u)) {
            store_err(0u, 1u);
        }
        if ((j == 0u) && (v != 0u)) {
            store_err(0u, 1u);
        }
        if ((j == nseq) && (v != nbt)) {
            store_err(0u, 1u);
        }
        if ((j > 0u) && (v < load_sp((j - 1u) * iw))) {
            store_err(0u, 1u);
        }
    }
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
