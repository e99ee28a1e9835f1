@group(0) @binding(0) var<storage, read_write> hg_m_kdst: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> hg_m_vdst: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> hg_m_kpool: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_vpool: array<u32>;
@group(0) @binding(4) var<storage, read_write> hg_m_slots: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_kdst: u32,
    hg_d_vdst: u32,
    hg_d_kpool: u32,
    hg_d_vpool: u32,
    hg_d_slots: u32,
    hg_a_n: u32,
    hg_a_lanes: u32,
    hg_a_row: u32,
    hg_a_num_slots: u32,
}
@group(0) @binding(5) var<uniform> hg_u: HgUniform;
@group(0) @binding(6) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_kdst: vec2<u32>;
var<private> hg_w_vdst: vec2<u32>;
var<private> hg_w_kpool: vec2<u32>;
var<private> hg_w_vpool: vec2<u32>;
var<private> hg_w_slots: vec2<u32>;
var<private> hg_bad: u32;

fn hg_f32_to_bf16(v: f32) -> u32 {
    var b: u32 = bitcast<u32>(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return ((b >> 16u) & 0x8000u) | 0x7fc0u;
    }
    return ((b + 0x7fffu) + ((b >> 16u) & 1u)) >> 16u;
}

fn store_kdst(hg_i: u32, hg_v: f32) {
    let hg_k = (hg_i >> 1u) + hg_w_kdst.x;
    if (hg_k >= hg_w_kdst.y) {
        hg_bad = 1u;
        return;
    }
    let hg_s = (hg_i & 1u) * 16u;
    atomicAnd(&hg_m_kdst[hg_k], ~(0xffffu << hg_s));
    atomicOr(&hg_m_kdst[hg_k], (hg_f32_to_bf16(hg_v) & 0xffffu) << hg_s);
}
fn store_vdst(hg_i: u32, hg_v: f32) {
    let hg_k = (hg_i >> 1u) + hg_w_vdst.x;
    if (hg_k >= hg_w_vdst.y) {
        hg_bad = 1u;
        return;
    }
    let hg_s = (hg_i & 1u) * 16u;
    atomicAnd(&hg_m_vdst[hg_k], ~(0xffffu << hg_s));
    atomicOr(&hg_m_vdst[hg_k], (hg_f32_to_bf16(hg_v) & 0xffffu) << hg_s);
}
fn load_kpool(hg_i: u32) -> u32 {
    let hg_k = (hg_i >> 2u) + hg_w_kpool.x;
    if (hg_k >= hg_w_kpool.y) {
        hg_bad = 1u;
        return 0u;
    }
    return ((hg_m_kpool[hg_k] >> ((hg_i & 3u) * 8u)) & 0xffu);
}
fn load_vpool(hg_i: u32) -> u32 {
    let hg_k = (hg_i >> 2u) + hg_w_vpool.x;
    if (hg_k >= hg_w_vpool.y) {
        hg_bad = 1u;
        return 0u;
    }
    return ((hg_m_vpool[hg_k] >> ((hg_i & 3u) * 8u)) & 0xffu);
}
fn load_slots(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_slots.x;
    if (hg_k >= hg_w_slots.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_slots[hg_k];
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_kdst = vec2<u32>(hg_u.hg_d_kdst, arrayLength(&hg_m_kdst));
    hg_w_vdst = vec2<u32>(hg_u.hg_d_vdst, arrayLength(&hg_m_vdst));
    hg_w_kpool = vec2<u32>(hg_u.hg_d_kpool, arrayLength(&hg_m_kpool));
    hg_w_vpool = vec2<u32>(hg_u.hg_d_vpool, arrayLength(&hg_m_vpool));
    hg_w_slots = vec2<u32>(hg_u.hg_d_slots, arrayLength(&hg_m_slots));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let n: u32 = hg_u.hg_a_n;
    let lanes: u32 = hg_u.hg_a_lanes;
    let row: u32 = hg_u.hg_a_row;
    let num_slots: u32 = hg_u.hg_a_num_slots;
    var i: u32 = hg_gid0;
    if (((((i >= n) || (lanes == 0u)) || (lanes > 0x1000u)) || (row == 0u)) || (row > 0xffffefffu)) {
        return;
    }
    var t: u32 = i / lanes;
    if (t >= (n / lanes)) {
        return;
    }
    var lane: u32 = i - (t * lanes);
    var slot: u32 = load_slots(t);
    if (slot == 0xfffffffeu) {
        return;
    }
    var to: u32 = t * row;
    if (slot >= num_slots) {
        for (var w: u32 = lane; w < row; w += lanes) {
            store_kdst(to + w, 0.0f);
            store_vdst(to + w, 0.0f);
        }
        return;
    }
    var from_: u32 = slot * row;
    for (var w: u32 = lane; w < row; w += lanes) {
        var c: u32 = load_kpool(from_ + w);
        var sign: u32 = (c & 128u) << 24u;
        var e: u32 = (c >> 3u) & 15u;
        var m: u32 = c & 7u;
        var v: f32 = bitcast<f32>((sign | ((e + 120u) << 23u)) | (m << 20u));
        if ((e == 15u) && (m == 7u)) {
            v = bitcast<f32>(sign | 0x7fc00000u);
        }
        if (e == 0u) {
            v = bitcast<f32>(sign | (bitcast<u32>(f32(m) * 0.001953125f)));
        }
        store_kdst(to + w, v);
    }
    for (var w: u32 = lane; w < row; w += lanes) {
        var c: u32 = load_vpool(from_ + w);
        var sign: u32 = (c & 128u) << 24u;
        var e: u32 = (c >> 3u) & 15u;
        var m: u32 = c & 7u;
        var v: f32 = bitcast<f32>((sign | ((e + 120u) << 23u)) | (m << 20u));
        if ((e == 15u) && (m == 7u)) {
            v = bitcast<f32>(sign | 0x7fc00000u);
        }
        if (e == 0u) {
            v = bitcast<f32>(sign | (bitcast<u32>(f32(m) * 0.001953125f)));
        }
        store_vdst(to + w, v);
    }
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
