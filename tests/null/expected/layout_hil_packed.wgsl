@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> hg_m_src: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_src: u32,
    hg_a_n: u32,
    hg_a_nx: u32,
    hg_a_ny: u32,
    hg_a_nz: u32,
    hg_a_bits: u32,
    hg_a_epu: u32,
    hg_a_upb: u32,
    hg_a_nunits: u32,
    hg_a_doff: u32,
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
    let hg_k = (hg_i >> 2u) + hg_w_dst.x;
    if (hg_k >= hg_w_dst.y) {
        hg_bad = 1u;
        return;
    }
    let hg_s = (hg_i & 3u) * 8u;
    atomicAnd(&hg_m_dst[hg_k], ~(0xffu << hg_s));
    atomicOr(&hg_m_dst[hg_k], (hg_v & 0xffu) << hg_s);
}
fn load_src(hg_i: u32) -> u32 {
    let hg_k = (hg_i >> 2u) + hg_w_src.x;
    if (hg_k >= hg_w_src.y) {
        hg_bad = 1u;
        return 0u;
    }
    return ((hg_m_src[hg_k] >> ((hg_i & 3u) * 8u)) & 0xffu);
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_dst = vec2<u32>(hg_u.hg_d_dst, arrayLength(&hg_m_dst));
    hg_w_src = vec2<u32>(hg_u.hg_d_src, arrayLength(&hg_m_src));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n: u32 = hg_u.hg_a_n;
    let nx: u32 = hg_u.hg_a_nx;
    let ny: u32 = hg_u.hg_a_ny;
    let nz: u32 = hg_u.hg_a_nz;
    let bits: u32 = hg_u.hg_a_bits;
    let epu: u32 = hg_u.hg_a_epu;
    let upb: u32 = hg_u.hg_a_upb;
    let nunits: u32 = hg_u.hg_a_nunits;
    let doff: u32 = hg_u.hg_a_doff;
    let nsrc: u32 = hg_u.hg_a_nsrc;
    let hp: u32 = hg_u.hg_a_hp;
    let hr: u32 = hg_u.hg_a_hr;
    var u: u32 = hg_gid0;
    if (u >= nunits) {
        return;
    }
    var acc: u32 = 0u;
    for (var e: u32 = 0u; e < epu; e++) {
        var f: u32 = (u * epu) + e;
        if (f < n) {
            var x: u32 = f % nx;
            var yz: u32 = f / nx;
            var y: u32 = yz % ny;
            var z: u32 = yz / ny;
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
            var bit: u32 = so * bits;
            var at: u32 = doff + (bit >> 3u);
            var sh: u32 = bit & 7u;
            var code: u32 = 0u;
            if (at < nsrc) {
                code = load_src(at) >> sh;
            }
            if (((sh + bits) > 8u) && ((at + 1u) < nsrc)) {
                code = code | (load_src(at + 1u) << (8u - sh));
            }
            acc = acc | ((code & ((1u << bits) - 1u)) << (e * bits));
        }
    }
    for (var b: u32 = 0u; b < upb; b++) {
        store_dst((u * upb) + b, (acc >> (8u * b)) & 255u);
    }
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
