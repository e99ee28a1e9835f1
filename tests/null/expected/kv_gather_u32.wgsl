@group(0) @binding(0) var<storage, read_write> hg_m_kdst: array<u32>;
@group(0) @binding(1) var<storage, read_write> hg_m_vdst: array<u32>;
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

fn store_kdst(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_kdst.x;
    if (hg_k >= hg_w_kdst.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_kdst[hg_k] = hg_v;
}
fn store_vdst(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_vdst.x;
    if (hg_k >= hg_w_vdst.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_vdst[hg_k] = hg_v;
}
fn load_kpool(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_kpool.x;
    if (hg_k >= hg_w_kpool.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_kpool[hg_k];
}
fn load_vpool(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_vpool.x;
    if (hg_k >= hg_w_vpool.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_vpool[hg_k];
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
    if ((((i >= n) || (lanes == 0u)) || (lanes > 0x1000u)) || (row > 0xffffefffu)) {
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
    if (slot >= num_slots) {
        for (var w: u32 = lane; w < row; w += lanes) {
            store_kdst((t * row) + w, 0u);
            store_vdst((t * row) + w, 0u);
        }
        return;
    }
    if ((lanes == 1u) && (row <= (0x7fffffffu / max(max(num_slots, n), 1u)))) {
        var len: i32 = i32(row);
        var pos: i32 = i32(slot * row);
        var at: i32 = i32(t * row);
        for (var w: i32 = 0i; w < len; w++) {
            store_kdst(u32(at + w), load_kpool(u32(pos + w)));
        }
        for (var w: i32 = 0i; w < len; w++) {
            store_vdst(u32(at + w), load_vpool(u32(pos + w)));
        }
        return;
    }
    var from_: u32 = slot * row;
    var to: u32 = t * row;
    for (var w: u32 = lane; w < row; w += lanes) {
        store_kdst(to + w, load_kpool(from_ + w));
        store_vdst(to + w, load_vpool(from_ + w));
    }
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
