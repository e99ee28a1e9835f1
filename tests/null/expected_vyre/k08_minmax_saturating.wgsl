@group(0) @binding(0) var<storage, read_write> hg_m_b0_a: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_b1_b: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_b2_out: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_b0_a: u32,
    hg_d_b1_b: u32,
    hg_d_b2_out: u32,
    hg_a_n0: u32,
    hg_a_n1: u32,
    hg_a_n2: u32,
}
@group(0) @binding(3) var<uniform> hg_u: HgUniform;
@group(0) @binding(4) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_b0_a: vec2<u32>;
var<private> hg_w_b1_b: vec2<u32>;
var<private> hg_w_b2_out: vec2<u32>;
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

fn load_b0_a(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_b0_a.x;
    if (hg_k >= hg_w_b0_a.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_b0_a[hg_k];
}
fn load_b1_b(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_b1_b.x;
    if (hg_k >= hg_w_b1_b.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_b1_b[hg_k];
}
fn load_b2_out(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_b2_out.x;
    if (hg_k >= hg_w_b2_out.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_b2_out[hg_k];
}
fn store_b2_out(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_b2_out.x;
    if (hg_k >= hg_w_b2_out.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_b2_out[hg_k] = hg_v;
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_b0_a = vec2<u32>(hg_u.hg_d_b0_a, arrayLength(&hg_m_b0_a));
    hg_w_b1_b = vec2<u32>(hg_u.hg_d_b1_b, arrayLength(&hg_m_b1_b));
    hg_w_b2_out = vec2<u32>(hg_u.hg_d_b2_out, arrayLength(&hg_m_b2_out));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n0: u32 = hg_u.hg_a_n0;
    let n1: u32 = hg_u.hg_a_n1;
    let n2: u32 = hg_u.hg_a_n2;
    {
        var l_i_1: u32 = hg_gid0;
        var t2: bool = l_i_1 < n0;
        if (t2) {
            var hg_t0: u32;
            if (l_i_1 < n0) {
                hg_t0 = load_b0_a(l_i_1);
            } else {
                hg_t0 = 0u;
            }
            var t3: u32 = hg_t0;
            var l_x_4: u32 = t3;
            var hg_t1: u32;
            if (l_i_1 < n1) {
                hg_t1 = load_b1_b(l_i_1);
            } else {
                hg_t1 = 0u;
            }
            var t5: u32 = hg_t1;
            var l_y_6: u32 = t5;
            var t7: u32 = l_i_1 * 6u;
            var l_base_8: u32 = t7;
            var t9: u32 = l_base_8 + 0u;
            var t10: u32 = min(l_x_4, l_y_6);
            if (t9 < n2) {
                store_b2_out(t9, t10);
            }
            var t11: u32 = l_base_8 + 1u;
            var t12: u32 = max(l_x_4, l_y_6);
            if (t11 < n2) {
                store_b2_out(t11, t12);
            }
            var t13: u32 = l_base_8 + 2u;
            var t14: u32 = select(l_y_6 - l_x_4, l_x_4 - l_y_6, l_x_4 > l_y_6);
            if (t13 < n2) {
                store_b2_out(t13, t14);
            }
            var t15: u32 = l_base_8 + 3u;
            var t16: u32 = select(l_x_4 + l_y_6, 0xffffffffu, (l_x_4 + l_y_6) < l_x_4);
            if (t15 < n2) {
                store_b2_out(t15, t16);
            }
            var t17: u32 = l_base_8 + 4u;
            var t18: u32 = select(0u, l_x_4 - l_y_6, l_x_4 > l_y_6);
            if (t17 < n2) {
                store_b2_out(t17, t18);
            }
            var t19: u32 = l_base_8 + 5u;
            var t20: u32 = hg_umulhi(l_x_4, l_y_6);
            if (t19 < n2) {
                store_b2_out(t19, t20);
            }
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
