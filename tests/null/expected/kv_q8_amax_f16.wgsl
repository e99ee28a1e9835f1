@group(0) @binding(0) var<storage, read_write> hg_m_kpart: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_vpart: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_ksrc: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_vsrc: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_kpart: u32,
    hg_d_vpart: u32,
    hg_d_ksrc: u32,
    hg_d_vsrc: u32,
    hg_a_n: u32,
    hg_a_lanes: u32,
    hg_a_row: u32,
    hg_a_num_slots: u32,
}
@group(0) @binding(4) var<uniform> hg_u: HgUniform;
@group(0) @binding(5) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_kpart: vec2<u32>;
var<private> hg_w_vpart: vec2<u32>;
var<private> hg_w_ksrc: vec2<u32>;
var<private> hg_w_vsrc: vec2<u32>;
var<private> hg_bad: u32;

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

fn store_kpart(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_kpart.x;
    if (hg_k >= hg_w_kpart.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_kpart[hg_k] = hg_v;
}
fn store_vpart(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_vpart.x;
    if (hg_k >= hg_w_vpart.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_vpart[hg_k] = hg_v;
}
fn load_ksrc(hg_i: u32) -> f32 {
    let hg_k = (hg_i >> 1u) + hg_w_ksrc.x;
    if (hg_k >= hg_w_ksrc.y) {
        hg_bad = 1u;
        return 0.0f;
    }
    return hg_f16_to_f32((hg_m_ksrc[hg_k] >> ((hg_i & 1u) * 16u)) & 0xffffu);
}
fn load_vsrc(hg_i: u32) -> f32 {
    let hg_k = (hg_i >> 1u) + hg_w_vsrc.x;
    if (hg_k >= hg_w_vsrc.y) {
        hg_bad = 1u;
        return 0.0f;
    }
    return hg_f16_to_f32((hg_m_vsrc[hg_k] >> ((hg_i & 1u) * 16u)) & 0xffffu);
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_kpart = vec2<u32>(hg_u.hg_d_kpart, arrayLength(&hg_m_kpart));
    hg_w_vpart = vec2<u32>(hg_u.hg_d_vpart, arrayLength(&hg_m_vpart));
    hg_w_ksrc = vec2<u32>(hg_u.hg_d_ksrc, arrayLength(&hg_m_ksrc));
    hg_w_vsrc = vec2<u32>(hg_u.hg_d_vsrc, arrayLength(&hg_m_vsrc));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n: u32 = hg_u.hg_a_n;
    let lanes: u32 = hg_u.hg_a_lanes;
    let row: u32 = hg_u.hg_a_row;
    let num_slots: u32 = hg_u.hg_a_num_slots;
    var i: u32 = hg_gid0;
    if ((((i >= n) || (lanes == 0u)) || (lanes > 0x1000u)) || (row > 0xffffefffu)) {
        return;
    }
    var t: u32 = i / lanes;
    if (t >= (n / lanes)) {
        return;
    }
    var lane: u32 = i - (t * lanes);
    var from_: u32 = t * row;
    {
        var amax: u32 = 0u;
        for (var w: u32 = lane; w < row; w += lanes) {
            var a: u32 = (bitcast<u32>(load_ksrc(from_ + w))) & 0x7fffffffu;
            if (a < 0x7f800000u) {
                amax = max(amax, a);
            }
        }
        store_kpart(i, amax);
    }
    {
        var amax: u32 = 0u;
        for (var w: u32 = lane; w < row; w += lanes) {
            var a: u32 = (bitcast<u32>(load_vsrc(from_ + w))) & 0x7fffffffu;
            if (a < 0x7f800000u) {
                amax = max(amax, a);
            }
        }
        store_vpart(i, amax);
    }
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
