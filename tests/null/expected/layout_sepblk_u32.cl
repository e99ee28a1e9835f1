#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uint)((hg_v)))
#define load_src(hg_i) (src[(hg_i)])
#define load_tx(hg_i) (tx[(hg_i)])
#define load_ty(hg_i) (ty[(hg_i)])
#define load_tz(hg_i) (tz[(hg_i)])

__kernel __attribute__((reqd_work_group_size(8, 8, 1))) void layout_sepblk_u32(__global uint* restrict dst, __global const uint* restrict src, __global const uint* restrict tx, __global const uint* restrict ty, __global const uint* restrict tz, uint nx, uint ny, uint nz, uint wpe, uint woff, uint nsrc, uint bx, uint by) {
    uint x0 = ((uint)get_global_id(0)) * bx;
    uint y0 = ((uint)get_global_id(1)) * by;
    uint z = ((uint)get_global_id(2));
    if (x0 >= nx || y0 >= ny || z >= nz) return;
    uint x1 = x0 + min(nx - x0, bx);
    uint y1 = y0 + min(ny - y0, by);
    uint oz = load_tz(z);
    uint brk = 0u;
    uint mx = load_tx(x0);
    for (uint x = x0 + 1u; x < x1; x++) {
        if (load_tx(x) != load_tx(x - 1u) + 1u) brk = brk | (x - x0);
        mx = max(mx, load_tx(x));
    }
    uint my = 0u;
    for (uint y = y0; y < y1; y++) my = max(my, load_ty(y));
    uint hi = woff + oz;
    uint inb = hi >= woff && hi + my >= hi && hi + my + mx >= hi + my && hi + my + mx < nsrc
        ? 1u : 0u;
    uint xd = (brk & 7u) | (wpe - 1u);
    uint yd = xd == 0u ? 1u : wpe - 1u;
    uint zd = yd;
    for (uint y = y0; y + 8u <= y1 && (yd == 0u || zd == 0u); y += 8u) {
        for (uint k = 1u; k < 8u; k++) {
            uint zk = (k & 1u) | ((k & 2u) << 1u) | ((k & 4u) << 2u);
            yd = yd | (load_ty(y + k) ^ (load_ty(y) + k));
            zd = zd | (load_ty(y + k) ^ (load_ty(y) + zk));
        }
    }
    for (uint x = x0; x + 8u <= x1 && zd == 0u; x += 8u) {
        for (uint k = 1u; k < 8u; k++) {
            uint zk = ((k & 1u) << 1u) | ((k & 2u) << 2u) | ((k & 4u) << 3u);
            zd = zd | (load_tx(x + k) ^ (load_tx(x) + zk));
        }
    }
    uint yt = y0;
    uint sc = load_tx(x0 + min(x1 - x0 - 1u, 1u)) - load_tx(x0);
    uint t16 = yd == 0u && inb == 1u && ((x1 - x0) & 15u) == 0u && ((y1 - y0) & 15u) == 0u ? 1u : 0u;
    for (uint x = x0; x < x1 && t16 == 1u; x++) {
        if (load_tx(x) != load_tx(x0) + (x - x0) * sc) t16 = 0u;
    }
    for (uint y = y0; y < y1 && t16 == 1u; y += 16u) {
        if (load_ty(y + 8u) != load_ty(y) + 8u) t16 = 0u;
    }
    uint z16 = zd == 0u && inb == 1u && ((x1 - x0) & 15u) == 0u && ((y1 - y0) & 15u) == 0u
        ? 1u : 0u;
    for (uint y = y0; y < y1 && z16 == 1u; y += 16u) {
        if (load_ty(y + 8u) != load_ty(y) + 64u) z16 = 0u;
    }
    for (uint x = x0; x < x1 && z16 == 1u; x += 16u) {
        if (load_tx(x + 8u) != load_tx(x) + 128u) z16 = 0u;
    }
    uint nall = nx * ny * nz;
    for (; (t16 == 1u || z16 == 1u) && yt < y1; yt += 16u) {
        uint sb = hi + load_ty(yt);
        uint f = (z * ny + yt) * nx;
        for (uint x = x0; x < x1; x += 16u) {
            uint s0 = sb + load_tx(x);
            if (t16 == 1u) {
                for (uint t8j = 0u; t8j < 16u; t8j++) { for (uint t8k = 0u; t8k < 16u; t8k++) { store_dst((f + x) + t8j * nx + t8k, load_src((s0) + t8k * sc + t8j)); } }
            } else {
                for (uint t8j = 0u; t8j < 16u; t8j++) { for (uint t8k = 0u; t8k < 16u; t8k++) { store_dst((f + x) + t8j * nx + t8k, load_src((s0) + ((t8j & 1u) | ((t8k & 1u) << 1u) | ((t8j & 2u) << 1u) | ((t8k & 2u) << 2u) | ((t8j & 4u) << 2u) | ((t8k & 4u) << 3u) | ((t8j & 8u) << 3u) | ((t8k & 8u) << 4u)))); } }
            }
        }
    }
    for (; (yd == 0u || zd == 0u) && yt + 8u <= y1; yt += 8u) {
        uint sb = hi + load_ty(yt);
        uint f = (z * ny + yt) * nx;
        for (uint x = x0; x < x1; x += 8u) {
            uint xe = min(x1 - x, 8u);
            uint s0 = sb + load_tx(x);
            uint sd = xe == 8u ? load_tx(x + 1u) - load_tx(x) : 0u;
            uint ok = xe == 8u && (yd == 0u || (s0 + 63u < nsrc && s0 + 63u >= s0)) ? 1u : 0u;
            for (uint k = 0u; k < 8u && ok == 1u && yd == 0u; k++) {
                uint s = sb + load_tx(x + k);
                if (s != s0 + k * sd || s + 7u >= nsrc || s + 7u < s) ok = 0u;
            }
            if (ok == 1u && yd == 0u) {
                for (uint t8j = 0u; t8j < 8u; t8j++) { for (uint t8k = 0u; t8k < 8u; t8k++) { store_dst((f + x) + t8j * nx + t8k, load_src((s0) + t8k * sd + t8j)); } }
            } else if (ok == 1u) {
                for (uint t8j = 0u; t8j < 8u; t8j++) { for (uint t8k = 0u; t8k < 8u; t8k++) { store_dst((f + x) + t8j * nx + t8k, load_src((s0) + ((t8j & 1u) | ((t8k & 1u) << 1u) | ((t8j & 2u) << 1u) | ((t8k & 2u) << 2u) | ((t8j & 4u) << 2u) | ((t8k & 4u) << 3u)))); } }
            } else {
                for (uint j = 0u; j < 8u; j++) {
                    for (uint k = 0u; k < xe; k++) {
                        uint s = hi + load_ty(yt + j) + load_tx(x + k);
                        store_dst(f + j * nx + x + k, s < nsrc ? load_src(s) : 0u);
                    }
                }
            }
        }
    }
    for (uint y = yt; y < y1; y++) {
        uint oy = oz + load_ty(y);
        uint f = (z * ny + y) * nx;
        uint b = woff + oy;
        uint x = x0;
        for (; xd == 0u && (brk & 31u) == 0u && x + 32u <= x1; x += 32u) {
            uint s = b + load_tx(x);
            if (s + 31u >= nsrc || s + 31u < s) break;
            for (uint c8k = 0u; c8k < 8u; c8k++) { store_dst((f + x) + c8k, load_src((s) + c8k)); }
            for (uint c8k = 0u; c8k < 8u; c8k++) { store_dst((f + x + 8u) + c8k, load_src((s + 8u) + c8k)); }
            for (uint c8k = 0u; c8k < 8u; c8k++) { store_dst((f + x + 16u) + c8k, load_src((s + 16u) + c8k)); }
            for (uint c8k = 0u; c8k < 8u; c8k++) { store_dst((f + x + 24u) + c8k, load_src((s + 24u) + c8k)); }
        }
        for (; xd == 0u && x + 8u <= x1; x += 8u) {
            uint s = b + load_tx(x);
            if (s + 7u >= nsrc || s + 7u < s) break;
            for (uint c8k = 0u; c8k < 8u; c8k++) { store_dst((f + x) + c8k, load_src((s) + c8k)); }
        }
        for (; x < x1 && wpe == 1u && inb == 1u; x++) store_dst(f + x, load_src(b + load_tx(x)));
        for (; x < x1 && wpe == 1u; x++) {
            uint s = b + load_tx(x);
            store_dst(f + x, s < nsrc ? load_src(s) : 0u);
        }
        for (; x < x1; x++) {
            uint s = woff + (oy + load_tx(x)) * wpe;
            for (uint w = 0u; w < wpe; w++) {
                uint v = 0u;
                if (s + w < nsrc && s + w >= s) v = load_src(s + w);
                store_dst((f + x) * wpe + w, v);
            }
        }
    }
}
