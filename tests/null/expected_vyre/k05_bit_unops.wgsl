@group(0) @binding(0) var<storage, read_write> hg_m_b0_a: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_b1_out: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_b0_a: u32,
    hg_d_b1_out: u32,
    hg_a_n0: u32,
    hg_a_n1: u32,
}
@group(0) @binding(2) var<uniform> hg_u: HgUniform;
@group(0) @binding(3) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_b0_a: vec2<u32>;
var<private> hg_w_b1_out: vec2<u32>;
var<private> hg_bad: u32;

fn load_b0_a(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_b0_a.x;
    if (hg_k >= hg_w_b0_a.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_b0_a[hg_k];
}
fn load_b1_out(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_b1_out.x;
    if (hg_k >= hg_w_b1_out.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_b1_out[hg_k];
}
fn store_b1_out(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_b1_out.x;
    if (hg_k >= hg_w_b1_out.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_b1_out[hg_k] = hg_v;
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_b0_a = vec2<u32>(hg_u.hg_d_b0_a, arrayLength(&hg_m_b0_a));
    hg_w_b1_out = vec2<u32>(hg_u.hg_d_b1_out, arrayLength(&hg_m_b1_out));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n0: u32 = hg_u.hg_a_n0;
    let n1: u32 = hg_u.hg_a_n1;
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
            var t5: u32 = l_i_1 * 4u;
            var l_base_6: u32 = t5;
            var t7: u32 = l_x_4 - ((l_x_4 >> 1u) & 0x55555555u);
            var t8: u32 = (t7 & 0x33333333u) + ((t7 >> 2u) & 0x33333333u);
            var t9: u32 = (t8 + (t8 >> 4u)) & 0xf0f0f0fu;
            var t10: u32 = (t9 * 0x1010101u) >> 24u;
            if (l_base_6 < n1) {
                store_b1_out(l_base_6, t10);
            }
            var t11: u32 = l_base_6 + 1u;
            var t12: u32 = select(0u, 32u, l_x_4 == 0u);
            var t13: u32 = l_x_4;
            if ((t13 != 0u) && (t13 <= 0xffffu)) {
                t12 = t12 + 16u;
                t13 = t13 << 16u;
            }
            if ((t13 != 0u) && (t13 <= 0xffffffu)) {
                t12 = t12 + 8u;
                t13 = t13 << 8u;
            }
            if ((t13 != 0u) && (t13 <= 0xfffffffu)) {
                t12 = t12 + 4u;
                t13 = t13 << 4u;
            }
            if ((t13 != 0u) && (t13 <= 0x3fffffffu)) {
                t12 = t12 + 2u;
                t13 = t13 << 2u;
            }
            if ((t13 != 0u) && (t13 <= 0x7fffffffu)) {
                t12 = t12 + 1u;
                t13 = t13 << 1u;
            }
            if (t11 < n1) {
                store_b1_out(t11, t12);
            }
            var t14: u32 = l_base_6 + 2u;
            var t15: u32 = (l_x_4 & (0u - l_x_4)) - 1u;
            var t16: u32 = t15 - ((t15 >> 1u) & 0x55555555u);
            var t17: u32 = (t16 & 0x33333333u) + ((t16 >> 2u) & 0x33333333u);
            var t18: u32 = (t17 + (t17 >> 4u)) & 0xf0f0f0fu;
            var t19: u32 = (t18 * 0x1010101u) >> 24u;
            if (t14 < n1) {
                store_b1_out(t14, t19);
            }
            var t20: u32 = l_base_6 + 3u;
            var t21: u32 = l_x_4;
            t21 = ((t21 >> 1u) & 0x55555555u) | ((t21 & 0x55555555u) << 1u);
            t21 = ((t21 >> 2u) & 0x33333333u) | ((t21 & 0x33333333u) << 2u);
            t21 = ((t21 >> 4u) & 0xf0f0f0fu) | ((t21 & 0xf0f0f0fu) << 4u);
            t21 = ((t21 >> 8u) & 0xff00ffu) | ((t21 & 0xff00ffu) << 8u);
            var t22: u32 = (t21 >> 16u) | (t21 << 16u);
            if (t20 < n1) {
                store_b1_out(t20, t22);
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
