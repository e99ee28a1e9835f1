@group(0) @binding(0) var<storage, read_write> hg_m_b0_a: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_b1_out: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_trapflag: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_b0_a: u32,
    hg_d_b1_out: u32,
    hg_d_trapflag: u32,
    hg_a_n0: u32,
    hg_a_n1: u32,
    hg_a_passmax: u32,
}
@group(0) @binding(3) var<uniform> hg_u: HgUniform;
@group(0) @binding(4) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_b0_a: vec2<u32>;
var<private> hg_w_b1_out: vec2<u32>;
var<private> hg_w_trapflag: vec2<u32>;
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

fn hg_main(hg_id: vec3<u32>) {
    hg_w_b0_a = vec2<u32>(hg_u.hg_d_b0_a, arrayLength(&hg_m_b0_a));
    hg_w_b1_out = vec2<u32>(hg_u.hg_d_b1_out, arrayLength(&hg_m_b1_out));
    hg_w_trapflag = vec2<u32>(hg_u.hg_d_trapflag, arrayLength(&hg_m_trapflag));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n0: u32 = hg_u.hg_a_n0;
    let n1: u32 = hg_u.hg_a_n1;
    let passmax: u32 = hg_u.hg_a_passmax;
    var passes: u32 = 0u;
    {
        var l_i_1: u32 = hg_gid0;
        var t2: bool = l_i_1 < n1;
        if (t2) {
            var l_acc_3: u32 = 0u;
            var hg_t0: u32;
            if (l_i_1 < n0) {
                hg_t0 = load_b0_a(l_i_1);
            } else {
                hg_t0 = 0u;
            }
            var t4: u32 = hg_t0;
            var t5: u32 = 0u;
            var t6: u32 = t4;
            var l_j_7: u32 = t5;
            var t8: u32 = select(t5, t5 + select(passmax - passes, t6 - t5, (t6 - t5) < (passmax - passes)), t6 > t5);
            passes = passes + (t8 - t5);
            for (; l_j_7 < t8; l_j_7++) {
                var t9: u32 = l_acc_3 + l_j_7;
                l_acc_3 = t9;
            }
            if (l_j_7 < t6) {
                store_trapflag(1u, 1u);
            }
            if (l_i_1 < n1) {
                store_b1_out(l_i_1, l_acc_3);
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
