@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> hg_m_data: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_lut: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_scales: array<u32>;
@group(0) @binding(4) var<storage, read_write> hg_m_err: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_data: u32,
    hg_d_lut: u32,
    hg_d_scales: u32,
    hg_d_err: u32,
    hg_a_n: u32,
    hg_a_ept: u32,
    hg_a_doff: u32,
    hg_a_bits: u32,
    hg_a_chk: u32,
    hg_a_mode: u32,
    hg_a_nparam: u32,
    hg_a_inner: u32,
    hg_a_dm1: u32,
    hg_a_dsh1: u32,
    hg_a_ssize: u32,
    hg_a_dm2: u32,
    hg_a_dsh2: u32,
    hg_a_omul: u32,
    hg_a_kshift: u32,
    hg_a_ntt: u32,
    hg_a_nspan: u32,
}
@group(0) @binding(5) var<uniform> hg_u: HgUniform;
@group(0) @binding(6) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_dst: vec2<u32>;
var<private> hg_w_data: vec2<u32>;
var<private> hg_w_lut: vec2<u32>;
var<private> hg_w_scales: vec2<u32>;
var<private> hg_w_err: vec2<u32>;
var<private> hg_bad: u32;

fn hg_umulhi(a: u32, b: u32) -> u32 {
    // The high word of the 64-bit product from 16-bit halves (WGSL has no umulExtended).
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let lh = al * bh;
    let hl = ah * bl;
    let mid = ((al * bl) >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    return ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
}

fn hg_f32_to_f16(v: f32) -> u32 {
    var b: u32 = bitcast<u32>(v);
    var sign: u32 = (b >> 16u) & 0x8000u;
    var a: u32 = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        var m: u32 = (a >> 13u) & 0x3ffu;
        return (sign | 0x7c00u) | select(m, 1u, m == 0u);
    }
    if (a >= 0x477ff000u) {
        return sign | 0x7c00u;
    }
    if (a >= 0x38800000u) {
        return sign | ((((a + 0xfffu) + ((a >> 13u) & 1u)) - 0x38000000u) >> 13u);
    }
    var e: u32 = a >> 23u;
    if (e < 102u) {
        return sign;
    }
    var m: u32 = (a & 0x7fffffu) | 0x800000u;
    var s: u32 = 126u - e;
    return sign | ((((m + (1u << (s - 1u))) - 1u) + ((m >> s) & 1u)) >> s);
}

