@group(0) @binding(0) var<storage, read_write> hg_m_dst: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> hg_m_src: array<u32>;
@group(0) @binding(2) var<storage, read_write> hg_m_tx: array<u32>;
@group(0) @binding(3) var<storage, read_write> hg_m_ty: array<u32>;
@group(0) @binding(4) var<storage, read_write> hg_m_tz: array<u32>;
struct HgUniform {
    hg_base0: u32,
    hg_base1: u32,
    hg_base2: u32,
    hg_d_dst: u32,
    hg_d_src: u32,
    hg_d_tx: u32,
    hg_d_ty: u32,
    hg_d_tz: u32,
    hg_a_nx: u32,
    hg_a_ny: u32,
    hg_a_nz: u32,
    hg_a_wpe: u32,
    hg_a_woff: u32,
    hg_a_nsrc: u32,
    hg_a_bx: u32,
    hg_a_by: u32,
}
@group(0) @binding(5) var<uniform> hg_u: HgUniform;
@group(0) @binding(6) var<storage, read_write> hg_fault: atomic<u32>;
var<private> hg_w_dst: vec2<u32>;
var<private> hg_w_src: vec2<u32>;
var<private> hg_w_tx: vec2<u32>;
var<private> hg_w_ty: vec2<u32>;
var<private> hg_w_tz: vec2<u32>;

