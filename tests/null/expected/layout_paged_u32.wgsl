@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_pool: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_bt: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_sp: array<u32>;
@group(0) @binding(4) var<storage, read_write> hg_m_ts: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_pool: u32,
    hg_d_bt: u32,
    hg_d_sp: u32,
    hg_d_ts: u32,
    hg_a_row: u32,
    hg_a_ntok: u32,
    hg_a_nseq: u32,
    hg_a_ps: u32,
    hg_a_npages: u32,
    hg_a_nbt: u32,
    hg_a_iw: u32,
    hg_a_wpe: u32,
    hg_a_npool: u32,
}
@group(0) @binding(5) var<uniform> hg_u: HgUniform;
@group(0) @binding(6) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_dst: vec2<u32>;
var<private> hg_w_pool: vec2<u32>;
var<private> hg_w_bt: vec2<u32>;
var<private> hg_w_sp: vec2<u32>;
var<private> hg_w_ts: vec2<u32>;
var<private> hg_bad: u32;

fn store_dst(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_dst.x;
    if (hg_k >= hg_w_dst.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_dst[hg_k] = hg_v;
}
fn load_pool(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_pool.x;
    if (hg_k >= hg_w_pool.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_pool[hg_k];
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
fn load_ts(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_ts.x;
    if (hg_k >= hg_w_ts.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_ts[hg_k];
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_dst = vec2<u32>(hg_u.hg_d_dst, arrayLength(&hg_m_dst));
    hg_w_pool = vec2<u32>(hg_u.hg_d_pool, arrayLength(&hg_m_pool));
    hg_w_bt = vec2<u32>(hg_u.hg_d_bt, arrayLength(&hg_m_bt));
    hg_w_sp = vec2<u32>(hg_u.hg_d_sp, arrayLength(&hg_m_sp));
    hg_w_ts = vec2<u32>(hg_u.hg_d_ts, arrayLength(&hg_m_ts));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let row: u32 = hg_u.hg_a_row;
    let ntok: u32 = hg_u.hg_a_ntok;
    let nseq: u32 = hg_u.hg_a_nseq;
    let ps: u32 = hg_u.hg_a_ps;
    let npages: u32 = hg_u.hg_a_npages;
    let nbt: u32 = hg_u.hg_a_nbt;
    let iw: u32 = hg_u.hg_a_iw;
    let wpe: u32 = hg_u.hg_a_wpe;
    let npool: u32 = hg_u.hg_a_npool;
    var x: u32 = hg_gid0;
    var y: u32 = hg_gid1;
    if ((x >= row) || (y >= ntok)) {
        return;
    }
    var lo: u32 = 0u;
    var hi: u32 = nseq;
    while ((hi - lo) > 1u) {
        var md: u32 = lo + ((hi - lo) / 2u);
        if (load_ts(md) <= y) {
            lo = md;
        } else {
            hi = md;
        }
    }
    var t: u32 = y - load_ts(lo);
    var slot: u32 = load_sp(lo * iw) + (t / ps);
    var hg_t0: u32;
    if (slot < nbt) {
        hg_t0 = load_bt(slot * iw);
    } else {
        hg_t0 = npages;
    }
    var page: u32 = hg_t0;
    var ok: u32 = select(0u, 1u, page < npages);
    var src: u32 = 0u;
    if (ok != 0u) {
        src = ((((page * ps) + (t % ps)) * row) + x) * wpe;
    }
    var o: u32 = ((y * row) + x) * wpe;
    for (var w: u32 = 0u; w < wpe; w++) {
        var v: u32 = 0u;
        if ((ok != 0u) && ((src + w) < npool)) {
            v = load_pool(src + w);
        }
        store_dst(o + w, v);
    }
}

@compute @workgroup_size(64, 4, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
