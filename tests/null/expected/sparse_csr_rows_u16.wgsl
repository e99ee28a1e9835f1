@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> hg_m_vals: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_ci: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_rp: array<u32>;
@group(0) @binding(4) var<storage, read_write> hg_m_err: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_vals: u32,
    hg_d_ci: u32,
    hg_d_rp: u32,
    hg_d_err: u32,
    hg_a_nrows: u32,
    hg_a_ncols: u32,
    hg_a_nnz: u32,
    hg_a_wpe: u32,
    hg_a_seg: u32,
}
@group(0) @binding(5) var<uniform> hg_u: HgUniform;
@group(0) @binding(6) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_dst: vec2<u32>;
var<private> hg_w_vals: vec2<u32>;
var<private> hg_w_ci: vec2<u32>;
var<private> hg_w_rp: vec2<u32>;
var<private> hg_w_err: vec2<u32>;
var<private> hg_bad: u32;

fn store_dst(hg_i: u32, hg_v: u32) {
    let hg_k = (hg_i >> 1u) + hg_w_dst.x;
    if (hg_k >= hg_w_dst.y) {
        hg_bad = 1u;
        return;
    }
    let hg_s = (hg_i & 1u) * 16u;
    atomicAnd(&hg_m_dst[hg_k], ~(0xffffu << hg_s));
    atomicOr(&hg_m_dst[hg_k], (hg_v & 0xffffu) << hg_s);
}
fn load_vals(hg_i: u32) -> u32 {
    let hg_k = (hg_i >> 1u) + hg_w_vals.x;
    if (hg_k >= hg_w_vals.y) {
        hg_bad = 1u;
        return 0u;
    }
    return ((hg_m_vals[hg_k] >> ((hg_i & 1u) * 16u)) & 0xffffu);
}
fn load_ci(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_ci.x;
    if (hg_k >= hg_w_ci.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_ci[hg_k];
}
fn load_rp(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_rp.x;
    if (hg_k >= hg_w_rp.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_rp[hg_k];
}
fn load_err(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_err.x;
    if (hg_k >= hg_w_err.y) {
        hg_bad = 1u;
        return 0u;
    }
    return hg_m_err[hg_k];
}
fn store_err(hg_i: u32, hg_v: u32) {
    let hg_k = hg_i + hg_w_err.x;
    if (hg_k >= hg_w_err.y) {
        hg_bad = 1u;
        return;
    }
    hg_m_err[hg_k] = hg_v;
}

fn hg_main(hg_id: vec3<u32>) {
    hg_w_dst = vec2<u32>(hg_u.hg_d_dst, arrayLength(&hg_m_dst));
    hg_w_vals = vec2<u32>(hg_u.hg_d_vals, arrayLength(&hg_m_vals));
    hg_w_ci = vec2<u32>(hg_u.hg_d_ci, arrayLength(&hg_m_ci));
    hg_w_rp = vec2<u32>(hg_u.hg_d_rp, arrayLength(&hg_m_rp));
    hg_w_err = vec2<u32>(hg_u.hg_d_err, arrayLength(&hg_m_err));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let nrows: u32 = hg_u.hg_a_nrows;
    let ncols: u32 = hg_u.hg_a_ncols;
    let nnz: u32 = hg_u.hg_a_nnz;
    let wpe: u32 = hg_u.hg_a_wpe;
    let seg: u32 = hg_u.hg_a_seg;
    var c0: u32 = hg_gid0 * seg;
    var r: u32 = hg_gid1;
    if ((c0 >= ncols) || (r >= nrows)) {
        return;
    }
    var c1: u32 = c0 + min(ncols - c0, seg);
    var o: u32 = r * ncols;
    var z1: u32 = (o + c1) * wpe;
    for (var j: u32 = (o + c0) * wpe; j < z1; j++) {
        store_dst(j, 0u);
    }
    var a: u32 = load_rp(2u * r);
    var b: u32 = load_rp((2u * r) + 2u);
    if ((((((load_rp((2u * r) + 1u) | load_rp((2u * r) + 3u)) != 0u) || (a > b)) || (b > nnz)) || ((r == 0u) && (a != 0u))) || (((r + 1u) == nrows) && (b != nnz))) {
        store_err(0u, 1u);
        return;
    }
    var lo: u32 = a;
    var hi: u32 = b;
    var k: u32 = a;
    if (c0 != 0u) {
        lo = a;
        hi = b;
        while (lo < hi) {
            var md: u32 = lo + ((hi - lo) / 2u);
            if ((load_ci((2u * md) + 1u) == 0u) && (load_ci(2u * md) < c0)) {
                lo = md + 1u;
            } else {
                hi = md;
            }
        }
        k = lo;
    }
    var next: u32 = c0;
    for (; k < b; k++) {
        var v: u32 = load_ci(2u * k);
        if ((load_ci((2u * k) + 1u) != 0u) || (v < next)) {
            store_err(0u, 1u);
            return;
        }
        if (v >= c1) {
            break;
        }
        next = v + 1u;
        if (wpe == 1u) {
            store_dst(o + v, load_vals(k));
        } else {
            for (var w: u32 = 0u; w < wpe; w++) {
                store_dst(((o + v) * wpe) + w, load_vals((k * wpe) + w));
            }
        }
    }
    if (c1 != ncols) {
        lo = a;
        hi = b;
        while (lo < hi) {
            var md: u32 = lo + ((hi - lo) / 2u);
            if ((load_ci((2u * md) + 1u) == 0u) && (load_ci(2u * md) < c1)) {
                lo = md + 1u;
            } else {
                hi = md;
            }
        }
        if (k != lo) {
            store_err(0u, 1u);
        }
    } else if (k != b) {
        store_err(0u, 1u);
    }
}

@compute @workgroup_size(64, 4, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_main(hg_id);
    if (hg_bad != 0u) {
        atomicOr(&hg_fault, 1u);
    }
}