fn store_dst(hg_i: u32, hg_v: u32) {
    let hg_k = (hg_i >> 2u) + hg_w_dst.x;
    if (hg_k >= hg_w_dst.y) {
        atomicOr(&hg_fault, 1u);
        return;
    }
    let hg_s = (hg_i & 3u) * 8u;
    atomicAnd(&hg_m_dst[hg_k], ~(0xffu << hg_s));
    atomicOr(&hg_m_dst[hg_k], (hg_v & 0xffu) << hg_s);
}
fn load_src(hg_i: u32) -> u32 {
    let hg_k = (hg_i >> 2u) + hg_w_src.x;
    if (hg_k >= hg_w_src.y) {
        atomicOr(&hg_fault, 1u);
        return 0u;
    }
    return ((hg_m_src[hg_k] >> ((hg_i & 3u) * 8u)) & 0xffu);
}
fn load_tx(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_tx.x;
    if (hg_k >= hg_w_tx.y) {
        atomicOr(&hg_fault, 1u);
        return 0u;
    }
    return hg_m_tx[hg_k];
}
fn load_ty(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_ty.x;
    if (hg_k >= hg_w_ty.y) {
        atomicOr(&hg_fault, 1u);
        return 0u;
    }
    return hg_m_ty[hg_k];
}
fn load_tz(hg_i: u32) -> u32 {
    let hg_k = hg_i + hg_w_tz.x;
    if (hg_k >= hg_w_tz.y) {
        atomicOr(&hg_fault, 1u);
        return 0u;
    }
    return hg_m_tz[hg_k];
}

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) hg_id: vec3<u32>) {
    hg_w_dst = vec2<u32>(hg_u.hg_d_dst, arrayLength(&hg_m_dst));
    hg_w_src = vec2<u32>(hg_u.hg_d_src, arrayLength(&hg_m_src));
    hg_w_tx = vec2<u32>(hg_u.hg_d_tx, arrayLength(&hg_m_tx));
    hg_w_ty = vec2<u32>(hg_u.hg_d_ty, arrayLength(&hg_m_ty));
    hg_w_tz = vec2<u32>(hg_u.hg_d_tz, arrayLength(&hg_m_tz));
    let hg_gid0 = hg_id.x + hg_u.hg_base0;
    let hg_gid1 = hg_id.y + hg_u.hg_base1;
    let hg_gid2 = hg_id.z + hg_u.hg_base2;
    let nx: u32 = hg_u.hg_a_nx;
    let ny: u32 = hg_u.hg_a_ny;
    let nz: u32 = hg_u.hg_a_nz;
    let wpe: u32 = hg_u.hg_a_wpe;
    let woff: u32 = hg_u.hg_a_woff;
    let nsrc: u32 = hg_u.hg_a_nsrc;
    let bx: u32 = hg_u.hg_a_bx;
    let by: u32 = hg_u.hg_a_by;
    var x0: u32 = hg_gid0 * bx;
    var y0: u32 = hg_gid1 * by;
    var z: u32 = hg_gid2;
    if (((x0 >= nx) || (y0 >= ny)) || (z >= nz)) {
        return;
    }
    var x1: u32 = x0 + min(nx - x0, bx);
    var y1: u32 = y0 + min(ny - y0, by);
    var oz: u32 = load_tz(z);
    var brk: u32 = 0u;
    var mx: u32 = load_tx(x0);
    for (var x: u32 = x0 + 1u; x < x1; x++) {
        if (load_tx(x) != (load_tx(x - 1u) + 1u)) {
            brk = brk | (x - x0);
        }
        mx = max(mx, load_tx(x));
    }
    var my: u32 = 0u;
    for (var y: u32 = y0; y < y1; y++) {
        my = max(my, load_ty(y));
    }
    var hi: u32 = woff + oz;
    var inb: u32 = select(0u, 1u, (((hi >= woff) && ((hi + my) >= hi)) && (((hi + my) + mx) >= (hi + my))) && (((hi + my) + mx) < nsrc));
    var xd: u32 = (brk & 7u) | (wpe - 1u);
    var yd: u32 = select(wpe - 1u, 1u, xd == 0u);
    var zd: u32 = yd;
    for (var y: u32 = y0; ((y + 8u) <= y1) && ((yd == 0u) || (zd == 0u)); y += 8u) {
        for (var k: u32 = 1u; k < 8u; k++) {
            var zk: u32 = ((k & 1u) | ((k & 2u) << 1u)) | ((k & 4u) << 2u);
            yd = yd | (load_ty(y + k) ^ (load_ty(y) + k));
            zd = zd | (load_ty(y + k) ^ (load_ty(y) + zk));
        }
    }
    for (var x: u32 = x0; ((x + 8u) <= x1) && (zd == 0u); x += 8u) {
        for (var k: u32 = 1u; k < 8u; k++) {
            var zk: u32 = (((k & 1u) << 1u) | ((k & 2u) << 2u)) | ((k & 4u) << 3u);
            zd = zd | (load_tx(x + k) ^ (load_tx(x) + zk));
        }
    }
    var yt: u32 = y0;
    var sc: u32 = load_tx(x0 + min((x1 - x0) - 1u, 1u)) - load_tx(x0);
    var t16: u32 = select(0u, 1u, (((yd == 0u) && (inb == 1u)) && (((x1 - x0) & 15u) == 0u)) && (((y1 - y0) & 15u) == 0u));
    for (var x: u32 = x0; (x < x1) && (t16 == 1u); x++) {
        if (load_tx(x) != (load_tx(x0) + ((x - x0) * sc))) {
            t16 = 0u;
        }
    }
    for (var y: u32 = y0; (y < y1) && (t16 == 1u); y += 16u) {
        if (load_ty(y + 8u) != (load_ty(y) + 8u)) {
            t16 = 0u;
        }
    }
    var z16: u32 = select(0u, 1u, (((zd == 0u) && (inb == 1u)) && (((x1 - x0) & 15u) == 0u)) && (((y1 - y0) & 15u) == 0u));
    for (var y: u32 = y0; (y < y1) && (z16 == 1u); y += 16u) {
        if (load_ty(y + 8u) != (load_ty(y) + 64u)) {
            z16 = 0u;
        }
    }
    for (var x: u32 = x0; (x < x1) && (z16 == 1u); x += 16u) {
        if (load_tx(x + 8u) != (load_tx(x) + 128u)) {
            z16 = 0u;
        }
    }
    var nall: u32 = (nx * ny) * nz;
    for (; ((t16 == 1u) || (z16 == 1u)) && (yt < y1); yt += 16u) {
        var sb: u32 = hi + load_ty(yt);
        var f: u32 = ((z * ny) + yt) * nx;
        for (var x: u32 = x0; x < x1; x += 16u) {
            var s0: u32 = sb + load_tx(x);
            if (t16 == 1u) {
                for (var t8j: u32 = 0u; t8j < 16u; t8j++) {
                    for (var t8k: u32 = 0u; t8k < 16u; t8k++) {
                        store_dst(((f + x) + (t8j * nx)) + t8k, load_src((s0 + (t8k * sc)) + t8j));
                    }
                }
            } else {
                for (var t8j: u32 = 0u; t8j < 16u; t8j++) {
                    for (var t8k: u32 = 0u; t8k < 16u; t8k++) {
                        store_dst(((f + x) + (t8j * nx)) + t8k, load_src(s0 + ((((((((t8j & 1u) | ((t8k & 1u) << 1u)) | ((t8j & 2u) << 1u)) | ((t8k & 2u) << 2u)) | ((t8j & 4u) << 2u)) | ((t8k & 4u) << 3u)) | ((t8j & 8u) << 3u)) | ((t8k & 8u) << 4u))));
                    }
                }
            }
        }
    }
    for (; ((yd == 0u) || (zd == 0u)) && ((yt + 8u) <= y1); yt += 8u) {
        var sb: u32 = hi + load_ty(yt);
        var f: u32 = ((z * ny) + yt) * nx;
        for (var x: u32 = x0; x < x1; x += 8u) {
            var xe: u32 = min(x1 - x, 8u);
            var s0: u32 = sb + load_tx(x);
            var hg_t0: u32;
            if (xe == 8u) {
                hg_t0 = load_tx(x + 1u) - load_tx(x);
            } else {
                hg_t0 = 0u;
            }
            var sd: u32 = hg_t0;
            var ok: u32 = select(0u, 1u, (xe == 8u) && ((yd == 0u) || (((s0 + 63u) < nsrc) && ((s0 + 63u) >= s0))));
            for (var k: u32 = 0u; ((k < 8u) && (ok == 1u)) && (yd == 0u); k++) {
                var s: u32 = sb + load_tx(x + k);
                if (((s != (s0 + (k * sd))) || ((s + 7u) >= nsrc)) || ((s + 7u) < s)) {
                    ok = 0u;
                }
            }
            if ((ok == 1u) && (yd == 0u)) {
                for (var t8j: u32 = 0u; t8j < 8u; t8j++) {
                    for (var t8k: u32 = 0u; t8k < 8u; t8k++) {
                        store_dst(((f + x) + (t8j * nx)) + t8k, load_src((s0 + (t8k * sd)) + t8j));
                    }
                }
            } else if (ok == 1u) {
                for (var t8j: u32 = 0u; t8j < 8u; t8j++) {
                    for (var t8k: u32 = 0u; t8k < 8u; t8k++) {
                        store_dst(((f + x) + (t8j * nx)) + t8k, load_src(s0 + ((((((t8j & 1u) | ((t8k & 1u) << 1u)) | ((t8j & 2u) << 1u)) | ((t8k & 2u) << 2u)) | ((t8j & 4u) << 2u)) | ((t8k & 4u) << 3u))));
                    }
                }
            } else {
                for (var j: u32 = 0u; j < 8u; j++) {
                    for (var k: u32 = 0u; k < xe; k++) {
                        var s: u32 = (hi + load_ty(yt + j)) + load_tx(x + k);
                        var hg_t1: u32;
                        if (s < nsrc) {
                            hg_t1 = load_src(s);
                        } else {
                            hg_t1 = 0u;
                        }
                        store_dst(((f + (j * nx)) + x) + k, hg_t1);
                    }
                }
            }
        }
    }
    for (var y: u32 = yt; y < y1; y++) {
        var oy: u32 = oz + load_ty(y);
        var f: u32 = ((z * ny) + y) * nx;
        var b: u32 = woff + oy;
        var x: u32 = x0;
        for (; ((xd == 0u) && ((brk & 31u) == 0u)) && ((x + 32u) <= x1); x += 32u) {
            var s: u32 = b + load_tx(x);
            if (((s + 31u) >= nsrc) || ((s + 31u) < s)) {
                break;
            }
            for (var c8k: u32 = 0u; c8k < 8u; c8k++) {
                store_dst((f + x) + c8k, load_src(s + c8k));
            }
            for (var c8k: u32 = 0u; c8k < 8u; c8k++) {
                store_dst(((f + x) + 8u) + c8k, load_src((s + 8u) + c8k));
            }
            for (var c8k: u32 = 0u; c8k < 8u; c8k++) {
                store_dst(((f + x) + 16u) + c8k, load_src((s + 16u) + c8k));
            }
            for (var c8k: u32 = 0u; c8k < 8u; c8k++) {
                store_dst(((f + x) + 24u) + c8k, load_src((s + 24u) + c8k));
            }
        }
        for (; (xd == 0u) && ((x + 8u) <= x1); x += 8u) {
            var s: u32 = b + load_tx(x);
            if (((s + 7u) >= nsrc) || ((s + 7u) < s)) {
                break;
            }
            for (var c8k: u32 = 0u; c8k < 8u; c8k++) {
                store_dst((f + x) + c8k, load_src(s + c8k));
            }
        }
        for (; ((x < x1) && (wpe == 1u)) && (inb == 1u); x++) {
            store_dst(f + x, load_src(b + load_tx(x)));
        }
        for (; (x < x1) && (wpe == 1u); x++) {
            var s: u32 = b + load_tx(x);
            var hg_t2: u32;
            if (s < nsrc) {
                hg_t2 = load_src(s);
            } else {
                hg_t2 = 0u;
            }
            store_dst(f + x, hg_t2);
        }
        for (; x < x1; x++) {
            var s: u32 = woff + ((oy + load_tx(x)) * wpe);
            for (var w: u32 = 0u; w < wpe; w++) {
                var v: u32 = 0u;
                if (((s + w) < nsrc) && ((s + w) >= s)) {
                    v = load_src(s + w);
                }
                store_dst(((f + x) * wpe) + w, v);
            }
        }
    }
}
