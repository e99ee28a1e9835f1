@group(0) @binding(0) var<storage, read_write> hg_m_b0_data: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_b1_hist: array<atomic<u32>>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_b0_data: u32,
    hg_d_b1_hist: u32,
    hg_a_n0: u32,
    hg_a_n1: u32,
}
@group(0) @binding(2) var<uniform> hg_u: HgUniform;
@group(0) @binding(3) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_b0_data: vec2<u32>;
var<private> hg_w_b1_hist: vec2<u32>;
var<private> hg_bad: u32;

fn load_b0_data(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_b0_data.x;
    if (hg_k >= hg_w_b0_data.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_b0_data[hg_k];
}
fn load_b1_hist(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_b1_hist.x;
    if (hg_k >= hg_w_b1_hist.y) {
        hg_bad = 1u;
        return 0u;
    }
    return atomicLoad(&hg_m_b1_hist[hg_k]);
}
fn store_b1_hist(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_b1_hist.x;
    if (hg_k >= hg_w_b1_hist.y) {
        hg_bad = 1u;
        return;
    }
    atomicStore(&hg_m_b1_hist[hg_k], hg_v);
}
fn atomic_add_b1_hist(hg_i: u32, hg_v: u32) -> u32 {
    let hg_k = hg_i + hg_w_b1_hist.x;
    if (hg_k >= hg_w_b1_hist.y) {
        hg_bad = 1u;
        return 0u;
    }
    return atomicAdd(&hg_m_b1_hist[hg_k], hg_v);
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_b0_data = vec2<u32>(hg_u.hg_d_b0_data, arrayLength(&hg_m_b0_data));
    hg_w_b1_hist = vec2<u32>(hg_u.hg_d_b1_hist, arrayLength(&hg_m_b1_hist));
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
                hg_t0 = load_b0_data(l_i_1);
            } else {
                hg_t0 = 0u;
            }
            var t3: u32 = hg_t0;
            var t4: u32 = select(t3 % select(4u, 1u, 4u == 0u), 0u, 4u == 0u);
            var t5: u32 = 0u;
            if (t4 < n1) {
                t5 = atomic_add_b1_hist(t4, 1u);
            }
            var l_old_6: u32 = t5;
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