fn store_dst(hg_i: u32, hg_v: u32) {
    let hg_k = (hg_i >> 1u) + hg_w_dst.x;
    if (hg_k >= hg_w_dst.y) {
        hg_bad = 1u;
        return;
    }
    let hg_s = (hg_i & 1u) * 16u;
    atomicAnd(&hg_m_dst[hg_k], ~(0xffffu << hg_s));
    atomicOr(&hg_m_dst[hg_k], (hg_v & 0xffffu) << hg_s);
}
fn load_data(hg_i: u32) -> u32 {
    let hg_k = (hg_i >> 2u) + hg_w_data.x;
    if (hg_k >= hg_w_data.y) {
        hg_bad = 1u;
        return 0u;
    }
    return ((hg_m_data[hg_k] >> ((hg_i & 3u) * 8u)) & 0xffu);
}
fn load_lut(hg_i: u32) -> f32 {
    let hg_k = hg_i + hg_w_lut.x;
    if (hg_k >= hg_w_lut.y) {
        hg_bad = 1u;
        return 0.0f;
    }
    return bitcast<f32>(hg_m_lut[hg_k]);
}
fn load_scales(hg_i: u32) -> u32 {
    let hg_k = (hg_i >> 2u) + hg_w_scales.x;
    if (hg_k >= hg_w_scales.y) {
        hg_bad = 1u;
        return 0u;
    }
    return ((hg_m_scales[hg_k] >> ((hg_i & 3u) * 8u)) & 0xffu);
}
fn load_err(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_err.x;
    if (hg_k >= hg_w_err.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_err[hg_k];
}
fn store_err(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_err.x;
    if (hg_k >= hg_w_err.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_err[hg_k] = hg_v;
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_dst = vec2<u32>(hg_u.hg_d_dst, arrayLength(&hg_m_dst));
    hg_w_data = vec2<u32>(hg_u.hg_d_data, arrayLength(&hg_m_data));
    hg_w_lut = vec2<u32>(hg_u.hg_d_lut, arrayLength(&hg_m_lut));
    hg_w_scales = vec2<u32>(hg_u.hg_d_scales, arrayLength(&hg_m_scales));
    hg_w_err = vec2<u32>(hg_u.hg_d_err, arrayLength(&hg_m_err));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n: u32 = hg_u.hg_a_n;
    let ept: u32 = hg_u.hg_a_ept;
    let doff: u32 = hg_u.hg_a_doff;
    let bits: u32 = hg_u.hg_a_bits;
    let chk: u32 = hg_u.hg_a_chk;
    let mode: u32 = hg_u.hg_a_mode;
    let nparam: u32 = hg_u.hg_a_nparam;
    let inner: u32 = hg_u.hg_a_inner;
    let dm1: u32 = hg_u.hg_a_dm1;
    let dsh1: u32 = hg_u.hg_a_dsh1;
    let ssize: u32 = hg_u.hg_a_ssize;
    let dm2: u32 = hg_u.hg_a_dm2;
    let dsh2: u32 = hg_u.hg_a_dsh2;
    let omul: u32 = hg_u.hg_a_omul;
    let kshift: u32 = hg_u.hg_a_kshift;
    let ntt: u32 = hg_u.hg_a_ntt;
    let nspan: u32 = hg_u.hg_a_nspan;
    var first: u32 = hg_gid0 * ept;
    if (first >= n) {
        return;
    }
    var last: u32 = min(first + ept, n);
    var t1: u32 = hg_umulhi(first, dm1);
    var q1: u32 = (t1 + ((first - t1) >> (dsh1 & 255u))) >> (dsh1 >> 8u);
    var r: u32 = first - (q1 * inner);
    var t2: u32 = hg_umulhi(q1, dm2);
    var o: u32 = (t2 + ((q1 - t2) >> (dsh2 & 255u))) >> (dsh2 >> 8u);
    var a: u32 = q1 - (o * ssize);
    var i: u32 = first;
    var s: f32 = 1.0f;
    while (i < last) {
        var end: u32 = last;
        if (mode != 0u) {
            var p: u32 = (((o * inner) + r) * omul) + (a >> kshift);
            if (p >= nparam) {
                store_err(0u, 2u);
                return;
            }
            var run: u32 = 1u;
            if (inner == 1u) {
                run = min((1u << kshift) - (a & ((1u << kshift) - 1u)), ssize - a);
            }
            end = min(i + run, last);
            if (mode == 1u) {
                var at: u32 = p * 4u;
                var w: u32 = ((load_scales(at) | (load_scales(at + 1u) << 8u)) | (load_scales(at + 2u) << 16u)) | (load_scales(at + 3u) << 24u);
                if (((w & 0x7f800000u) == 0x7f800000u) || (w > 0x80000000u)) {
                    store_err(0u, 1u);
                }
                s = bitcast<f32>(w);
            } else {
                var e: u32 = load_scales(p);
                if ((e == 0u) || (e == 255u)) {
                    store_err(0u, 1u);
                }
                s = bitcast<f32>(e << 23u);
            }
            if (inner == 1u) {
                a = a + run;
            } else {
                r = r + 1u;
                if (r == inner) {
                    r = 0u;
                    a = a + 1u;
                }
            }
            if (a == ssize) {
                a = 0u;
                o = o + 1u;
            }
        }
        if (mode == 1u) {
            for (; i < end; i++) {
                var f: u32 = i;
                var nx: u32 = max(load_err(1u), 1u);
                var ny: u32 = max(load_err(2u), 1u);
                var x: u32 = f % nx;
                var yz: u32 = f / nx;
                var y: u32 = yz % ny;
                var top: u32 = ntt - 1u;
                var so: u32 = (load_err(min(3u + x, top)) + load_err(min((3u + nx) + y, top))) + load_err(min(((3u + nx) + ny) + (yz / ny), top));
                if (so >= nspan) {
                    so = 0u;
                }
                var code: u32 = 0u;
                if (bits == 8u) {
                    code = load_data(doff + so);
                } else if (bits < 8u) {
                    var bit: u32 = so * bits;
                    var at: u32 = doff + (bit >> 3u);
                    var sh: u32 = bit & 7u;
                    code = load_data(at) >> sh;
                    if ((sh + bits) > 8u) {
                        code = code | (load_data(at + 1u) << (8u - sh));
                    }
                    code = code & ((1u << bits) - 1u);
                } else if (bits == 16u) {
                    var at: u32 = doff + (so * 2u);
                    code = load_data(at) | (load_data(at + 1u) << 8u);
                } else {
                    var at: u32 = doff + (so * 4u);
                    code = ((load_data(at) | (load_data(at + 1u) << 8u)) | (load_data(at + 2u) << 16u)) | (load_data(at + 3u) << 24u);
                }
                {
                    var k: u32 = i;
                    var v: f32 = s * load_lut(code);
                    store_dst(k, hg_f32_to_f16(v));
                }
            }
        } else {
            for (; i < end; i++) {
                var f: u32 = i;
                var nx: u32 = max(load_err(1u), 1u);
                var ny: u32 = max(load_err(2u), 1u);
                var x: u32 = f % nx;
                var yz: u32 = f / nx;
                var y: u32 = yz % ny;
                var top: u32 = ntt - 1u;
                var so: u32 = (load_err(min(3u + x, top)) + load_err(min((3u + nx) + y, top))) + load_err(min(((3u + nx) + ny) + (yz / ny), top));
                if (so >= nspan) {
                    so = 0u;
                }
                var code: u32 = 0u;
                if (bits == 8u) {
                    code = load_data(doff + so);
                } else if (bits < 8u) {
                    var bit: u32 = so * bits;
                    var at: u32 = doff + (bit >> 3u);
                    var sh: u32 = bit & 7u;
                    code = load_data(at) >> sh;
                    if ((sh + bits) > 8u) {
                        code = code | (load_data(at + 1u) << (8u - sh));
                    }
                    code = code & ((1u << bits) - 1u);
                } else if (bits == 16u) {
                    var at: u32 = doff + (so * 2u);
                    code = load_data(at) | (load_data(at + 1u) << 8u);
                } else {
                    var at: u32 = doff + (so * 4u);
                    code = ((load_data(at) | (load_data(at + 1u) << 8u)) | (load_data(at + 2u) << 16u)) | (load_data(at + 3u) << 24u);
                }
                {
                    var k: u32 = i;
                    if ((chk != 0u) && ((code == 0u) || (code == 255u))) {
                        store_err(0u, 1u);
                    }
                    var v: f32 = load_lut(code);
                    if ((mode != 0u) && (((bitcast<u32>(v)) & 0x7fffffffu) <= 0x7f800000u)) {
                        v = s * v;
                    }
                    store_dst(k, hg_f32_to_f16(v));
                }
            }
        }
    }
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
