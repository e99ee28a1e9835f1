@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_src: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_tx: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_ty: array<u32>;
@group(0) @binding(4) var<storage, read_write> hg_m_tz: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_src: u32,
    hg_d_tx: u32,
    hg_d_ty: u32,
    hg_d_tz: u32,
    hg_a_nx: u32,
    hg_a_ny: u32,
    hg_a_nz: u32,
    hg_a_wpe: u32,
    hg_a_woff: u32,
    hg_a_nsrc: u32,
}
@group(0) @binding(5) var<uniform> hg_u: HgUniform;
@group(0) @binding(6) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_dst: vec2<u32>;
var<private> hg_w_src: vec2<u32>;
var<private> hg_w_tx: vec2<u32>;
var<private> hg_w_ty: vec2<u32>;
var<private> hg_w_tz: vec2<u32>;
var<private> hg_bad: u32;

fn store_dst(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_dst.x;
    if (hg_k >= hg_w_dst.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_dst[hg_k] = hg_v;
}
fn load_src(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_src.x;
    if (hg_k >= hg_w_src.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_src[hg_k];
}
fn load_tx(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_tx.x;
    if (hg_k >= hg_w_tx.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_tx[hg_k];
}
fn load_ty(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_ty.x;
    if (hg_k >= hg_w_ty.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_ty[hg_k];
}
fn load_tz(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_tz.x;
    if (hg_k >= hg_w_tz.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_tz[hg_k];
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_dst = vec2<u32>(hg_u.hg_d_dst, arrayLength(&hg_m_dst));
    hg_w_src = vec2<u32>(hg_u.hg_d_src, arrayLength(&hg_m_src));
    hg_w_tx = vec2<u32>(hg_u.hg_d_tx, arrayLength(&hg_m_tx));
    hg_w_ty = vec2<u32>(hg_u.hg_d_ty, arrayLength(&hg_m_ty));
    hg_w_tz = vec2<u32>(hg_u.hg_d_tz, arrayLength(&hg_m_tz));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let nx: u32 = hg_u.hg_a_nx;
    let ny: u32 = hg_u.hg_a_ny;
    let nz: u32 = hg_u.hg_a_nz;
    let wpe: u32 = hg_u.hg_a_wpe;
    let woff: u32 = hg_u.hg_a_woff;
    let nsrc: u32 = hg_u.hg_a_nsrc;
    var x: u32 = hg_gid0;
    var y: u32 = hg_gid1;
    var z: u32 = hg_gid2;
    if (((x >= nx) || (y >= ny)) || (z >= nz)) {
        return;
    }
    var f: u32 = (((z * ny) + y) * nx) + x;
    var so: u32 = (load_tz(z) + load_ty(y)) + load_tx(x);
    var s: u32 = woff + (so * wpe);
    if (wpe == 1u) {
        var hg_t0: u32;
        if (s < nsrc) {
            hg_t0 = load_src(s);
        } else {
            hg_t0 = 0u;
        }
        store_dst(f, hg_t0);
        return;
    }
    var o: u32 = f * wpe;
    for (var w: u32 = 0u; w < wpe; w++) {
        var v: u32 = 0u;
        if (((s + w) < nsrc) && ((s + w) >= s)) {
            v = load_src(s + w);
        }
        store_dst(o + w, v);
    }
}

@compute @workgroup_size(32, 8, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
