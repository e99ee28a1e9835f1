"""``FMA_RN`` for GLSL: a*b+c rounded once (round to nearest even), in 32-bit integer code.

Vulkan lets ``fma()`` round twice (lavapipe does), so the exact operation is built from the
bits: the 48-bit product (umulExtended) and the addend are aligned in a 64-bit window with a
sticky bit, added, then rounded once at f32 precision, subnormal range included. Subnormal
operands count as signed zeros (the f32 canonicalization of vyre's reference, applied to the
operands before every op); the result is not flushed (the caller canonicalizes it).
"""

from __future__ import annotations

__all__ = ["FMA_RN_GLSL", "FMA_RN_WGSL"]

FMA_RN_GLSL = """\
uvec2 hg_fma_shr(uvec2 v, int n) {
    // (hi, lo) = (v.y, v.x) >> n, every bit shifted out ORed into bit 0 (a sticky bit).
    if (n <= 0) return v;
    if (n >= 64) return uvec2(((v.x | v.y) != 0u) ? 1u : 0u, 0u);
    uvec2 r;
    uint lost;
    if (n >= 32) {
        int k = n - 32;
        r = uvec2((k == 0) ? v.y : (v.y >> uint(k)), 0u);
        lost = v.x | ((k == 0) ? 0u : (v.y << uint(32 - k)));
    } else {
        r = uvec2((v.x >> uint(n)) | (v.y << uint(32 - n)), v.y >> uint(n));
        lost = v.x << uint(32 - n);
    }
    if (lost != 0u) r.x |= 1u;
    return r;
}

uint hg_fma_special(uint a, uint b, uint c, uint ea, uint eb, uint ec) {
    // NaN, infinity or a zero product: the exact result needs no rounding.
    uint sp = (a ^ b) & 0x80000000u;
    if ((ea == 255u && (a & 0x7fffffu) != 0u) || (eb == 255u && (b & 0x7fffffu) != 0u) ||
        (ec == 255u && (c & 0x7fffffu) != 0u)) return 0x7fc00000u;
    if (ea == 255u || eb == 255u) {
        if (ea == 0u || eb == 0u) return 0x7fc00000u;
        if (ec == 255u && (c & 0x80000000u) != sp) return 0x7fc00000u;
        return sp | 0x7f800000u;
    }
    if (ec == 255u) return c;
    if (ec == 0u) return sp & c & 0x80000000u;
    return c;
}

float hg_fma_rn(float fa, float fb, float fc) {
    uint a = floatBitsToUint(fa);
    uint b = floatBitsToUint(fb);
    uint c = floatBitsToUint(fc);
    uint ea = (a >> 23u) & 0xffu;
    uint eb = (b >> 23u) & 0xffu;
    uint ec = (c >> 23u) & 0xffu;
    if (ea == 255u || eb == 255u || ec == 255u || ea == 0u || eb == 0u) {
        return uintBitsToFloat(hg_fma_special(a, b, c, ea, eb, ec));
    }
    uint sp = (a ^ b) & 0x80000000u;
    uint phi;
    uint plo;
    umulExtended((a & 0x7fffffu) | 0x800000u, (b & 0x7fffffu) | 0x800000u, phi, plo);
    // Product and addend with their top bit at 60..61: value = S * 2^e.
    uvec2 s = uvec2(plo << 14u, (phi << 14u) | (plo >> 18u));
    int e = int(ea) + int(eb) - 314;
    uint sign = sp;
    if (ec != 0u) {
        uvec2 cv = uvec2(0u, ((c & 0x7fffffu) | 0x800000u) << 6u);
        int ecv = int(ec) - 188;
        int top = max(e, ecv);
        s = hg_fma_shr(s, top - e);
        cv = hg_fma_shr(cv, top - ecv);
        e = top;
        uint carry;
        uint borrow;
        if (sp == (c & 0x80000000u)) {
            s.x = uaddCarry(s.x, cv.x, carry);
            s.y = s.y + cv.y + carry;
        } else if (s.y > cv.y || (s.y == cv.y && s.x >= cv.x)) {
            s.x = usubBorrow(s.x, cv.x, borrow);
            s.y = s.y - cv.y - borrow;
        } else {
            sign = c & 0x80000000u;
            uvec2 d = s;
            s.x = usubBorrow(cv.x, d.x, borrow);
            s.y = cv.y - d.y - borrow;
        }
        if (s.x == 0u && s.y == 0u) return 0.0;
    }
    int m = (s.y != 0u) ? 32 + findMSB(s.y) : findMSB(s.x);
    int q = max(m + e - 23, -149);
    int drop = q - e;
    uint k;
    if (drop <= 0) {
        k = s.x << uint(-drop);
    } else {
        // t: the kept bits, then the round bit, then the sticky bit.
        uint t = (drop >= 2) ? hg_fma_shr(s, drop - 2).x : (s.x << 1u);
        k = t >> 2u;
        if ((t & 2u) != 0u && ((t & 1u) != 0u || (k & 1u) != 0u)) k += 1u;
    }
    if (q + 149 > 254) return uintBitsToFloat(sign | 0x7f800000u);
    uint bits = (uint(q + 149) << 23u) + k;
    return uintBitsToFloat(sign | min(bits, 0x7f800000u));
}"""

# The same algorithm in WGSL, which has no umulExtended, uaddCarry, usubBorrow or findMSB:
# the product's high word comes from hg_umulhi (16-bit halves), carries and borrows from
# comparisons, the top bit from firstLeadingBit (-1 for 0, as findMSB).
FMA_RN_WGSL = """\
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
}"""
