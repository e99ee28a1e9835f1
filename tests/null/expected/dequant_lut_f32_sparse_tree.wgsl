@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_data: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_lut: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_scales: array<u32>;
@group(0) @binding(4) var<storage, read_write> hg_m_err: array<u32>;
@group(0) @binding(5) var<storage, read_write> hg_m_ix: array<u32>;
@group(0) @binding(6) var<storage, read_write> hg_m_mt: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_data: u32,
    hg_d_lut: u32,
    hg_d_scales: u32,
    hg_d_err: u32,
    hg_d_ix: u32,
    hg_d_mt: u32,
    hg_a_n: u32,
    hg_a_doff: u32,
    hg_a_bits: u32,
    hg_a_chk: u32,
    hg_a_mode: u32,
    hg_a_nparam: u32,
    hg_a_inner: u32,
    hg_a_ssize: u32,
    hg_a_omul: u32,
    hg_a_kshift: u32,
    hg_a_nnz: u32,
    hg_a_nix: u32,
    hg_a_nlev: u32,
}
@group(0) @binding(7) var<uniform> hg_u: HgUniform;
@group(0) @binding(8) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_dst: vec2<u32>;
var<private> hg_w_data: vec2<u32>;
var<private> hg_w_lut: vec2<u32>;
var<private> hg_w_scales: vec2<u32>;
var<private> hg_w_err: vec2<u32>;
var<private> hg_w_ix: vec2<u32>;
var<private> hg_w_mt: vec2<u32>;
var<private> hg_bad: u32;

fn store_dst(hg_i: u32, hg_v: f32) {
    let hg_k = hg_i + hg_w_dst.x;
    if (hg_k >= hg_w_dst.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_dst[hg_k] = bitcast<u32>(hg_v);
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
    hg_w_data = vec2<u32>(hg_u.hg_d_data, arrayLength(&hg_m_data));
    hg_w_lut = vec2<u32>(hg_u.hg_d_lut, arrayLength(&hg_m_lut));
    hg_w_scales = vec2<u32>(hg_u.hg_d_scales, arrayLength(&hg_m_scales));
    hg_w_err = vec2<u32>(hg_u.hg_d_err, arrayLength(&hg_m_err));
    hg_w_ix = vec2<u32>(hg_u.hg_d_ix, arrayLength(&hg_m_ix));
    hg_w_mt = vec2<u32>(hg_u.hg_d_mt, arrayLength(&hg_m_mt));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n: u32 = hg_u.hg_a_n;
    let doff: u32 = hg_u.hg_a_doff;
    let bits: u32 = hg_u.hg_a_bits;
    let chk: u32 = hg_u.hg_a_chk;
    let mode: u32 = hg_u.hg_a_mode;
    let nparam: u32 = hg_u.hg_a_nparam;
    let inner: u32 = hg_u.hg_a_inner;
    let ssize: u32 = hg_u.hg_a_ssize;
    let omul: u32 = hg_u.hg_a_omul;
    let kshift: u32 = hg_u.hg_a_kshift;
    let nnz: u32 = hg_u.hg_a_nnz;
    let nix: u32 = hg_u.hg_a_nix;
    let nlev: u32 = hg_u.hg_a_nlev;
    var g: u32 = hg_gid0;
    if (g >= (nnz + nparam)) {
        return;
    }
    var first: u32 = 0u;
    var so: u32 = 0u;
    if (g < nnz) {
        var i: u32 = g;
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
        first = fi;
        so = g;
    } else {
        var pb: u32 = g - nnz;
        var ob: u32 = 0u;
        var rb: u32 = 0u;
        var ab: u32 = pb << kshift;
        if (omul != 0u) {
            var rest: u32 = pb / omul;
            ab = (pb - (rest * omul)) << kshift;
            ob = rest / inner;
            rb = rest - (ob * inner);
        }
        if ((ob >= n) || (ab >= ssize)) {
            return;
        }
        first = (((ob * ssize) + ab) * inner) + rb;
        if (first >= n) {
            return;
        }
    }
    var last: u32 = first + 1u;
    var q1: u32 = first / inner;
    var r: u32 = first - (q1 * inner);
    var o: u32 = q1 / ssize;
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
                    if (g < nnz) {
                        store_dst(k, v);
                    }
                }
            }
        } else {
            for (; i < end; i++) {
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
                    if (g < nnz) {
                        store_dst(k, v);
                    }
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
