@group(0) @binding(0) var<storage, read_write> hg_m_y: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_x: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_y: u32,
    hg_d_x: u32,
    hg_a_a: f32,
    hg_a_n: u32,
}
@group(0) @binding(2) var<uniform> hg_u: HgUniform;
@group(0) @binding(3) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_y: vec2<u32>;
var<private> hg_w_x: vec2<u32>;
var<private> hg_bad: u32;

fn load_y(hg_i: u32) -> f32 {
    let hg_k = hg_i + hg_w_y.x;
    if (hg_k >= hg_w_y.y) {
        hg_bad = 1u;
        return 0.0f;
    }
    return bitcast<f32>(hg_m_y[hg_k]);
}
fn store_y(hg_i: u32, hg_v: f32) {
    let hg_k = hg_i + hg_w_y.x;
    if (hg_k >= hg_w_y.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_y[hg_k] = bitcast<u32>(hg_v);
}
fn load_x(hg_i: u32) -> f32 {
    let hg_k = hg_i + hg_w_x.x;
    if (hg_k >= hg_w_x.y) {
        hg_bad = 1u;
        return 0.0f;
    }
    return bitcast<f32>(hg_m_x[hg_k]);
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_y = vec2<u32>(hg_u.hg_d_y, arrayLength(&hg_m_y));
    hg_w_x = vec2<u32>(hg_u.hg_d_x, arrayLength(&hg_m_x));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let a: f32 = hg_u.hg_a_a;
    let n: u32 = hg_u.hg_a_n;
    var i: u32 = hg_gid0;
    if (i >= n) {
        return;
    }
    store_y(i, fma(a, load_x(i), load_y(i)));
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
