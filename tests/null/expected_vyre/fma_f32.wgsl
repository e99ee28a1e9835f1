@group(0) @binding(0) var<storage, read_write> hg_m_b0_x: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_b1_y: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_b0_x: u32,
    hg_d_b1_y: u32,
    hg_a_n0: u32,
    hg_a_n1: u32,
}
@group(0) @binding(2) var<uniform> hg_u: HgUniform;
@group(0) @binding(3) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_b0_x: vec2<u32>;
var<private> hg_w_b1_y: vec2<u32>;
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

fn hg_fma_shr(v: vec2<u32>, n: i32) -> vec2<u32> {
    // (hi, lo) = (v.y, v.x) >> n, every bit shifted out ORed into bit 0 (a sticky bit).
    if (n <= 0) { return v; }
    if (n >= 64) { return vec2<u32>(select(0u, 1u, (v.x | v.y) != 0u), 0u); }
    var r: vec2<u32>;
    var lost: u32;
    if (n >= 32) {
        let k = n - 32;
        r = vec2<u32>(select(v.y >> u32(k), v.y, k == 0), 0u);
        lost = v.x | select(v.y << u32(32 - k), 0u, k == 0);
    } else {
        r = vec2<u32>((v.x >> u32(n)) | (v.y << u32(32 - n)), v.y >> u32(n));
        lost = v.x << u32(32 - n);
    }
    if (lost != 0u) { r.x = r.x | 1u; }
    return r;
}

fn hg_fma_special(a: u32, b: u32, c: u32, ea: u32, eb: u32, ec: u32) -> u32 {
    // NaN, infinity or a zero product: the exact result needs no rounding.
    let sp = (a ^ b) & 0x80000000u;
    if ((ea == 255u && (a & 0x7fffffu) != 0u) || (eb == 255u && (b & 0x7fffffu) != 0u) ||
        (ec == 255u && (c & 0x7fffffu) != 0u)) { return 0x7fc00000u; }
    if (ea == 255u || eb == 255u) {
        if (ea == 0u || eb == 0u) { return 0x7fc00000u; }
        if (ec == 255u && (c & 0x80000000u) != sp) { return 0x7fc00000u; }
        return sp | 0x7f800000u;
    }
    if (ec == 255u) { return c; }
    if (ec == 0u) { return sp & c & 0x80000000u; }
    return c;
}

fn hg_fma_rn(fa: f32, fb: f32, fc: f32) -> f32 {
    let a = bitcast<u32>(fa);
    let b = bitcast<u32>(fb);
    let c = bitcast<u32>(fc);
    let ea = (a >> 23u) & 0xffu;
    let eb = (b >> 23u) & 0xffu;
    let ec = (c >> 23u) & 0xffu;
    if (ea == 255u || eb == 255u || ec == 255u || ea == 0u || eb == 0u) {
        return bitcast<f32>(hg_fma_special(a, b, c, ea, eb, ec));
    }
    let sp = (a ^ b) & 0x80000000u;
    let ma = (a & 0x7fffffu) | 0x800000u;
    let mb = (b & 0x7fffffu) | 0x800000u;
    let phi = hg_umulhi(ma, mb);
    let plo = ma * mb;
    // Product and addend with their top bit at 60..61: value = S * 2^e.
    var s = vec2<u32>(plo << 14u, (phi << 14u) | (plo >> 18u));
    var e = i32(ea) + i32(eb) - 314;
    var sign = sp;
    if (ec != 0u) {
        var cv = vec2<u32>(0u, ((c & 0x7fffffu) | 0x800000u) << 6u);
        let ecv = i32(ec) - 188;
        let top = max(e, ecv);
        s = hg_fma_shr(s, top - e);
        cv = hg_fma_shr(cv, top - ecv);
        e = top;
        if (sp == (c & 0x80000000u)) {
            let lo = s.x + cv.x;
            s = vec2<u32>(lo, s.y + cv.y + select(0u, 1u, lo < cv.x));
        } else if (s.y > cv.y || (s.y == cv.y && s.x >= cv.x)) {
            s = vec2<u32>(s.x - cv.x, s.y - cv.y - select(0u, 1u, s.x < cv.x));
        } else {
            sign = c & 0x80000000u;
            s = vec2<u32>(cv.x - s.x, cv.y - s.y - select(0u, 1u, cv.x < s.x));
        }
        if (s.x == 0u && s.y == 0u) { return 0.0f; }
    }
    let m = select(i32(firstLeadingBit(s.x)), 32 + i32(firstLeadingBit(s.y)), s.y != 0u);
    let q = max(m + e - 23, -149);
    let drop = q - e;
    var k: u32;
    if (drop <= 0) {
        k = s.x << u32(-drop);
    } else {
        // t: the kept bits, then the round bit, then the sticky bit.
        var t = s.x << 1u;
        if (drop >= 2) { t = hg_fma_shr(s, drop - 2).x; }
        k = t >> 2u;
        if ((t & 2u) != 0u && ((t & 1u) != 0u || (k & 1u) != 0u)) { k = k + 1u; }
    }
    if (q + 149 > 254) { return bitcast<f32>(sign | 0x7f800000u); }
    let bits = (u32(q + 149) << 23u) + k;
    return bitcast<f32>(sign | min(bits, 0x7f800000u));
}

fn load_b0_x(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_b0_x.x;
    if (hg_k >= hg_w_b0_x.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_b0_x[hg_k];
}
fn load_b1_y(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_b1_y.x;
    if (hg_k >= hg_w_b1_y.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_b1_y[hg_k];
}
fn store_b1_y(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_b1_y.x;
    if (hg_k >= hg_w_b1_y.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_b1_y[hg_k] = hg_v;
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_b0_x = vec2<u32>(hg_u.hg_d_b0_x, arrayLength(&hg_m_b0_x));
    hg_w_b1_y = vec2<u32>(hg_u.hg_d_b1_y, arrayLength(&hg_m_b1_y));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n0: u32 = hg_u.hg_a_n0;
    let n1: u32 = hg_u.hg_a_n1;
    {
        var hg_t0: u32;
        if (hg_gid0 < n0) {
            hg_t0 = load_b0_x(hg_gid0);
        } else {
            hg_t0 = 0u;
        }
        var t1: u32 = hg_t0;
        var t2: u32 = bitcast<u32>(bitcast<f32>(t1));
        var t3: f32 = bitcast<f32>(select(select(t2, t2 & 0x80000000u, (t2 & 0x7f800000u) == 0u), 0x7fc00000u, (t2 & 0x7fffffffu) > 0x7f800000u));
        var hg_t1: u32;
        if (hg_gid0 < n0) {
            hg_t1 = load_b0_x(hg_gid0);
        } else {
            hg_t1 = 0u;
        }
        var t4: u32 = hg_t1;
        var t5: u32 = bitcast<u32>(bitcast<f32>(t4));
        var t6: f32 = bitcast<f32>(select(select(t5, t5 & 0x80000000u, (t5 & 0x7f800000u) == 0u), 0x7fc00000u, (t5 & 0x7fffffffu) > 0x7f800000u));
        var t7: u32 = bitcast<u32>(hg_fma_rn(t3, t6, bitcast<f32>(0xbf800000u)));
        var t8: f32 = bitcast<f32>(select(select(t7, t7 & 0x80000000u, (t7 & 0x7f800000u) == 0u), 0x7fc00000u, (t7 & 0x7fffffffu) > 0x7f800000u));
        if (hg_gid0 < n1) {
            store_b1_y(hg_gid0, bitcast<u32>(t8));
        }
    }
}

@compute @workgroup_size(4, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
