@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_src: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_src: u32,
    hg_a_rows: u32,
    hg_a_cols: u32,
}
@group(0) @binding(2) var<uniform> hg_u: HgUniform;
@group(0) @binding(3) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_dst: vec2<u32>;
var<private> hg_w_src: vec2<u32>;
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

fn hg_main(hg_id: vec3<u32>) {
    hg_w_dst = vec2<u32>(hg_u.hg_d_dst, arrayLength(&hg_m_dst));
    hg_w_src = vec2<u32>(hg_u.hg_d_src, arrayLength(&hg_m_src));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let rows: u32 = hg_u.hg_a_rows;
    let cols: u32 = hg_u.hg_a_cols;
    var c: u32 = hg_gid0;
    var r: u32 = hg_gid1;
    if ((c >= cols) || (r >= rows)) {
        return;
    }
    store_dst((c * rows) + r, load_src((r * cols) + c));
}

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
