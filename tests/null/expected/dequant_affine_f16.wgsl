@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> hg_m_data: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_scales: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_zps: array<u32>;
@group(0) @binding(4) var<storage, read_write> hg_m_err: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_data: u32,
    hg_d_scales: u32,
    hg_d_zps: u32,
    hg_d_err: u32,
    hg_a_n: u32,
    hg_a_ept: u32,
    hg_a_doff: u32,
    hg_a_bits: u32,
    hg_a_sgn: u32,
    hg_a_mode: u32,
    hg_a_stype: u32,
    hg_a_zmode: u32,
    hg_a_zoff: u32,
    hg_a_nparam: u32,
    hg_a_inner: u32,
    hg_a_dm1: u32,
    hg_a_dsh1: u32,
    hg_a_ssize: u32,
    hg_a_dm2: u32,
    hg_a_dsh2: u32,
    hg_a_omul: u32,
    hg_a_kshift: u32,
    hg_a_zlo: i32,
    hg_a_zhi: i32,
    hg_a_sval: f32,
    hg_a_zval: i32,
}
@group(0) @binding(5) var<uniform> hg_u: HgUniform;
@group(0) @binding(6) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_dst: vec2<u32>;
var<private> hg_w_data: vec2<u32>;
var<private> hg_w_scales: vec2<u32>;
var<private> hg_w_zps: vec2<u32>;
var<private> hg_w_err: vec2<u32>;
var<private> hg_bad: u32;
var<private> hg_p_tf: array<f32, 16>;

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

