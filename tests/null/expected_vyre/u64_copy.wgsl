@group(0) @binding(0) var<storage, read_write> hg_m_b0_x: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_b1_y: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_b2_z: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_b0_x: u32,
    hg_d_b1_y: u32,
    hg_d_b2_z: u32,
    hg_a_n0: u32,
    hg_a_n1: u32,
    hg_a_n2: u32,
}
@group(0) @binding(3) var<uniform> hg_u: HgUniform;
@group(0) @binding(4) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_b0_x: vec2<u32>;
var<private> hg_w_b1_y: vec2<u32>;
var<private> hg_w_b2_z: vec2<u32>;
var<private> hg_bad: u32;

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
fn load_b2_z(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_b2_z.x;
    if (hg_k >= hg_w_b2_z.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_b2_z[hg_k];
}
fn store_b2_z(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_b2_z.x;
    if (hg_k >= hg_w_b2_z.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_b2_z[hg_k] = hg_v;
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_b0_x = vec2<u32>(hg_u.hg_d_b0_x, arrayLength(&hg_m_b0_x));
    hg_w_b1_y = vec2<u32>(hg_u.hg_d_b1_y, arrayLength(&hg_m_b1_y));
    hg_w_b2_z = vec2<u32>(hg_u.hg_d_b2_z, arrayLength(&hg_m_b2_z));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n0: u32 = hg_u.hg_a_n0;
    let n1: u32 = hg_u.hg_a_n1;
    let n2: u32 = hg_u.hg_a_n2;
    {
        var t1: bool = hg_gid0 < n0;
        var hg_t0: u32;
        if (t1) {
            hg_t0 = load_b0_x(2u * hg_gid0);
        } else {
            hg_t0 = 0u;
        }
        var t2w0: u32 = hg_t0;
        var hg_t1: u32;
        if (t1) {
            hg_t1 = load_b0_x((2u * hg_gid0) + 1u);
        } else {
            hg_t1 = 0u;
        }
        var t2w1: u32 = hg_t1;
        if (hg_gid0 < n1) {
            store_b1_y(2u * hg_gid0, t2w0);
            store_b1_y((2u * hg_gid0) + 1u, t2w1);
        }
        var t3: bool = hg_gid0 < n0;
        var hg_t2: u32;
        if (t3) {
            hg_t2 = load_b0_x(2u * hg_gid0);
        } else {
            hg_t2 = 0u;
        }
        var t4w0: u32 = hg_t2;
        var hg_t3: u32;
        if (t3) {
            hg_t3 = load_b0_x((2u * hg_gid0) + 1u);
        } else {
            hg_t3 = 0u;
        }
        var t4w1: u32 = hg_t3;
        var t5: bool = hg_gid0 < n1;
        var hg_t4: u32;
        if (t5) {
            hg_t4 = load_b1_y(2u * hg_gid0);
        } else {
            hg_t4 = 0u;
        }
        var t6w0: u32 = hg_t4;
        var hg_t5: u32;
        if (t5) {
            hg_t5 = load_b1_y((2u * hg_gid0) + 1u);
        } else {
            hg_t5 = 0u;
        }
        var t6w1: u32 = hg_t5;
        var t7: bool = (t4w1 < t6w1) || ((t4w1 == t6w1) && (t4w0 < t6w0));
        var t8: u32 = select(0u, 1u, t7);
        if (hg_gid0 < n2) {
            store_b2_z(hg_gid0, t8);
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
