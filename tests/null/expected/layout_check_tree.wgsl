@group(0) @binding(0) var<storage, read_write> hg_m_err: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_ix: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_err: u32,
    hg_d_ix: u32,
    hg_a_nodes: u32,
    hg_a_pos_off: u32,
    hg_a_crd_off: u32,
    hg_a_ncrd: u32,
    hg_a_extent: u32,
    hg_a_nix: u32,
    hg_a_span: u32,
}
@group(0) @binding(2) var<uniform> hg_u: HgUniform;
@group(0) @binding(3) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_err: vec2<u32>;
var<private> hg_w_ix: vec2<u32>;
var<private> hg_bad: u32;

fn store_err(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_err.x;
    if (hg_k >= hg_w_err.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_err[hg_k] = hg_v;
}
fn load_ix(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_ix.x;
    if (hg_k >= hg_w_ix.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_ix[hg_k];
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_err = vec2<u32>(hg_u.hg_d_err, arrayLength(&hg_m_err));
    hg_w_ix = vec2<u32>(hg_u.hg_d_ix, arrayLength(&hg_m_ix));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let nodes: u32 = hg_u.hg_a_nodes;
    let pos_off: u32 = hg_u.hg_a_pos_off;
    let crd_off: u32 = hg_u.hg_a_crd_off;
    let ncrd: u32 = hg_u.hg_a_ncrd;
    let extent: u32 = hg_u.hg_a_extent;
    let nix: u32 = hg_u.hg_a_nix;
    let span: u32 = hg_u.hg_a_span;
    var q: u32 = hg_gid0;
    if (q >= nodes) {
        return;
    }
    var pa: u32 = pos_off + (2u * q);
    if ((pa + 2u) >= nix) {
        store_err(0u, 1u);
        return;
    }
    var a: u32 = load_ix(pa);
    var b: u32 = load_ix(pa + 2u);
    if ((q == 0u) && (a != 0u)) {
        store_err(0u, 1u);
    }
    if (((q + 1u) == nodes) && (b != ncrd)) {
        store_err(0u, 1u);
    }
    if ((a > b) || (b > ncrd)) {
        store_err(0u, 1u);
        return;
    }
    var sp: u32 = max(span, 1u);
    if (hg_gid1 > ((b - a) / sp)) {
        return;
    }
    var k0: u32 = a + (hg_gid1 * sp);
    var k1: u32 = k0 + min(b - k0, sp);
    var prev: u32 = 0u;
    if ((k0 > a) && (((crd_off + (2u * k0)) - 2u) < nix)) {
        prev = load_ix((crd_off + (2u * k0)) - 2u);
    }
    for (var k: u32 = k0; k < k1; k++) {
        var c: u32 = crd_off + (2u * k);
        var hg_t0: u32;
        if (c < nix) {
            hg_t0 = load_ix(c);
        } else {
            hg_t0 = extent;
        }
        var v: u32 = hg_t0;
        if ((v >= extent) || ((k > a) && (v <= prev))) {
            store_err(0u, 1u);
            return;
        }
        prev = v;
    }
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
