@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_lp: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_lp: u32,
    hg_a_n: u32,
    hg_a_d0: u32,
    hg_a_nd: u32,
    hg_a_base: u32,
    hg_a_dat: u32,
}
@group(0) @binding(2) var<uniform> hg_u: HgUniform;
@group(0) @binding(3) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_dst: vec2<u32>;
var<private> hg_w_lp: vec2<u32>;
var<private> hg_bad: u32;

fn store_dst(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_dst.x;
    if (hg_k >= hg_w_dst.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_dst[hg_k] = hg_v;
}
fn load_lp(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_lp.x;
    if (hg_k >= hg_w_lp.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_lp[hg_k];
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_dst = vec2<u32>(hg_u.hg_d_dst, arrayLength(&hg_m_dst));
    hg_w_lp = vec2<u32>(hg_u.hg_d_lp, arrayLength(&hg_m_lp));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n: u32 = hg_u.hg_a_n;
    let d0: u32 = hg_u.hg_a_d0;
    let nd: u32 = hg_u.hg_a_nd;
    let base: u32 = hg_u.hg_a_base;
    let dat: u32 = hg_u.hg_a_dat;
    var j: u32 = hg_gid0;
    if (j >= n) {
        return;
    }
    var off: u32 = base;
    var rest: u32 = j;
    var k: u32 = d0 + nd;
    while (k > d0) {
        k = k - 1u;
        var at: u32 = k * 22u;
        var ext: u32 = max(load_lp(at), 1u);
        var x: u32 = rest % ext;
        rest = rest / ext;
        if (load_lp(at + 1u) == 0u) {
            var nlev: u32 = min(load_lp(at + 2u), 9u);
            for (var l: u32 = 0u; l < nlev; l++) {
                var t: u32 = max(load_lp((at + 4u) + (2u * l)), 1u);
                var q: u32 = x / t;
                x = x - (q * t);
                off = off + (q * load_lp((at + 5u) + (2u * l)));
            }
            off = off + (x * load_lp(at + 3u));
        } else {
            var nb: u32 = min(load_lp(at + 2u), 32u);
            var d: u32 = load_lp(at + 3u);
            var r: u32 = load_lp(at + 4u);
            for (var b: u32 = 0u; b < nb; b++) {
                var pos: u32 = (b * r) + d;
                if (pos < 32u) {
                    off = off + (((x >> b) & 1u) << pos);
                }
            }
        }
    }
    store_dst(dat + j, off);
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
