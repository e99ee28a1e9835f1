@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_src: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_src: u32,
    hg_a_nx: u32,
    hg_a_ny: u32,
    hg_a_nz: u32,
    hg_a_wpe: u32,
    hg_a_woff: u32,
    hg_a_nsrc: u32,
    hg_a_hp: u32,
    hg_a_hr: u32,
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
    let nx: u32 = hg_u.hg_a_nx;
    let ny: u32 = hg_u.hg_a_ny;
    let nz: u32 = hg_u.hg_a_nz;
    let wpe: u32 = hg_u.hg_a_wpe;
    let woff: u32 = hg_u.hg_a_woff;
    let nsrc: u32 = hg_u.hg_a_nsrc;
    let hp: u32 = hg_u.hg_a_hp;
    let hr: u32 = hg_u.hg_a_hr;
    var x: u32 = hg_gid0;
    var y: u32 = hg_gid1;
    var z: u32 = hg_gid2;
    if (((x >= nx) || (y >= ny)) || (z >= nz)) {
        return;
    }
    var f: u32 = (((z * ny) + y) * nx) + x;
    var hm: u32 = (1u << hp) - 1u;
    var hx: u32 = 0u;
    for (var k: u32 = 0u; k < hr; k++) {
        hx = hx | (((f >> (hp * ((hr - 1u) - k))) & hm) << (k * hp));
    }
    var x0: u32 = hx & hm;
    var hq: u32 = (1u << hp) >> 1u;
    while (hq > 1u) {
        var p: u32 = hq - 1u;
        if ((x0 & hq) != 0u) {
            x0 = x0 ^ p;
        }
        for (var k: u32 = 1u; k < hr; k++) {
            var sh: u32 = k * hp;
            var xi: u32 = (hx >> sh) & hm;
            if ((xi & hq) != 0u) {
                x0 = x0 ^ p;
            } else {
                var t: u32 = (x0 ^ xi) & p;
                x0 = x0 ^ t;
                hx = hx ^ (t << sh);
            }
        }
        hq = hq >> 1u;
    }
    var prev: u32 = x0;
    for (var k: u32 = 1u; k < hr; k++) {
        var sh: u32 = k * hp;
        var xi: u32 = ((hx >> sh) & hm) ^ prev;
        hx = (hx & (~(hm << sh))) | (xi << sh);
        prev = xi;
    }
    var tt: u32 = 0u;
    hq = (1u << hp) >> 1u;
    while (hq > 1u) {
        if ((prev & hq) != 0u) {
            tt = tt ^ (hq - 1u);
        }
        hq = hq >> 1u;
    }
    x0 = x0 ^ tt;
    var so: u32 = 0u;
    for (var b: u32 = 0u; b < hp; b++) {
        for (var d: u32 = 0u; d < hr; d++) {
            var xd: u32 = select(((hx >> (d * hp)) & hm) ^ tt, x0, d == 0u);
            so = so | (((xd >> b) & 1u) << ((((b * hr) + hr) - 1u) - d));
        }
    }
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
