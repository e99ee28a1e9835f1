@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> hg_m_vals: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_ix: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_mt: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_vals: u32,
    hg_d_ix: u32,
    hg_d_mt: u32,
    hg_a_nnz: u32,
    hg_a_n: u32,
    hg_a_wpe: u32,
    hg_a_nix: u32,
    hg_a_nlev: u32,
}
@group(0) @binding(4) var<uniform> hg_u: HgUniform;
@group(0) @binding(5) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_dst: vec2<u32>;
var<private> hg_w_vals: vec2<u32>;
var<private> hg_w_ix: vec2<u32>;
var<private> hg_w_mt: vec2<u32>;
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
fn load_vals(hg_i: u32) -> u32 {
    let hg_k = (hg_i >> 2u) + hg_w_vals.x;
    if (hg_k >= hg_w_vals.y) {
        hg_bad = 1u;
        return 0u;
    }
    return ((hg_m_vals[hg_k] >> ((hg_i & 3u) * 8u)) & 0xffu);
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
    hg_w_dst = vec2<u32>(hg_u.hg_d_dst, arrayLength(&hg_m_dst));
    hg_w_vals = vec2<u32>(hg_u.hg_d_vals, arrayLength(&hg_m_vals));
    hg_w_ix = vec2<u32>(hg_u.hg_d_ix, arrayLength(&hg_m_ix));
    hg_w_mt = vec2<u32>(hg_u.hg_d_mt, arrayLength(&hg_m_mt));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let nnz: u32 = hg_u.hg_a_nnz;
    let n: u32 = hg_u.hg_a_n;
    let wpe: u32 = hg_u.hg_a_wpe;
    let nix: u32 = hg_u.hg_a_nix;
    let nlev: u32 = hg_u.hg_a_nlev;
    var i: u32 = hg_gid0;
    if (i >= nnz) {
        return;
    }
    var fi: u32 = 0u;
    var p: u32 = i;
    var ok: u32 = 1u;
    var l: u32 = nlev;
    while (l > 0u) {
        l = l - 1u;
        var at: u32 = l * 6u;
        var coord: u32 = p;
        if (load_mt(at + 5u) == 0u) {
            var c: u32 = load_mt(at) + (2u * p);
            var hg_t0: u32;
            if (c < nix) {
                hg_t0 = load_ix(c);
            } else {
                hg_t0 = 0xffffffffu;
            }
            coord = hg_t0;
        }
        if (coord >= load_mt(at + 4u)) {
            ok = 0u;
        }
        fi = fi + (coord * load_mt(at + 3u));
        if (l > 0u) {
            var po: u32 = load_mt(at + 1u);
            var lo: u32 = 0u;
            var hi: u32 = max(load_mt(at + 2u), 1u) - 1u;
            while ((hi - lo) > 1u) {
                var md: u32 = lo + ((hi - lo) / 2u);
                var c: u32 = po + (2u * md);
                var hg_t1: u32;
                if (c < nix) {
                    hg_t1 = load_ix(c);
                } else {
                    hg_t1 = 0xffffffffu;
                }
                var v: u32 = hg_t1;
                if (v <= p) {
                    lo = md;
                } else {
                    hi = md;
                }
            }
            p = lo;
        }
    }
    if ((ok == 0u) || (fi >= n)) {
        return;
    }
    for (var w: u32 = 0u; w < wpe; w++) {
        store_dst((fi * wpe) + w, load_vals((i * wpe) + w));
    }
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
