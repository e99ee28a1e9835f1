@group(0) @binding(0) var<storage, read_write> hg_m_b0_a: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_b1_b: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_b2_out: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_trapflag: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_b0_a: u32,
    hg_d_b1_b: u32,
    hg_d_b2_out: u32,
    hg_d_trapflag: u32,
    hg_a_n0: u32,
    hg_a_n1: u32,
    hg_a_n2: u32,
    hg_a_passmax: u32,
}
@group(0) @binding(4) var<uniform> hg_u: HgUniform;
@group(0) @binding(5) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_b0_a: vec2<u32>;
var<private> hg_w_b1_b: vec2<u32>;
var<private> hg_w_b2_out: vec2<u32>;
var<private> hg_w_trapflag: vec2<u32>;
var<private> hg_bad: u32;
var<workgroup> hg_s_s3_ta: array<u32, 256>;
var<workgroup> hg_s_s4_tb: array<u32, 256>;

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
fn load_trapflag(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_trapflag.x;
    if (hg_k >= hg_w_trapflag.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_trapflag[hg_k];
}
fn store_trapflag(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_trapflag.x;
    if (hg_k >= hg_w_trapflag.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_trapflag[hg_k] = hg_v;
}
fn load_s3_ta(hg_i: u32) -> u32 { return hg_s_s3_ta[hg_i]; }
fn store_s3_ta(hg_i: u32, hg_v: u32) { hg_s_s3_ta[hg_i] = hg_v; }
fn load_s4_tb(hg_i: u32) -> u32 { return hg_s_s4_tb[hg_i]; }
fn store_s4_tb(hg_i: u32, hg_v: u32) { hg_s_s4_tb[hg_i] = hg_v; }

fn hg_main(hg_id: vec3<u32>) {
    hg_w_b0_a = vec2<u32>(hg_u.hg_d_b0_a, arrayLength(&hg_m_b0_a));
    hg_w_b1_b = vec2<u32>(hg_u.hg_d_b1_b, arrayLength(&hg_m_b1_b));
    hg_w_b2_out = vec2<u32>(hg_u.hg_d_b2_out, arrayLength(&hg_m_b2_out));
    hg_w_trapflag = vec2<u32>(hg_u.hg_d_trapflag, arrayLength(&hg_m_trapflag));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n0: u32 = hg_u.hg_a_n0;
    let n1: u32 = hg_u.hg_a_n1;
    let n2: u32 = hg_u.hg_a_n2;
    let passmax: u32 = hg_u.hg_a_passmax;
    var upasses: u32 = 0u;
    var t1: u32 = (hg_gid0 % 16u) + (16u * ((hg_gid1 % 16u) + (16u * (hg_gid2 % 1u))));
    var z2: u32 = t1;
    for (; z2 < 0x100u; z2 += 0x100u) {
        store_s3_ta(z2, 0u);
    }
    if (z2 < 0x100u) {
        store_trapflag(1u, 1u);
    }
    var z3: u32 = t1;
    for (; z3 < 0x100u; z3 += 0x100u) {
        store_s4_tb(z3, 0u);
    }
    if (z3 < 0x100u) {
        store_trapflag(1u, 1u);
    }
    storageBarrier(); workgroupBarrier();
    {
        var l_c_4: u32 = hg_gid0;
        var l_r_5: u32 = hg_gid1;
        var l_acc_6: u32 = 0u;
        var t7: u32 = 0u;
        var t8: u32 = 2u;
        var l_t_9: u32 = t7;
        var t10: u32 = select(t7, t7 + select(passmax - upasses, t8 - t7, (t8 - t7) < (passmax - upasses)), t8 > t7);
        upasses = upasses + (t10 - t7);
        for (; l_t_9 < t10; l_t_9++) {
            var t11: u32 = (hg_gid1 % 16u) * 16u;
            var t12: u32 = t11 + (hg_gid0 % 16u);
            var t13: bool = l_r_5 < 32u;
            var t14: u32 = l_t_9 * 16u;
            var t15: u32 = t14 + (hg_gid0 % 16u);
            var t16: bool = t15 < 32u;
            var t17: bool = t13 && t16;
            var t18: u32 = l_r_5 * 32u;
            var t19: u32 = l_t_9 * 16u;
            var t20: u32 = t19 + (hg_gid0 % 16u);
            var t21: u32 = t18 + t20;
            var hg_t0: u32;
            if (t21 < n0) {
                hg_t0 = load_b0_a(t21);
            } else {
                hg_t0 = 0u;
            }
            var t22: u32 = hg_t0;
            var t23: u32 = select(0u, t22, t17);
            if (t12 < 0x100u) {
                store_s3_ta(t12, t23);
            }
            var t24: u32 = (hg_gid1 % 16u) * 16u;
            var t25: u32 = t24 + (hg_gid0 % 16u);
            var t26: u32 = l_t_9 * 16u;
            var t27: u32 = t26 + (hg_gid1 % 16u);
            var t28: bool = t27 < 32u;
            var t29: bool = l_c_4 < 32u;
            var t30: bool = t28 && t29;
            var t31: u32 = l_t_9 * 16u;
            var t32: u32 = t31 + (hg_gid1 % 16u);
            var t33: u32 = t32 * 32u;
            var t34: u32 = t33 + l_c_4;
            var hg_t1: u32;
            if (t34 < n1) {
                hg_t1 = load_b1_b(t34);
            } else {
                hg_t1 = 0u;
            }
            var t35: u32 = hg_t1;
            var t36: u32 = select(0u, t35, t30);
            if (t25 < 0x100u) {
                store_s4_tb(t25, t36);
            }
            storageBarrier(); workgroupBarrier();
            var t37: u32 = 0u;
            var t38: u32 = 16u;
            var l_k_39: u32 = t37;
            var t40: u32 = select(t37, t37 + select(passmax - upasses, t38 - t37, (t38 - t37) < (passmax - upasses)), t38 > t37);
            upasses = upasses + (t40 - t37);
            for (; l_k_39 < t40; l_k_39++) {
                var t41: u32 = (hg_gid1 % 16u) * 16u;
                var t42: u32 = t41 + l_k_39;
                var hg_t2: u32;
                if (t42 < 0x100u) {
                    hg_t2 = load_s3_ta(t42);
                } else {
                    hg_t2 = 0u;
                }
                var t43: u32 = hg_t2;
                var t44: u32 = l_k_39 * 16u;
                var t45: u32 = t44 + (hg_gid0 % 16u);
                var hg_t3: u32;
                if (t45 < 0x100u) {
                    hg_t3 = load_s4_tb(t45);
                } else {
                    hg_t3 = 0u;
                }
                var t46: u32 = hg_t3;
                var t47: u32 = t43 * t46;
                var t48: u32 = l_acc_6 + t47;
                l_acc_6 = t48;
            }
            if (l_k_39 < t38) {
                store_trapflag(1u, 1u);
            }
            storageBarrier(); workgroupBarrier();
        }
        if (l_t_9 < t8) {
            store_trapflag(1u, 1u);
        }
        var t49: bool = l_r_5 < 32u;
        var t50: bool = l_c_4 < 32u;
        var t51: bool = t49 && t50;
        if (t51) {
            var t52: u32 = l_r_5 * 32u;
            var t53: u32 = t52 + l_c_4;
            if (t53 < n2) {
                store_b2_out(t53, l_acc_6);
            }
        }
    }
}

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
