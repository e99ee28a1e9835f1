#version 450

float hg_f16_to_f32(uint h) {
    uint sign = (h & 0x8000u) << 16u;
    uint expo = (h >> 10u) & 0x1fu;
    uint mant = h & 0x3ffu;
    if (expo == 0x1fu) return uintBitsToFloat(sign | 0x7f800000u | (mant << 13u));
    if (expo != 0u) return uintBitsToFloat(sign | ((expo + 112u) << 23u) | (mant << 13u));
    // Subnormal: mant * 2^-24 is exact in float.
    return uintBitsToFloat(sign | floatBitsToUint(float(mant) * 5.9604644775390625e-8f));
}

float hg_bf16_to_f32(uint h) {
    return uintBitsToFloat((h & 0xffffu) << 16u);
}

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_data_block { uint data[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_scales_block { uint scales[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_zps_block { uint zps[]; };
layout(std430, set = 0, binding = 4) buffer hg_err_block { uint err[]; };
layout(std430, set = 0, binding = 5) readonly buffer hg_ix_block { uint ix[]; };
layout(push_constant) uniform hg_push_block { uint n; uint ept; uint doff; uint bits; uint sgn; uint mode; uint stype; uint zmode; uint zoff; uint nparam; uint inner; uint ssize; uint omul; uint kshift; int zlo; int zhi; float sval; int zval; uint row; uint ntok; uint nix; } hg_pc;
void store_dst(uint hg_i, float hg_v) { dst[hg_i] = floatBitsToUint(hg_v); }
uint load_data(uint hg_i) { return ((data[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
uint load_scales(uint hg_i) { return ((scales[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
uint load_zps(uint hg_i) { return ((zps[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
void store_err(uint hg_i, uint hg_v) { err[hg_i] = hg_v; }
uint load_ix(uint hg_i) { return ix[hg_i]; }
float tf[16];
float load_tf(uint hg_i) { return tf[hg_i]; }
void store_tf(uint hg_i, float hg_v) { tf[hg_i] = hg_v; }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint ept = hg_pc.ept;
    uint doff = hg_pc.doff;
    uint bits = hg_pc.bits;
    uint sgn = hg_pc.sgn;
    uint mode = hg_pc.mode;
    uint stype = hg_pc.stype;
    uint zmode = hg_pc.zmode;
    uint zoff = hg_pc.zoff;
    uint nparam = hg_pc.nparam;
    uint inner = hg_pc.inner;
    uint ssize = hg_pc.ssize;
    uint omul = hg_pc.omul;
    uint kshift = hg_pc.kshift;
    int zlo = hg_pc.zlo;
    int zhi = hg_pc.zhi;
    float sval = hg_pc.sval;
    int zval = hg_pc.zval;
    uint row = hg_pc.row;
    uint ntok = hg_pc.ntok;
    uint nix = hg_pc.nix;
    uint first = 0u;
    uint last = 0u;
    uint shift = 0u;
    {
        uint x0 = gl_GlobalInvocationID.x * ept;
        uint y = gl_GlobalInvocationID.y;
        if (x0 >= row || y >= ntok || nix <= 5u) return;
        uint top = nix - 1u;
        uint nseq = load_ix(0u);
        uint ps = max(load_ix(1u), 1u);
        uint npages = load_ix(2u);
        uint nbt = load_ix(3u);
        uint iw = load_ix(4u);
        uint spo = 5u + nseq + 1u;
        uint bto = spo + (nseq + 1u) * iw;
        uint lo = 0u;
        uint hi = nseq;
        while (hi - lo > 1u) {
            uint md = lo + (hi - lo) / 2u;
            if (load_ix(min(5u + md, top)) <= y) lo = md; else hi = md;
        }
        uint tk = y - load_ix(min(5u + lo, top));
        uint bslot = load_ix(min(spo + lo * iw, top)) + tk / ps;
        uint page = bslot < nbt ? load_ix(min(bto + bslot * iw, top)) : npages;
        // The table was validated before launch; a page out of range still reads nothing.
        if (page >= npages) return;
        first = (page * ps + tk % ps) * row + x0;
        last = first + min(ept, row - x0);
        if (last > n || last < first) return;
        shift = (y * row + x0) - first;
    }
    uint q1 = first / inner;
    uint r = first - q1 * inner;
    uint o = q1 / ssize;
    uint a = q1 - o * ssize;
    uint i = first;
    uint sx = (sgn != 0u && bits < 32u) ? 32u - bits : 0u;
    float s = sval;
    int z = zval;
    uint built = 0u;
    while (i < last) {
        uint end = last;
        if (mode != 0u) {
            uint p = (o * inner + r) * omul + (a >> kshift);
            if (p >= nparam) {
                store_err(0u, 2u);
                return;
            }
            uint run = 1u;
            if (inner == 1u) run = min((1u << kshift) - (a & ((1u << kshift) - 1u)), ssize - a);
            end = min(i + run, last);
            if (stype == 3u) {
                uint at = p * 4u;
                uint w = load_scales(at) | (load_scales(at + 1u) << 8u)
                        | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                if ((w & 0x7f800000u) == 0x7f800000u || (w & 0x7fffffffu) == 0u) {
                    store_err(0u, 1u);
                }
                s = uintBitsToFloat(w);
            } else {
                uint at = p * 2u;
                uint h = load_scales(at) | (load_scales(at + 1u) << 8u);
                if (stype == 1u) {
                    if ((h & 0x7c00u) == 0x7c00u || (h & 0x7fffu) == 0u) store_err(0u, 1u);
                    s = hg_f16_to_f32(h);
                } else {
                    if ((h & 0x7f80u) == 0x7f80u || (h & 0x7fffu) == 0u) store_err(0u, 1u);
                    s = hg_bf16_to_f32(h);
                }
            }
            if (zmode != 0u) {
                // Zero points may start at 2 mod 4 in a shared [scales | zero_points] buffer.
                uint at = zoff + p * 4u;
                z = int(load_zps(at) | (load_zps(at + 1u) << 8u)
                        | (load_zps(at + 2u) << 16u) | (load_zps(at + 3u) << 24u));
                if (z < zlo || z > zhi) store_err(0u, 1u);
            }
            if (inner == 1u) {
                a = a + run;
            } else {
                r = r + 1u;
                if (r == inner) {
                    r = 0u;
                    a = a + 1u;
                }
            }
            if (a == ssize) {
                a = 0u;
                o = o + 1u;
            }
        }
        if (end - i >= 32u && (bits == 4u || (bits == 8u && zmode == 0u))) {
            if ((zmode != 0u || built == 0u) && bits != 8u) {
                for (uint c = 0u; c < (1u << bits); c++) {
                    {
                        uint code = c;
                        uint k = c;
                        // Branch-free sign extension: random signs would mispredict a branch.
                        int q = int(code << sx) >> sx;
                        store_tf(k, float(int(uint(q) - uint(z))));
                    }
                }
                built = 1u;
            }
            uint stop = end;
            end = min(stop, (i + 7u) & 0xfffffff8u);
            for (; i < end; i++) {
                uint code = 0u;
                if (bits == 8u) {
                    code = load_data(doff + i);
                } else if (bits < 8u) {
                    uint bit = i * bits;
                    uint at = doff + (bit >> 3u);
                    uint sh = bit & 7u;
                    code = load_data(at) >> sh;
                    if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                    code = code & ((1u << bits) - 1u);
                } else if (bits == 16u) {
                    uint at = doff + i * 2u;
                    code = load_data(at) | (load_data(at + 1u) << 8u);
                } else {
                    uint at = doff + i * 4u;
                    code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                           | (load_data(at + 3u) << 24u);
                }
                {
                    uint k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
            }
            end = stop;
            uint ngrp = (end - i) >> 3u;
            uint gat = doff + (i >> 3u) * bits;
            if (bits == 4u) {
                for (uint hg_j = 0u; hg_j < ngrp; hg_j++) { uint hg_at = gat + 4u * hg_j; uint hg_k = i + shift + 8u * hg_j; float t0 = load_tf(load_data(hg_at) & 15u); store_dst(hg_k, float((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_tf((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, float((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_tf(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, float((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_tf((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, float((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_tf(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, float((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_tf((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, float((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_tf(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, float((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_tf((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, float((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
            } else if (bits == 6u) {
            } else if (bits == 8u) {
                for (uint hg_j = 0u; hg_j < ngrp; hg_j++) { uint hg_at = gat + 8u * hg_j; uint hg_k = i + shift + 8u * hg_j; store_dst(hg_k + 0u, float(s * float(int(uint(int(load_data(hg_at + 0u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 1u, float(s * float(int(uint(int(load_data(hg_at + 1u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 2u, float(s * float(int(uint(int(load_data(hg_at + 2u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 3u, float(s * float(int(uint(int(load_data(hg_at + 3u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 4u, float(s * float(int(uint(int(load_data(hg_at + 4u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 5u, float(s * float(int(uint(int(load_data(hg_at + 5u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 6u, float(s * float(int(uint(int(load_data(hg_at + 6u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 7u, float(s * float(int(uint(int(load_data(hg_at + 7u) << sx) >> sx) - uint(z))))); }
            }
            i = i + 8u * ngrp;
            for (; i < end; i++) {
                uint code = 0u;
                if (bits == 8u) {
                    code = load_data(doff + i);
                } else if (bits < 8u) {
                    uint bit = i * bits;
                    uint at = doff + (bit >> 3u);
                    uint sh = bit & 7u;
                    code = load_data(at) >> sh;
                    if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                    code = code & ((1u << bits) - 1u);
                } else if (bits == 16u) {
                    uint at = doff + i * 2u;
                    code = load_data(at) | (load_data(at + 1u) << 8u);
                } else {
                    uint at = doff + i * 4u;
                    code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                           | (load_data(at + 3u) << 24u);
                }
                {
                    uint k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
            }
            if (inner == 1u && mode != 0u && (i & 7u) == 0u && (1u << kshift) >= 32u
                && (a & ((1u << kshift) - 1u)) == 0u && a < ssize) {
                uint p = o * omul + (a >> kshift);
                uint nblk = min(ssize - a, last - i) >> kshift;
                nblk = min(nblk, nparam - min(p, nparam));
                uint gb = 1u << (kshift - 3u);
                uint pend = p + nblk;
                if (bits == 4u) {
                    if (stype == 1u && zmode == 0u) {
                        uint nq = pend - p;
                        uint bat = doff + (i >> 3u) * bits;
                        if ((zmode != 0u || built == 0u) && bits != 8u) {
                            for (uint c = 0u; c < (1u << bits); c++) {
                                {
                                    uint code = c;
                                    uint k = c;
                                    // Branch-free sign extension: random signs would mispredict a branch.
                                    int q = int(code << sx) >> sx;
                                    store_tf(k, float(int(uint(q) - uint(z))));
                                }
                            }
                            built = 1u;
                        }
                        for (uint hg_q = 0u; hg_q < nq; hg_q++) { uint hg_w4 = (p + hg_q) * 2u; uint hg_e = load_scales(hg_w4) | (load_scales(hg_w4 + 1u) << 8u); if ((hg_e & 0x7c00u) == 0x7c00u || (hg_e & 0x7fffu) == 0u) store_err(0u, 1u); float hg_s = hg_f16_to_f32(hg_e); uint hg_qa = bat + 4u * gb * hg_q; uint hg_qk = (i + shift) + 8u * gb * hg_q; for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = hg_qa + 4u * hg_j; uint hg_k = hg_qk + 8u * hg_j; float t0 = load_tf(load_data(hg_at) & 15u); store_dst(hg_k, float((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_tf((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, float((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_tf(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, float((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_tf((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, float((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_tf(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, float((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_tf((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, float((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_tf(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, float((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_tf((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, float((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
                        i = i + 8u * gb * nq;
                        p = pend;
                    }
                    for (; p < pend; p++) {
                        if (stype == 3u) {
                            uint at = p * 4u;
                            uint w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                    | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                            if ((w & 0x7f800000u) == 0x7f800000u || (w & 0x7fffffffu) == 0u) {
                                store_err(0u, 1u);
                            }
                            s = uintBitsToFloat(w);
                        } else {
                            uint at = p * 2u;
                            uint h = load_scales(at) | (load_scales(at + 1u) << 8u);
                            if (stype == 1u) {
                                if ((h & 0x7c00u) == 0x7c00u || (h & 0x7fffu) == 0u) store_err(0u, 1u);
                                s = hg_f16_to_f32(h);
                            } else {
                                if ((h & 0x7f80u) == 0x7f80u || (h & 0x7fffu) == 0u) store_err(0u, 1u);
                                s = hg_bf16_to_f32(h);
                            }
                        }
                        if (zmode != 0u) {
                            // Zero points may start at 2 mod 4 in a shared [scales | zero_points] buffer.
                            uint at = zoff + p * 4u;
                            z = int(load_zps(at) | (load_zps(at + 1u) << 8u)
                                    | (load_zps(at + 2u) << 16u) | (load_zps(at + 3u) << 24u));
                            if (z < zlo || z > zhi) store_err(0u, 1u);
                        }
                        if ((zmode != 0u || built == 0u) && bits != 8u) {
                            for (uint c = 0u; c < (1u << bits); c++) {
                                {
                                    uint code = c;
                                    uint k = c;
                                    // Branch-free sign extension: random signs would mispredict a branch.
                                    int q = int(code << sx) >> sx;
                                    store_tf(k, float(int(uint(q) - uint(z))));
                                }
                            }
                            built = 1u;
                        }
                        uint bat = doff + (i >> 3u) * bits;
                        for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = bat + 4u * hg_j; uint hg_k = i + shift + 8u * hg_j; float t0 = load_tf(load_data(hg_at) & 15u); store_dst(hg_k, float((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_tf((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, float((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_tf(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, float((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_tf((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, float((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_tf(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, float((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_tf((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, float((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_tf(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, float((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_tf((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, float((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
                        i = i + 8u * gb;
                    }
                } else {
                    if (bits == 8u) {
                        if (stype == 1u && zmode == 0u) {
                            uint nq = pend - p;
                            uint bat = doff + (i >> 3u) * bits;
                            for (uint hg_q = 0u; hg_q < nq; hg_q++) { uint hg_w4 = (p + hg_q) * 2u; uint hg_e = load_scales(hg_w4) | (load_scales(hg_w4 + 1u) << 8u); if ((hg_e & 0x7c00u) == 0x7c00u || (hg_e & 0x7fffu) == 0u) store_err(0u, 1u); float hg_s = hg_f16_to_f32(hg_e); uint hg_qa = bat + 8u * gb * hg_q; uint hg_qk = (i + shift) + 8u * gb * hg_q; for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = hg_qa + 8u * hg_j; uint hg_k = hg_qk + 8u * hg_j; store_dst(hg_k + 0u, float(hg_s * float(int(uint(int(load_data(hg_at + 0u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 1u, float(hg_s * float(int(uint(int(load_data(hg_at + 1u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 2u, float(hg_s * float(int(uint(int(load_data(hg_at + 2u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 3u, float(hg_s * float(int(uint(int(load_data(hg_at + 3u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 4u, float(hg_s * float(int(uint(int(load_data(hg_at + 4u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 5u, float(hg_s * float(int(uint(int(load_data(hg_at + 5u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 6u, float(hg_s * float(int(uint(int(load_data(hg_at + 6u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 7u, float(hg_s * float(int(uint(int(load_data(hg_at + 7u) << sx) >> sx) - uint(z))))); } }
                            i = i + 8u * gb * nq;
                            p = pend;
                        }
                        for (; p < pend; p++) {
                            if (stype == 3u) {
                                uint at = p * 4u;
                                uint w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                        | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                if ((w & 0x7f800000u) == 0x7f800000u || (w & 0x7fffffffu) == 0u) {
                                    store_err(0u, 1u);
                                }
                                s = uintBitsToFloat(w);
                            } else {
                                uint at = p * 2u;
                                uint h = load_scales(at) | (load_scales(at + 1u) << 8u);
                                if (stype == 1u) {
                                    if ((h & 0x7c00u) == 0x7c00u || (h & 0x7fffu) == 0u) store_err(0u, 1u);
                                    s = hg_f16_to_f32(h);
                                } else {
                                    if ((h & 0x7f80u) == 0x7f80u || (h & 0x7fffu) == 0u) store_err(0u, 1u);
                                    s = hg_bf16_to_f32(h);
                                }
                            }
                            if (zmode != 0u) {
                                // Zero points may start at 2 mod 4 in a shared [scales | zero_points] buffer.
                                uint at = zoff + p * 4u;
                                z = int(load_zps(at) | (load_zps(at + 1u) << 8u)
                                        | (load_zps(at + 2u) << 16u) | (load_zps(at + 3u) << 24u));
                                if (z < zlo || z > zhi) store_err(0u, 1u);
                            }
                            if ((zmode != 0u || built == 0u) && bits != 8u) {
                                for (uint c = 0u; c < (1u << bits); c++) {
                                    {
                                        uint code = c;
                                        uint k = c;
                                        // Branch-free sign extension: random signs would mispredict a branch.
                                        int q = int(code << sx) >> sx;
                                        store_tf(k, float(int(uint(q) - uint(z))));
                                    }
                                }
                                built = 1u;
                            }
                            uint bat = doff + (i >> 3u) * bits;
                            for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = bat + 8u * hg_j; uint hg_k = i + shift + 8u * hg_j; store_dst(hg_k + 0u, float(s * float(int(uint(int(load_data(hg_at + 0u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 1u, float(s * float(int(uint(int(load_data(hg_at + 1u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 2u, float(s * float(int(uint(int(load_data(hg_at + 2u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 3u, float(s * float(int(uint(int(load_data(hg_at + 3u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 4u, float(s * float(int(uint(int(load_data(hg_at + 4u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 5u, float(s * float(int(uint(int(load_data(hg_at + 5u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 6u, float(s * float(int(uint(int(load_data(hg_at + 6u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 7u, float(s * float(int(uint(int(load_data(hg_at + 7u) << sx) >> sx) - uint(z))))); }
                            i = i + 8u * gb;
                        }
                    } else {
                    }
                }
                a = a + (nblk << kshift);
                if (a == ssize) {
                    a = 0u;
                    o = o + 1u;
                }
            }
        }
        else if (bits == 4u) {
            if ((i & 1u) != 0u && i < end) {
                {
                    uint code = load_data(doff + (i >> 1u)) >> 4u;
                    uint k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
                i = i + 1u;
            }
            for (; i + 1u < end; i += 2u) {
                uint pair = load_data(doff + (i >> 1u));
                {
                    uint code = pair & 15u;
                    uint k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
                {
                    uint code = pair >> 4u;
                    uint k = i + 1u;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
            }
            if (i < end) {
                {
                    uint code = load_data(doff + (i >> 1u)) & 15u;
                    uint k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
                i = i + 1u;
            }
        }
        else if (bits == 8u && doff == 0u) {
            uint ng8 = (end - i) >> 3u;
            for (uint hg_j = 0u; hg_j < ng8; hg_j++) { uint hg_at = i + 8u * hg_j; uint hg_k = i + shift + 8u * hg_j; store_dst(hg_k + 0u, float(s * float(int(uint(int(load_data(hg_at + 0u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 1u, float(s * float(int(uint(int(load_data(hg_at + 1u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 2u, float(s * float(int(uint(int(load_data(hg_at + 2u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 3u, float(s * float(int(uint(int(load_data(hg_at + 3u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 4u, float(s * float(int(uint(int(load_data(hg_at + 4u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 5u, float(s * float(int(uint(int(load_data(hg_at + 5u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 6u, float(s * float(int(uint(int(load_data(hg_at + 6u) << sx) >> sx) - uint(z))))); store_dst(hg_k + 7u, float(s * float(int(uint(int(load_data(hg_at + 7u) << sx) >> sx) - uint(z))))); }
            i = i + 8u * ng8;
            for (; i < end; i++) {
                {
                    uint code = load_data(i);
                    uint k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
            }
        }
        else if (bits == 6u) {
            for (; i < end && (i & 3u) != 0u; i++) {
                {
                    uint code = ((load_data(doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? load_data(doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u;
                    uint k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
            }
            uint ngroup = (end - i) >> 2u;
            uint gat = doff + (i >> 2u) * 3u;
            for (uint j = 0u; j < ngroup; j++) {
                uint b = gat + 3u * j;
                uint w = load_data(b) | (load_data(b + 1u) << 8u) | (load_data(b + 2u) << 16u);
                uint gk = i + 4u * j;
                {
                    uint code = w & 63u;
                    uint k = gk;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
                {
                    uint code = (w >> 6u) & 63u;
                    uint k = gk + 1u;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
                {
                    uint code = (w >> 12u) & 63u;
                    uint k = gk + 2u;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
                {
                    uint code = (w >> 18u) & 63u;
                    uint k = gk + 3u;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
            }
            i = i + 4u * ngroup;
            for (; i < end; i++) {
                {
                    uint code = ((load_data(doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? load_data(doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u;
                    uint k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
            }
        }
        else {
            for (; i < end; i++) {
                uint code = 0u;
                if (bits == 8u) {
                    code = load_data(doff + i);
                } else if (bits < 8u) {
                    uint bit = i * bits;
                    uint at = doff + (bit >> 3u);
                    uint sh = bit & 7u;
                    code = load_data(at) >> sh;
                    if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                    code = code & ((1u << bits) - 1u);
                } else if (bits == 16u) {
                    uint at = doff + i * 2u;
                    code = load_data(at) | (load_data(at + 1u) << 8u);
                } else {
                    uint at = doff + i * 4u;
                    code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                           | (load_data(at + 3u) << 24u);
                }
                {
                    uint k = i;
                    // Branch-free sign extension: random signs would mispredict a branch.
                    int q = int(code << sx) >> sx;
                    store_dst(k + shift, s * float(int(uint(q) - uint(z))));
                }
            }
        }
    }
}