fn hg_f16_to_f32(h: u32) -> f32 {
    var sign: u32 = (h & 0x8000u) << 16u;
    var expo: u32 = (h >> 10u) & 31u;
    var mant: u32 = h & 0x3ffu;
    if (expo == 31u) {
        return bitcast<f32>((sign | 0x7f800000u) | (mant << 13u));
    }
    if (expo != 0u) {
        return bitcast<f32>((sign | ((expo + 112u) << 23u)) | (mant << 13u));
    }
    return bitcast<f32>(sign | (bitcast<u32>(f32(mant) * (5.9604644775390625e-8f))));
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

fn hg_bf16_to_f32(h: u32) -> f32 {
    return bitcast<f32>((h & 0xffffu) << 16u);
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
fn load_scales(hg_i: u32) -> u32 {
    let hg_k = (hg_i >> 2u) + hg_w_scales.x;
    if (hg_k >= hg_w_scales.y) {
        hg_bad = 1u;
        return 0u;
    }
    return ((hg_m_scales[hg_k] >> ((hg_i & 3u) * 8u)) & 0xffu);
}
fn load_zps(hg_i: u32) -> u32 {
    let hg_k = (hg_i >> 2u) + hg_w_zps.x;
    if (hg_k >= hg_w_zps.y) {
        hg_bad = 1u;
        return 0u;
    }
    return ((hg_m_zps[hg_k] >> ((hg_i & 3u) * 8u)) & 0xffu);
}
fn store_err(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_err.x;
    if (hg_k >= hg_w_err.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_err[hg_k] = hg_v;
}
fn load_tf(hg_i: u32) -> f32 { return hg_p_tf[hg_i]; }
fn store_tf(hg_i: u32, hg_v: f32) { hg_p_tf[hg_i] = hg_v; }

fn hg_main(hg_id: vec3<u32>) {
    hg_w_dst = vec2<u32>(hg_u.hg_d_dst, arrayLength(&hg_m_dst));
    hg_w_data = vec2<u32>(hg_u.hg_d_data, arrayLength(&hg_m_data));
    hg_w_scales = vec2<u32>(hg_u.hg_d_scales, arrayLength(&hg_m_scales));
    hg_w_zps = vec2<u32>(hg_u.hg_d_zps, arrayLength(&hg_m_zps));
    hg_w_err = vec2<u32>(hg_u.hg_d_err, arrayLength(&hg_m_err));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n: u32 = hg_u.hg_a_n;
    let ept: u32 = hg_u.hg_a_ept;
    let doff: u32 = hg_u.hg_a_doff;
    let bits: u32 = hg_u.hg_a_bits;
    let sgn: u32 = hg_u.hg_a_sgn;
    let mode: u32 = hg_u.hg_a_mode;
    let stype: u32 = hg_u.hg_a_stype;
    let zmode: u32 = hg_u.hg_a_zmode;
    let zoff: u32 = hg_u.hg_a_zoff;
    let nparam: u32 = hg_u.hg_a_nparam;
    let inner: u32 = hg_u.hg_a_inner;
    let dm1: u32 = hg_u.hg_a_dm1;
    let dsh1: u32 = hg_u.hg_a_dsh1;
    let ssize: u32 = hg_u.hg_a_ssize;
    let dm2: u32 = hg_u.hg_a_dm2;
    let dsh2: u32 = hg_u.hg_a_dsh2;
    let omul: u32 = hg_u.hg_a_omul;
    let kshift: u32 = hg_u.hg_a_kshift;
    let zlo: i32 = hg_u.hg_a_zlo;
    let zhi: i32 = hg_u.hg_a_zhi;
    let sval: f32 = hg_u.hg_a_sval;
    let zval: i32 = hg_u.hg_a_zval;
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
    var sx: u32 = select(0u, 32u - bits, (sgn != 0u) && (bits < 32u));
    var s: f32 = sval;
    var z: i32 = zval;
    var built: u32 = 0u;
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
            if (stype == 3u) {
                var at: u32 = p * 4u;
                var w: u32 = ((load_scales(at) | (load_scales(at + 1u) << 8u)) | (load_scales(at + 2u) << 16u)) | (load_scales(at + 3u) << 24u);
                if (((w & 0x7f800000u) == 0x7f800000u) || ((w & 0x7fffffffu) == 0u)) {
                    store_err(0u, 1u);
                }
                s = bitcast<f32>(w);
            } else {
                var at: u32 = p * 2u;
                var h: u32 = load_scales(at) | (load_scales(at + 1u) << 8u);
                if (stype == 1u) {
                    if (((h & 0x7c00u) == 0x7c00u) || ((h & 0x7fffu) == 0u)) {
                        store_err(0u, 1u);
                    }
                    s = hg_f16_to_f32(h);
                } else {
                    if (((h & 0x7f80u) == 0x7f80u) || ((h & 0x7fffu) == 0u)) {
                        store_err(0u, 1u);
                    }
                    s = hg_bf16_to_f32(h);
                }
            }
            if (zmode != 0u) {
                var at: u32 = zoff + (p * 4u);
                z = i32(((load_zps(at) | (load_zps(at + 1u) << 8u)) | (load_zps(at + 2u) << 16u)) | (load_zps(at + 3u) << 24u));
                if ((z < zlo) || (z > zhi)) {
                    store_err(0u, 1u);
                }
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
        if (((end - i) >= 32u) && ((bits == 4u) || ((bits == 8u) && (zmode == 0u)))) {
            if (((zmode != 0u) || (built == 0u)) && (bits != 8u)) {
                for (var c: u32 = 0u; c < (1u << bits); c++) {
                    {
                        var code: u32 = c;
                        var k: u32 = c;
                        var q: i32 = i32(code << sx) >> sx;
                        store_tf(k, f32(i32(u32(q) - u32(z))));
                    }
                }
                built = 1u;
            }
            var stop: u32 = end;
            end = min(stop, (i + 7u) & 0xfffffff8u);
            for (; i < end; i++) {
                var code: u32 = 0u;
                if (bits == 8u) {
                    code = load_data(doff + i);
                } else if (bits < 8u) {
                    var bit: u32 = i * bits;
                    var at: u32 = doff + (bit >> 3u);
                    var sh: u32 = bit & 7u;
                    code = load_data(at) >> sh;
                    if ((sh + bits) > 8u) {
                        code = code | (load_data(at + 1u) << (8u - sh));
                    }
                    code = code & ((1u << bits) - 1u);
                } else if (bits == 16u) {
                    var at: u32 = doff + (i * 2u);
                    code = load_data(at) | (load_data(at + 1u) << 8u);
                } else {
                    var at: u32 = doff + (i * 4u);
                    code = ((load_data(at) | (load_data(at + 1u) << 8u)) | (load_data(at + 2u) << 16u)) | (load_data(at + 3u) << 24u);
                }
                {
                    var k: u32 = i;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
            }
            end = stop;
            var ngrp: u32 = (end - i) >> 3u;
            var gat: u32 = doff + ((i >> 3u) * bits);
            if (bits == 4u) {
                for (var hg_j: u32 = 0u; hg_j < ngrp; hg_j++) {
                    var hg_at: u32 = gat + (4u * hg_j);
                    var hg_k: u32 = i + (8u * hg_j);
                    var t0: f32 = load_tf(load_data(hg_at) & 15u);
                    store_dst(hg_k, hg_f32_to_f16(select(s * t0, t0, ((bitcast<u32>(t0)) & 0x7fffffffu) > 0x7f800000u)));
                    var t1: f32 = load_tf((load_data(hg_at) >> 4u) & 15u);
                    store_dst(hg_k + 1u, hg_f32_to_f16(select(s * t1, t1, ((bitcast<u32>(t1)) & 0x7fffffffu) > 0x7f800000u)));
                    var t2: f32 = load_tf(load_data(hg_at + 1u) & 15u);
                    store_dst(hg_k + 2u, hg_f32_to_f16(select(s * t2, t2, ((bitcast<u32>(t2)) & 0x7fffffffu) > 0x7f800000u)));
                    var t3: f32 = load_tf((load_data(hg_at + 1u) >> 4u) & 15u);
                    store_dst(hg_k + 3u, hg_f32_to_f16(select(s * t3, t3, ((bitcast<u32>(t3)) & 0x7fffffffu) > 0x7f800000u)));
                    var t4: f32 = load_tf(load_data(hg_at + 2u) & 15u);
                    store_dst(hg_k + 4u, hg_f32_to_f16(select(s * t4, t4, ((bitcast<u32>(t4)) & 0x7fffffffu) > 0x7f800000u)));
                    var t5: f32 = load_tf((load_data(hg_at + 2u) >> 4u) & 15u);
                    store_dst(hg_k + 5u, hg_f32_to_f16(select(s * t5, t5, ((bitcast<u32>(t5)) & 0x7fffffffu) > 0x7f800000u)));
                    var t6: f32 = load_tf(load_data(hg_at + 3u) & 15u);
                    store_dst(hg_k + 6u, hg_f32_to_f16(select(s * t6, t6, ((bitcast<u32>(t6)) & 0x7fffffffu) > 0x7f800000u)));
                    var t7: f32 = load_tf((load_data(hg_at + 3u) >> 4u) & 15u);
                    store_dst(hg_k + 7u, hg_f32_to_f16(select(s * t7, t7, ((bitcast<u32>(t7)) & 0x7fffffffu) > 0x7f800000u)));
                }
            } else if (bits == 6u) {
            } else if (bits == 8u) {
                for (var hg_j: u32 = 0u; hg_j < ngrp; hg_j++) {
                    var hg_at: u32 = gat + (8u * hg_j);
                    var hg_k: u32 = i + (8u * hg_j);
                    store_dst(hg_k + 0u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 0u) << sx) >> sx) - u32(z)))));
                    store_dst(hg_k + 1u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 1u) << sx) >> sx) - u32(z)))));
                    store_dst(hg_k + 2u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 2u) << sx) >> sx) - u32(z)))));
                    store_dst(hg_k + 3u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 3u) << sx) >> sx) - u32(z)))));
                    store_dst(hg_k + 4u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 4u) << sx) >> sx) - u32(z)))));
                    store_dst(hg_k + 5u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 5u) << sx) >> sx) - u32(z)))));
                    store_dst(hg_k + 6u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 6u) << sx) >> sx) - u32(z)))));
                    store_dst(hg_k + 7u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 7u) << sx) >> sx) - u32(z)))));
                }
            }
            i = i + (8u * ngrp);
            for (; i < end; i++) {
                var code: u32 = 0u;
                if (bits == 8u) {
                    code = load_data(doff + i);
                } else if (bits < 8u) {
                    var bit: u32 = i * bits;
                    var at: u32 = doff + (bit >> 3u);
                    var sh: u32 = bit & 7u;
                    code = load_data(at) >> sh;
                    if ((sh + bits) > 8u) {
                        code = code | (load_data(at + 1u) << (8u - sh));
                    }
                    code = code & ((1u << bits) - 1u);
                } else if (bits == 16u) {
                    var at: u32 = doff + (i * 2u);
                    code = load_data(at) | (load_data(at + 1u) << 8u);
                } else {
                    var at: u32 = doff + (i * 4u);
                    code = ((load_data(at) | (load_data(at + 1u) << 8u)) | (load_data(at + 2u) << 16u)) | (load_data(at + 3u) << 24u);
                }
                {
                    var k: u32 = i;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
            }
            if ((((((inner == 1u) && (mode != 0u)) && ((i & 7u) == 0u)) && ((1u << kshift) >= 32u)) && ((a & ((1u << kshift) - 1u)) == 0u)) && (a < ssize)) {
                var p: u32 = (o * omul) + (a >> kshift);
                var nblk: u32 = min(ssize - a, last - i) >> kshift;
                nblk = min(nblk, nparam - min(p, nparam));
                var gb: u32 = 1u << (kshift - 3u);
                var pend: u32 = p + nblk;
                if (bits == 4u) {
                    if ((stype == 1u) && (zmode == 0u)) {
                        var nq: u32 = pend - p;
                        var bat: u32 = doff + ((i >> 3u) * bits);
                        if (((zmode != 0u) || (built == 0u)) && (bits != 8u)) {
                            for (var c: u32 = 0u; c < (1u << bits); c++) {
                                {
                                    var code: u32 = c;
                                    var k: u32 = c;
                                    var q: i32 = i32(code << sx) >> sx;
                                    store_tf(k, f32(i32(u32(q) - u32(z))));
                                }
                            }
                            built = 1u;
                        }
                        for (var hg_q: u32 = 0u; hg_q < nq; hg_q++) {
                            var hg_w4: u32 = (p + hg_q) * 2u;
                            var hg_e: u32 = load_scales(hg_w4) | (load_scales(hg_w4 + 1u) << 8u);
                            if (((hg_e & 0x7c00u) == 0x7c00u) || ((hg_e & 0x7fffu) == 0u)) {
                                store_err(0u, 1u);
                            }
                            var hg_s: f32 = hg_f16_to_f32(hg_e);
                            var hg_qa: u32 = bat + ((4u * gb) * hg_q);
                            var hg_qk: u32 = i + ((8u * gb) * hg_q);
                            for (var hg_j: u32 = 0u; hg_j < gb; hg_j++) {
                                var hg_at: u32 = hg_qa + (4u * hg_j);
                                var hg_k: u32 = hg_qk + (8u * hg_j);
                                var t0: f32 = load_tf(load_data(hg_at) & 15u);
                                store_dst(hg_k, hg_f32_to_f16(select(hg_s * t0, t0, ((bitcast<u32>(t0)) & 0x7fffffffu) > 0x7f800000u)));
                                var t1: f32 = load_tf((load_data(hg_at) >> 4u) & 15u);
                                store_dst(hg_k + 1u, hg_f32_to_f16(select(hg_s * t1, t1, ((bitcast<u32>(t1)) & 0x7fffffffu) > 0x7f800000u)));
                                var t2: f32 = load_tf(load_data(hg_at + 1u) & 15u);
                                store_dst(hg_k + 2u, hg_f32_to_f16(select(hg_s * t2, t2, ((bitcast<u32>(t2)) & 0x7fffffffu) > 0x7f800000u)));
                                var t3: f32 = load_tf((load_data(hg_at + 1u) >> 4u) & 15u);
                                store_dst(hg_k + 3u, hg_f32_to_f16(select(hg_s * t3, t3, ((bitcast<u32>(t3)) & 0x7fffffffu) > 0x7f800000u)));
                                var t4: f32 = load_tf(load_data(hg_at + 2u) & 15u);
                                store_dst(hg_k + 4u, hg_f32_to_f16(select(hg_s * t4, t4, ((bitcast<u32>(t4)) & 0x7fffffffu) > 0x7f800000u)));
                                var t5: f32 = load_tf((load_data(hg_at + 2u) >> 4u) & 15u);
                                store_dst(hg_k + 5u, hg_f32_to_f16(select(hg_s * t5, t5, ((bitcast<u32>(t5)) & 0x7fffffffu) > 0x7f800000u)));
                                var t6: f32 = load_tf(load_data(hg_at + 3u) & 15u);
                                store_dst(hg_k + 6u, hg_f32_to_f16(select(hg_s * t6, t6, ((bitcast<u32>(t6)) & 0x7fffffffu) > 0x7f800000u)));
                                var t7: f32 = load_tf((load_data(hg_at + 3u) >> 4u) & 15u);
                                store_dst(hg_k + 7u, hg_f32_to_f16(select(hg_s * t7, t7, ((bitcast<u32>(t7)) & 0x7fffffffu) > 0x7f800000u)));
                            }
                        }
                        i = i + ((8u * gb) * nq);
                        p = pend;
                    }
                    for (; p < pend; p++) {
                        if (stype == 3u) {
                            var at: u32 = p * 4u;
                            var w: u32 = ((load_scales(at) | (load_scales(at + 1u) << 8u)) | (load_scales(at + 2u) << 16u)) | (load_scales(at + 3u) << 24u);
                            if (((w & 0x7f800000u) == 0x7f800000u) || ((w & 0x7fffffffu) == 0u)) {
                                store_err(0u, 1u);
                            }
                            s = bitcast<f32>(w);
                        } else {
                            var at: u32 = p * 2u;
                            var h: u32 = load_scales(at) | (load_scales(at + 1u) << 8u);
                            if (stype == 1u) {
                                if (((h & 0x7c00u) == 0x7c00u) || ((h & 0x7fffu) == 0u)) {
                                    store_err(0u, 1u);
                                }
                                s = hg_f16_to_f32(h);
                            } else {
                                if (((h & 0x7f80u) == 0x7f80u) || ((h & 0x7fffu) == 0u)) {
                                    store_err(0u, 1u);
                                }
                                s = hg_bf16_to_f32(h);
                            }
                        }
                        if (zmode != 0u) {
                            var at: u32 = zoff + (p * 4u);
                            z = i32(((load_zps(at) | (load_zps(at + 1u) << 8u)) | (load_zps(at + 2u) << 16u)) | (load_zps(at + 3u) << 24u));
                            if ((z < zlo) || (z > zhi)) {
                                store_err(0u, 1u);
                            }
                        }
                        if (((zmode != 0u) || (built == 0u)) && (bits != 8u)) {
                            for (var c: u32 = 0u; c < (1u << bits); c++) {
                                {
                                    var code: u32 = c;
                                    var k: u32 = c;
                                    var q: i32 = i32(code << sx) >> sx;
                                    store_tf(k, f32(i32(u32(q) - u32(z))));
                                }
                            }
                            built = 1u;
                        }
                        var bat: u32 = doff + ((i >> 3u) * bits);
                        for (var hg_j: u32 = 0u; hg_j < gb; hg_j++) {
                            var hg_at: u32 = bat + (4u * hg_j);
                            var hg_k: u32 = i + (8u * hg_j);
                            var t0: f32 = load_tf(load_data(hg_at) & 15u);
                            store_dst(hg_k, hg_f32_to_f16(select(s * t0, t0, ((bitcast<u32>(t0)) & 0x7fffffffu) > 0x7f800000u)));
                            var t1: f32 = load_tf((load_data(hg_at) >> 4u) & 15u);
                            store_dst(hg_k + 1u, hg_f32_to_f16(select(s * t1, t1, ((bitcast<u32>(t1)) & 0x7fffffffu) > 0x7f800000u)));
                            var t2: f32 = load_tf(load_data(hg_at + 1u) & 15u);
                            store_dst(hg_k + 2u, hg_f32_to_f16(select(s * t2, t2, ((bitcast<u32>(t2)) & 0x7fffffffu) > 0x7f800000u)));
                            var t3: f32 = load_tf((load_data(hg_at + 1u) >> 4u) & 15u);
                            store_dst(hg_k + 3u, hg_f32_to_f16(select(s * t3, t3, ((bitcast<u32>(t3)) & 0x7fffffffu) > 0x7f800000u)));
                            var t4: f32 = load_tf(load_data(hg_at + 2u) & 15u);
                            store_dst(hg_k + 4u, hg_f32_to_f16(select(s * t4, t4, ((bitcast<u32>(t4)) & 0x7fffffffu) > 0x7f800000u)));
                            var t5: f32 = load_tf((load_data(hg_at + 2u) >> 4u) & 15u);
                            store_dst(hg_k + 5u, hg_f32_to_f16(select(s * t5, t5, ((bitcast<u32>(t5)) & 0x7fffffffu) > 0x7f800000u)));
                            var t6: f32 = load_tf(load_data(hg_at + 3u) & 15u);
                            store_dst(hg_k + 6u, hg_f32_to_f16(select(s * t6, t6, ((bitcast<u32>(t6)) & 0x7fffffffu) > 0x7f800000u)));
                            var t7: f32 = load_tf((load_data(hg_at + 3u) >> 4u) & 15u);
                            store_dst(hg_k + 7u, hg_f32_to_f16(select(s * t7, t7, ((bitcast<u32>(t7)) & 0x7fffffffu) > 0x7f800000u)));
                        }
                        i = i + (8u * gb);
                    }
                } else if (bits == 8u) {
                    if ((stype == 1u) && (zmode == 0u)) {
                        var nq: u32 = pend - p;
                        var bat: u32 = doff + ((i >> 3u) * bits);
                        for (var hg_q: u32 = 0u; hg_q < nq; hg_q++) {
                            var hg_w4: u32 = (p + hg_q) * 2u;
                            var hg_e: u32 = load_scales(hg_w4) | (load_scales(hg_w4 + 1u) << 8u);
                            if (((hg_e & 0x7c00u) == 0x7c00u) || ((hg_e & 0x7fffu) == 0u)) {
                                store_err(0u, 1u);
                            }
                            var hg_s: f32 = hg_f16_to_f32(hg_e);
                            var hg_qa: u32 = bat + ((8u * gb) * hg_q);
                            var hg_qk: u32 = i + ((8u * gb) * hg_q);
                            for (var hg_j: u32 = 0u; hg_j < gb; hg_j++) {
                                var hg_at: u32 = hg_qa + (8u * hg_j);
                                var hg_k: u32 = hg_qk + (8u * hg_j);
                                store_dst(hg_k + 0u, hg_f32_to_f16(hg_s * f32(i32(u32(i32(load_data(hg_at + 0u) << sx) >> sx) - u32(z)))));
                                store_dst(hg_k + 1u, hg_f32_to_f16(hg_s * f32(i32(u32(i32(load_data(hg_at + 1u) << sx) >> sx) - u32(z)))));
                                store_dst(hg_k + 2u, hg_f32_to_f16(hg_s * f32(i32(u32(i32(load_data(hg_at + 2u) << sx) >> sx) - u32(z)))));
                                store_dst(hg_k + 3u, hg_f32_to_f16(hg_s * f32(i32(u32(i32(load_data(hg_at + 3u) << sx) >> sx) - u32(z)))));
                                store_dst(hg_k + 4u, hg_f32_to_f16(hg_s * f32(i32(u32(i32(load_data(hg_at + 4u) << sx) >> sx) - u32(z)))));
                                store_dst(hg_k + 5u, hg_f32_to_f16(hg_s * f32(i32(u32(i32(load_data(hg_at + 5u) << sx) >> sx) - u32(z)))));
                                store_dst(hg_k + 6u, hg_f32_to_f16(hg_s * f32(i32(u32(i32(load_data(hg_at + 6u) << sx) >> sx) - u32(z)))));
                                store_dst(hg_k + 7u, hg_f32_to_f16(hg_s * f32(i32(u32(i32(load_data(hg_at + 7u) << sx) >> sx) - u32(z)))));
                            }
                        }
                        i = i + ((8u * gb) * nq);
                        p = pend;
                    }
                    for (; p < pend; p++) {
                        if (stype == 3u) {
                            var at: u32 = p * 4u;
                            var w: u32 = ((load_scales(at) | (load_scales(at + 1u) << 8u)) | (load_scales(at + 2u) << 16u)) | (load_scales(at + 3u) << 24u);
                            if (((w & 0x7f800000u) == 0x7f800000u) || ((w & 0x7fffffffu) == 0u)) {
                                store_err(0u, 1u);
                            }
                            s = bitcast<f32>(w);
                        } else {
                            var at: u32 = p * 2u;
                            var h: u32 = load_scales(at) | (load_scales(at + 1u) << 8u);
                            if (stype == 1u) {
                                if (((h & 0x7c00u) == 0x7c00u) || ((h & 0x7fffu) == 0u)) {
                                    store_err(0u, 1u);
                                }
                                s = hg_f16_to_f32(h);
                            } else {
                                if (((h & 0x7f80u) == 0x7f80u) || ((h & 0x7fffu) == 0u)) {
                                    store_err(0u, 1u);
                                }
                                s = hg_bf16_to_f32(h);
                            }
                        }
                        if (zmode != 0u) {
                            var at: u32 = zoff + (p * 4u);
                            z = i32(((load_zps(at) | (load_zps(at + 1u) << 8u)) | (load_zps(at + 2u) << 16u)) | (load_zps(at + 3u) << 24u));
                            if ((z < zlo) || (z > zhi)) {
                                store_err(0u, 1u);
                            }
                        }
                        if (((zmode != 0u) || (built == 0u)) && (bits != 8u)) {
                            for (var c: u32 = 0u; c < (1u << bits); c++) {
                                {
                                    var code: u32 = c;
                                    var k: u32 = c;
                                    var q: i32 = i32(code << sx) >> sx;
                                    store_tf(k, f32(i32(u32(q) - u32(z))));
                                }
                            }
                            built = 1u;
                        }
                        var bat: u32 = doff + ((i >> 3u) * bits);
                        for (var hg_j: u32 = 0u; hg_j < gb; hg_j++) {
                            var hg_at: u32 = bat + (8u * hg_j);
                            var hg_k: u32 = i + (8u * hg_j);
                            store_dst(hg_k + 0u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 0u) << sx) >> sx) - u32(z)))));
                            store_dst(hg_k + 1u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 1u) << sx) >> sx) - u32(z)))));
                            store_dst(hg_k + 2u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 2u) << sx) >> sx) - u32(z)))));
                            store_dst(hg_k + 3u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 3u) << sx) >> sx) - u32(z)))));
                            store_dst(hg_k + 4u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 4u) << sx) >> sx) - u32(z)))));
                            store_dst(hg_k + 5u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 5u) << sx) >> sx) - u32(z)))));
                            store_dst(hg_k + 6u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 6u) << sx) >> sx) - u32(z)))));
                            store_dst(hg_k + 7u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 7u) << sx) >> sx) - u32(z)))));
                        }
                        i = i + (8u * gb);
                    }
                } else {
                }
                a = a + (nblk << kshift);
                if (a == ssize) {
                    a = 0u;
                    o = o + 1u;
                }
            }
        } else if (bits == 4u) {
            if (((i & 1u) != 0u) && (i < end)) {
                {
                    var code: u32 = load_data(doff + (i >> 1u)) >> 4u;
                    var k: u32 = i;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
                i = i + 1u;
            }
            for (; (i + 1u) < end; i += 2u) {
                var pair: u32 = load_data(doff + (i >> 1u));
                {
                    var code: u32 = pair & 15u;
                    var k: u32 = i;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
                {
                    var code: u32 = pair >> 4u;
                    var k: u32 = i + 1u;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
            }
            if (i < end) {
                {
                    var code: u32 = load_data(doff + (i >> 1u)) & 15u;
                    var k: u32 = i;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
                i = i + 1u;
            }
        } else if ((bits == 8u) && (doff == 0u)) {
            var ng8: u32 = (end - i) >> 3u;
            for (var hg_j: u32 = 0u; hg_j < ng8; hg_j++) {
                var hg_at: u32 = i + (8u * hg_j);
                var hg_k: u32 = i + (8u * hg_j);
                store_dst(hg_k + 0u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 0u) << sx) >> sx) - u32(z)))));
                store_dst(hg_k + 1u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 1u) << sx) >> sx) - u32(z)))));
                store_dst(hg_k + 2u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 2u) << sx) >> sx) - u32(z)))));
                store_dst(hg_k + 3u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 3u) << sx) >> sx) - u32(z)))));
                store_dst(hg_k + 4u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 4u) << sx) >> sx) - u32(z)))));
                store_dst(hg_k + 5u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 5u) << sx) >> sx) - u32(z)))));
                store_dst(hg_k + 6u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 6u) << sx) >> sx) - u32(z)))));
                store_dst(hg_k + 7u, hg_f32_to_f16(s * f32(i32(u32(i32(load_data(hg_at + 7u) << sx) >> sx) - u32(z)))));
            }
            i = i + (8u * ng8);
            for (; i < end; i++) {
                {
                    var code: u32 = load_data(i);
                    var k: u32 = i;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
            }
        } else if (bits == 6u) {
            for (; (i < end) && ((i & 3u) != 0u); i++) {
                {
                    var hg_t0: u32;
                    if (((i * 6u) & 7u) > 2u) {
                        hg_t0 = load_data((doff + ((i * 6u) >> 3u)) + 1u) << 8u;
                    } else {
                        hg_t0 = 0u;
                    }
                    var code: u32 = ((load_data(doff + ((i * 6u) >> 3u)) | hg_t0) >> ((i * 6u) & 7u)) & 63u;
                    var k: u32 = i;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
            }
            var ngroup: u32 = (end - i) >> 2u;
            var gat: u32 = doff + ((i >> 2u) * 3u);
            for (var j: u32 = 0u; j < ngroup; j++) {
                var b: u32 = gat + (3u * j);
                var w: u32 = (load_data(b) | (load_data(b + 1u) << 8u)) | (load_data(b + 2u) << 16u);
                var gk: u32 = i + (4u * j);
                {
                    var code: u32 = w & 63u;
                    var k: u32 = gk;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
                {
                    var code: u32 = (w >> 6u) & 63u;
                    var k: u32 = gk + 1u;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
                {
                    var code: u32 = (w >> 12u) & 63u;
                    var k: u32 = gk + 2u;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
                {
                    var code: u32 = (w >> 18u) & 63u;
                    var k: u32 = gk + 3u;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
            }
            i = i + (4u * ngroup);
            for (; i < end; i++) {
                {
                    var hg_t1: u32;
                    if (((i * 6u) & 7u) > 2u) {
                        hg_t1 = load_data((doff + ((i * 6u) >> 3u)) + 1u) << 8u;
                    } else {
                        hg_t1 = 0u;
                    }
                    var code: u32 = ((load_data(doff + ((i * 6u) >> 3u)) | hg_t1) >> ((i * 6u) & 7u)) & 63u;
                    var k: u32 = i;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
                }
            }
        } else {
            for (; i < end; i++) {
                var code: u32 = 0u;
                if (bits == 8u) {
                    code = load_data(doff + i);
                } else if (bits < 8u) {
                    var bit: u32 = i * bits;
                    var at: u32 = doff + (bit >> 3u);
                    var sh: u32 = bit & 7u;
                    code = load_data(at) >> sh;
                    if ((sh + bits) > 8u) {
                        code = code | (load_data(at + 1u) << (8u - sh));
                    }
                    code = code & ((1u << bits) - 1u);
                } else if (bits == 16u) {
                    var at: u32 = doff + (i * 2u);
                    code = load_data(at) | (load_data(at + 1u) << 8u);
                } else {
                    var at: u32 = doff + (i * 4u);
                    code = ((load_data(at) | (load_data(at + 1u) << 8u)) | (load_data(at + 2u) << 16u)) | (load_data(at + 3u) << 24u);
                }
                {
                    var k: u32 = i;
                    var q: i32 = i32(code << sx) >> sx;
                    store_dst(k, hg_f32_to_f16(s * f32(i32(u32(q) - u32(z)))));
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
