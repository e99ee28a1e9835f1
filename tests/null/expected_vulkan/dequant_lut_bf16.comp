#version 450

uint hg_f32_to_bf16(float v) {
    uint b = floatBitsToUint(v);
    // NaN becomes the canonical quiet NaN with its sign, as ml_dtypes does.
    if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16u) & 0x8000u) | 0x7fc0u;
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

uint hg_umulhi(uint a, uint b) {
    uint hi;
    uint lo;
    umulExtended(a, b, hi, lo);
    return hi;
}

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_data_block { uint data[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_lut_block { uint lut[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_scales_block { uint scales[]; };
layout(std430, set = 0, binding = 4) buffer hg_err_block { uint err[]; };
layout(std430, set = 0, binding = 5) buffer hg_fault_block { uint hg_fault; };
layout(push_constant) uniform hg_push_block { uint hg_base0; uint hg_base1; uint hg_base2; uint hg_d_dst; uint hg_d_data; uint hg_d_lut; uint hg_d_scales; uint hg_d_err; uint n; uint ept; uint doff; uint bits; uint chk; uint mode; uint nparam; uint inner; uint dm1; uint dsh1; uint ssize; uint dm2; uint dsh2; uint omul; uint kshift; } hg_pc;
uint hg_ix_dst(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_dst; if (hg_k >= uint(dst.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_data(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_data; if (hg_k >= uint(data.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_lut(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_lut; if (hg_k >= uint(lut.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_scales(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_scales; if (hg_k >= uint(scales.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
uint hg_ix_err(uint hg_j) { uint hg_k = hg_j + hg_pc.hg_d_err; if (hg_k >= uint(err.length())) { atomicOr(hg_fault, 1u); } return hg_k; }
void store_dst(uint hg_i, uint hg_v) { uint hg_s = (hg_i & 1u) * 16u; atomicAnd(dst[hg_ix_dst(hg_i >> 1u)], ~(0xffffu << hg_s)); atomicOr(dst[hg_ix_dst(hg_i >> 1u)], (hg_v & 0xffffu) << hg_s); }
uint load_data(uint hg_i) { return ((data[hg_ix_data(hg_i >> 2u)] >> ((hg_i & 3u) * 8u)) & 0xffu); }
float load_lut(uint hg_i) { return uintBitsToFloat(lut[hg_ix_lut(hg_i)]); }
uint load_scales(uint hg_i) { return ((scales[hg_ix_scales(hg_i >> 2u)] >> ((hg_i & 3u) * 8u)) & 0xffu); }
void store_err(uint hg_i, uint hg_v) { err[hg_ix_err(hg_i)] = hg_v; }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint ept = hg_pc.ept;
    uint doff = hg_pc.doff;
    uint bits = hg_pc.bits;
    uint chk = hg_pc.chk;
    uint mode = hg_pc.mode;
    uint nparam = hg_pc.nparam;
    uint inner = hg_pc.inner;
    uint dm1 = hg_pc.dm1;
    uint dsh1 = hg_pc.dsh1;
    uint ssize = hg_pc.ssize;
    uint dm2 = hg_pc.dm2;
    uint dsh2 = hg_pc.dsh2;
    uint omul = hg_pc.omul;
    uint kshift = hg_pc.kshift;
    uint first = (gl_GlobalInvocationID.x + hg_pc.hg_base0) * ept;
    if (first >= n) return;
    uint last = min(first + ept, n);
    uint t1 = hg_umulhi(first, dm1);
    uint q1 = (t1 + ((first - t1) >> (dsh1 & 255u))) >> (dsh1 >> 8u);
    uint r = first - q1 * inner;
    uint t2 = hg_umulhi(q1, dm2);
    uint o = (t2 + ((q1 - t2) >> (dsh2 & 255u))) >> (dsh2 >> 8u);
    uint a = q1 - o * ssize;
    uint i = first;
    float s = 1.0f;
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
            if (mode == 1u) {
                uint at = p * 4u;
                uint w = load_scales(at) | (load_scales(at + 1u) << 8u)
                        | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                // absmax must be finite and >= 0 (-0.0 included).
                if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                s = uintBitsToFloat(w);
            } else {
                uint e = load_scales(p);
                if (e == 0u || e == 255u) store_err(0u, 1u);
                s = uintBitsToFloat(e << 23u);
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
        if (mode == 1u) {
            if (end - i >= 32u && (mode == 1u)) {
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
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                }
                end = stop;
                uint ngrp = (end - i) >> 3u;
                uint gat = doff + (i >> 3u) * bits;
                if (bits == 4u) {
                    for (uint hg_j = 0u; hg_j < ngrp; hg_j++) { uint hg_at = gat + 4u * hg_j; uint hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 15u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
                } else if (bits == 6u) {
                    for (uint hg_j = 0u; hg_j < ngrp; hg_j++) { uint hg_at = gat + 6u * hg_j; uint hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 63u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(((load_data(hg_at) | (load_data(hg_at + 1u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(((load_data(hg_at + 1u) | (load_data(hg_at + 2u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 2u) >> 2u) & 63u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 3u) & 63u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(((load_data(hg_at + 3u) | (load_data(hg_at + 4u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(((load_data(hg_at + 4u) | (load_data(hg_at + 5u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 5u) >> 2u) & 63u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
                } else if (bits == 8u) {
                    for (uint hg_j = 0u; hg_j < ngrp; hg_j++) { uint hg_at = gat + 8u * hg_j; uint hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 255u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(load_data(hg_at + 1u) & 255u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 2u) & 255u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut(load_data(hg_at + 3u) & 255u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 4u) & 255u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(load_data(hg_at + 5u) & 255u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 6u) & 255u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut(load_data(hg_at + 7u) & 255u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
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
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
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
                        if (mode == 1u) {
                            uint nq = pend - p;
                            uint bat = doff + (i >> 3u) * bits;
                            for (uint hg_q = 0u; hg_q < nq; hg_q++) { uint hg_w4 = (p + hg_q) * 4u; uint hg_e = (load_scales(hg_w4 + 0u) << 0u) | (load_scales(hg_w4 + 1u) << 8u) | (load_scales(hg_w4 + 2u) << 16u) | (load_scales(hg_w4 + 3u) << 24u); if ((hg_e & 0x7f800000u) == 0x7f800000u || hg_e > 0x80000000u) store_err(0u, 1u); float hg_s = uintBitsToFloat(hg_e); uint hg_qa = bat + 4u * gb * hg_q; uint hg_qk = (i) + 8u * gb * hg_q; for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = hg_qa + 4u * hg_j; uint hg_k = hg_qk + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 15u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_lut((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_lut(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_lut((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_lut(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_lut((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_lut(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_lut((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
                            i = i + 8u * gb * nq;
                            p = pend;
                        }
                        for (; p < pend; p++) {
                            if (mode == 1u) {
                                uint at = p * 4u;
                                uint w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                        | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                // absmax must be finite and >= 0 (-0.0 included).
                                if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                                s = uintBitsToFloat(w);
                            } else {
                                uint e = load_scales(p);
                                if (e == 0u || e == 255u) store_err(0u, 1u);
                                s = uintBitsToFloat(e << 23u);
                            }
                            uint bat = doff + (i >> 3u) * bits;
                            for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = bat + 4u * hg_j; uint hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 15u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
                            i = i + 8u * gb;
                        }
                    } else {
                        if (bits == 6u) {
                            if (mode == 1u) {
                                uint nq = pend - p;
                                uint bat = doff + (i >> 3u) * bits;
                                for (uint hg_q = 0u; hg_q < nq; hg_q++) { uint hg_w4 = (p + hg_q) * 4u; uint hg_e = (load_scales(hg_w4 + 0u) << 0u) | (load_scales(hg_w4 + 1u) << 8u) | (load_scales(hg_w4 + 2u) << 16u) | (load_scales(hg_w4 + 3u) << 24u); if ((hg_e & 0x7f800000u) == 0x7f800000u || hg_e > 0x80000000u) store_err(0u, 1u); float hg_s = uintBitsToFloat(hg_e); uint hg_qa = bat + 6u * gb * hg_q; uint hg_qk = (i) + 8u * gb * hg_q; for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = hg_qa + 6u * hg_j; uint hg_k = hg_qk + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 63u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_lut(((load_data(hg_at) | (load_data(hg_at + 1u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_lut(((load_data(hg_at + 1u) | (load_data(hg_at + 2u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_lut((load_data(hg_at + 2u) >> 2u) & 63u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_lut(load_data(hg_at + 3u) & 63u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_lut(((load_data(hg_at + 3u) | (load_data(hg_at + 4u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_lut(((load_data(hg_at + 4u) | (load_data(hg_at + 5u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_lut((load_data(hg_at + 5u) >> 2u) & 63u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
                                i = i + 8u * gb * nq;
                                p = pend;
                            }
                            for (; p < pend; p++) {
                                if (mode == 1u) {
                                    uint at = p * 4u;
                                    uint w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                            | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                    // absmax must be finite and >= 0 (-0.0 included).
                                    if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                                    s = uintBitsToFloat(w);
                                } else {
                                    uint e = load_scales(p);
                                    if (e == 0u || e == 255u) store_err(0u, 1u);
                                    s = uintBitsToFloat(e << 23u);
                                }
                                uint bat = doff + (i >> 3u) * bits;
                                for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = bat + 6u * hg_j; uint hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 63u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(((load_data(hg_at) | (load_data(hg_at + 1u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(((load_data(hg_at + 1u) | (load_data(hg_at + 2u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 2u) >> 2u) & 63u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 3u) & 63u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(((load_data(hg_at + 3u) | (load_data(hg_at + 4u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(((load_data(hg_at + 4u) | (load_data(hg_at + 5u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 5u) >> 2u) & 63u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
                                i = i + 8u * gb;
                            }
                        } else {
                            if (bits == 8u) {
                                if (mode == 1u) {
                                    uint nq = pend - p;
                                    uint bat = doff + (i >> 3u) * bits;
                                    for (uint hg_q = 0u; hg_q < nq; hg_q++) { uint hg_w4 = (p + hg_q) * 4u; uint hg_e = (load_scales(hg_w4 + 0u) << 0u) | (load_scales(hg_w4 + 1u) << 8u) | (load_scales(hg_w4 + 2u) << 16u) | (load_scales(hg_w4 + 3u) << 24u); if ((hg_e & 0x7f800000u) == 0x7f800000u || hg_e > 0x80000000u) store_err(0u, 1u); float hg_s = uintBitsToFloat(hg_e); uint hg_qa = bat + 8u * gb * hg_q; uint hg_qk = (i) + 8u * gb * hg_q; for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = hg_qa + 8u * hg_j; uint hg_k = hg_qk + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 255u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_lut(load_data(hg_at + 1u) & 255u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_lut(load_data(hg_at + 2u) & 255u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_lut(load_data(hg_at + 3u) & 255u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_lut(load_data(hg_at + 4u) & 255u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_lut(load_data(hg_at + 5u) & 255u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_lut(load_data(hg_at + 6u) & 255u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_lut(load_data(hg_at + 7u) & 255u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
                                    i = i + 8u * gb * nq;
                                    p = pend;
                                }
                                for (; p < pend; p++) {
                                    if (mode == 1u) {
                                        uint at = p * 4u;
                                        uint w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                                | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                        // absmax must be finite and >= 0 (-0.0 included).
                                        if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                                        s = uintBitsToFloat(w);
                                    } else {
                                        uint e = load_scales(p);
                                        if (e == 0u || e == 255u) store_err(0u, 1u);
                                        s = uintBitsToFloat(e << 23u);
                                    }
                                    uint bat = doff + (i >> 3u) * bits;
                                    for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = bat + 8u * hg_j; uint hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 255u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(load_data(hg_at + 1u) & 255u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 2u) & 255u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut(load_data(hg_at + 3u) & 255u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 4u) & 255u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(load_data(hg_at + 5u) & 255u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 6u) & 255u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut(load_data(hg_at + 7u) & 255u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
                                    i = i + 8u * gb;
                                }
                            } else {
                            }
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
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                    i = i + 1u;
                }
                for (; i + 1u < end; i += 2u) {
                    uint pair = load_data(doff + (i >> 1u));
                    {
                        uint code = pair & 15u;
                        uint k = i;
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                    {
                        uint code = pair >> 4u;
                        uint k = i + 1u;
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                }
                if (i < end) {
                    {
                        uint code = load_data(doff + (i >> 1u)) & 15u;
                        uint k = i;
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                    i = i + 1u;
                }
            }
            else if (bits == 8u && doff == 0u) {
                for (; i < end; i++) {
                    {
                        uint code = load_data(i);
                        uint k = i;
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                }
            }
            else if (bits == 6u) {
                for (; i < end && (i & 3u) != 0u; i++) {
                    {
                        uint code = ((load_data(doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? load_data(doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u;
                        uint k = i;
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
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
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                    {
                        uint code = (w >> 6u) & 63u;
                        uint k = gk + 1u;
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                    {
                        uint code = (w >> 12u) & 63u;
                        uint k = gk + 2u;
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                    {
                        uint code = (w >> 18u) & 63u;
                        uint k = gk + 3u;
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                }
                i = i + 4u * ngroup;
                for (; i < end; i++) {
                    {
                        uint code = ((load_data(doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? load_data(doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u;
                        uint k = i;
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
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
                        float v = s * load_lut(code);
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                }
            }
        } else {
            if (end - i >= 32u && (chk == 0u && (bits == 4u || bits == 6u || bits == 8u))) {
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
                        if (chk != 0u && (code == 0u || code == 255u)) store_err(0u, 1u);
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                }
                end = stop;
                uint ngrp = (end - i) >> 3u;
                uint gat = doff + (i >> 3u) * bits;
                if (bits == 4u) {
                    for (uint hg_j = 0u; hg_j < ngrp; hg_j++) { uint hg_at = gat + 4u * hg_j; uint hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 15u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
                } else if (bits == 6u) {
                    for (uint hg_j = 0u; hg_j < ngrp; hg_j++) { uint hg_at = gat + 6u * hg_j; uint hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 63u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(((load_data(hg_at) | (load_data(hg_at + 1u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(((load_data(hg_at + 1u) | (load_data(hg_at + 2u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 2u) >> 2u) & 63u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 3u) & 63u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(((load_data(hg_at + 3u) | (load_data(hg_at + 4u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(((load_data(hg_at + 4u) | (load_data(hg_at + 5u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 5u) >> 2u) & 63u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
                } else if (bits == 8u) {
                    for (uint hg_j = 0u; hg_j < ngrp; hg_j++) { uint hg_at = gat + 8u * hg_j; uint hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 255u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(load_data(hg_at + 1u) & 255u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 2u) & 255u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut(load_data(hg_at + 3u) & 255u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 4u) & 255u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(load_data(hg_at + 5u) & 255u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 6u) & 255u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut(load_data(hg_at + 7u) & 255u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
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
                        if (chk != 0u && (code == 0u || code == 255u)) store_err(0u, 1u);
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
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
                        if (mode == 2u) {
                            uint nq = pend - p;
                            uint bat = doff + (i >> 3u) * bits;
                            for (uint hg_q = 0u; hg_q < nq; hg_q++) { uint hg_e = load_scales(p + hg_q); if (hg_e == 0u || hg_e == 255u) store_err(0u, 1u); float hg_s = uintBitsToFloat(hg_e << 23u); uint hg_qa = bat + 4u * gb * hg_q; uint hg_qk = (i) + 8u * gb * hg_q; for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = hg_qa + 4u * hg_j; uint hg_k = hg_qk + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 15u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_lut((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_lut(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_lut((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_lut(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_lut((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_lut(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_lut((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
                            i = i + 8u * gb * nq;
                            p = pend;
                        }
                        for (; p < pend; p++) {
                            if (mode == 1u) {
                                uint at = p * 4u;
                                uint w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                        | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                // absmax must be finite and >= 0 (-0.0 included).
                                if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                                s = uintBitsToFloat(w);
                            } else {
                                uint e = load_scales(p);
                                if (e == 0u || e == 255u) store_err(0u, 1u);
                                s = uintBitsToFloat(e << 23u);
                            }
                            uint bat = doff + (i >> 3u) * bits;
                            for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = bat + 4u * hg_j; uint hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 15u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut((load_data(hg_at) >> 4u) & 15u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 1u) & 15u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 1u) >> 4u) & 15u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 2u) & 15u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut((load_data(hg_at + 2u) >> 4u) & 15u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 3u) & 15u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 3u) >> 4u) & 15u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
                            i = i + 8u * gb;
                        }
                    } else {
                        if (bits == 6u) {
                            if (mode == 2u) {
                                uint nq = pend - p;
                                uint bat = doff + (i >> 3u) * bits;
                                for (uint hg_q = 0u; hg_q < nq; hg_q++) { uint hg_e = load_scales(p + hg_q); if (hg_e == 0u || hg_e == 255u) store_err(0u, 1u); float hg_s = uintBitsToFloat(hg_e << 23u); uint hg_qa = bat + 6u * gb * hg_q; uint hg_qk = (i) + 8u * gb * hg_q; for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = hg_qa + 6u * hg_j; uint hg_k = hg_qk + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 63u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_lut(((load_data(hg_at) | (load_data(hg_at + 1u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_lut(((load_data(hg_at + 1u) | (load_data(hg_at + 2u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_lut((load_data(hg_at + 2u) >> 2u) & 63u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_lut(load_data(hg_at + 3u) & 63u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_lut(((load_data(hg_at + 3u) | (load_data(hg_at + 4u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_lut(((load_data(hg_at + 4u) | (load_data(hg_at + 5u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_lut((load_data(hg_at + 5u) >> 2u) & 63u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
                                i = i + 8u * gb * nq;
                                p = pend;
                            }
                            for (; p < pend; p++) {
                                if (mode == 1u) {
                                    uint at = p * 4u;
                                    uint w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                            | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                    // absmax must be finite and >= 0 (-0.0 included).
                                    if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                                    s = uintBitsToFloat(w);
                                } else {
                                    uint e = load_scales(p);
                                    if (e == 0u || e == 255u) store_err(0u, 1u);
                                    s = uintBitsToFloat(e << 23u);
                                }
                                uint bat = doff + (i >> 3u) * bits;
                                for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = bat + 6u * hg_j; uint hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 63u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(((load_data(hg_at) | (load_data(hg_at + 1u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(((load_data(hg_at + 1u) | (load_data(hg_at + 2u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut((load_data(hg_at + 2u) >> 2u) & 63u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 3u) & 63u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(((load_data(hg_at + 3u) | (load_data(hg_at + 4u) << 8u)) >> 6u) & 63u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(((load_data(hg_at + 4u) | (load_data(hg_at + 5u) << 8u)) >> 4u) & 63u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut((load_data(hg_at + 5u) >> 2u) & 63u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
                                i = i + 8u * gb;
                            }
                        } else {
                            if (bits == 8u) {
                                if (mode == 2u) {
                                    uint nq = pend - p;
                                    uint bat = doff + (i >> 3u) * bits;
                                    for (uint hg_q = 0u; hg_q < nq; hg_q++) { uint hg_e = load_scales(p + hg_q); if (hg_e == 0u || hg_e == 255u) store_err(0u, 1u); float hg_s = uintBitsToFloat(hg_e << 23u); uint hg_qa = bat + 8u * gb * hg_q; uint hg_qk = (i) + 8u * gb * hg_q; for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = hg_qa + 8u * hg_j; uint hg_k = hg_qk + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 255u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : hg_s * t0)); float t1 = load_lut(load_data(hg_at + 1u) & 255u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : hg_s * t1)); float t2 = load_lut(load_data(hg_at + 2u) & 255u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : hg_s * t2)); float t3 = load_lut(load_data(hg_at + 3u) & 255u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : hg_s * t3)); float t4 = load_lut(load_data(hg_at + 4u) & 255u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : hg_s * t4)); float t5 = load_lut(load_data(hg_at + 5u) & 255u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : hg_s * t5)); float t6 = load_lut(load_data(hg_at + 6u) & 255u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : hg_s * t6)); float t7 = load_lut(load_data(hg_at + 7u) & 255u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : hg_s * t7)); } }
                                    i = i + 8u * gb * nq;
                                    p = pend;
                                }
                                for (; p < pend; p++) {
                                    if (mode == 1u) {
                                        uint at = p * 4u;
                                        uint w = load_scales(at) | (load_scales(at + 1u) << 8u)
                                                | (load_scales(at + 2u) << 16u) | (load_scales(at + 3u) << 24u);
                                        // absmax must be finite and >= 0 (-0.0 included).
                                        if ((w & 0x7f800000u) == 0x7f800000u || w > 0x80000000u) store_err(0u, 1u);
                                        s = uintBitsToFloat(w);
                                    } else {
                                        uint e = load_scales(p);
                                        if (e == 0u || e == 255u) store_err(0u, 1u);
                                        s = uintBitsToFloat(e << 23u);
                                    }
                                    uint bat = doff + (i >> 3u) * bits;
                                    for (uint hg_j = 0u; hg_j < gb; hg_j++) { uint hg_at = bat + 8u * hg_j; uint hg_k = i + 8u * hg_j; float t0 = load_lut(load_data(hg_at) & 255u); store_dst(hg_k, hg_f32_to_bf16((floatBitsToUint(t0) & 0x7fffffffu) > 0x7f800000u ? t0 : s * t0)); float t1 = load_lut(load_data(hg_at + 1u) & 255u); store_dst(hg_k + 1u, hg_f32_to_bf16((floatBitsToUint(t1) & 0x7fffffffu) > 0x7f800000u ? t1 : s * t1)); float t2 = load_lut(load_data(hg_at + 2u) & 255u); store_dst(hg_k + 2u, hg_f32_to_bf16((floatBitsToUint(t2) & 0x7fffffffu) > 0x7f800000u ? t2 : s * t2)); float t3 = load_lut(load_data(hg_at + 3u) & 255u); store_dst(hg_k + 3u, hg_f32_to_bf16((floatBitsToUint(t3) & 0x7fffffffu) > 0x7f800000u ? t3 : s * t3)); float t4 = load_lut(load_data(hg_at + 4u) & 255u); store_dst(hg_k + 4u, hg_f32_to_bf16((floatBitsToUint(t4) & 0x7fffffffu) > 0x7f800000u ? t4 : s * t4)); float t5 = load_lut(load_data(hg_at + 5u) & 255u); store_dst(hg_k + 5u, hg_f32_to_bf16((floatBitsToUint(t5) & 0x7fffffffu) > 0x7f800000u ? t5 : s * t5)); float t6 = load_lut(load_data(hg_at + 6u) & 255u); store_dst(hg_k + 6u, hg_f32_to_bf16((floatBitsToUint(t6) & 0x7fffffffu) > 0x7f800000u ? t6 : s * t6)); float t7 = load_lut(load_data(hg_at + 7u) & 255u); store_dst(hg_k + 7u, hg_f32_to_bf16((floatBitsToUint(t7) & 0x7fffffffu) > 0x7f800000u ? t7 : s * t7)); }
                                    i = i + 8u * gb;
                                }
                            } else {
                            }
                        }
                    }
                    a = a + (nblk << kshift);
                    if (a == ssize) {
                        a = 0u;
                        o = o + 1u;
                    }
                }
            }
            else if (bits == 4u && chk == 0u) {
                if ((i & 1u) != 0u && i < end) {
                    {
                        uint code = load_data(doff + (i >> 1u)) >> 4u;
                        uint k = i;
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                    i = i + 1u;
                }
                for (; i + 1u < end; i += 2u) {
                    uint pair = load_data(doff + (i >> 1u));
                    {
                        uint code = pair & 15u;
                        uint k = i;
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                    {
                        uint code = pair >> 4u;
                        uint k = i + 1u;
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                }
                if (i < end) {
                    {
                        uint code = load_data(doff + (i >> 1u)) & 15u;
                        uint k = i;
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                    i = i + 1u;
                }
            }
            else if (bits == 8u && doff == 0u && chk == 0u) {
                for (; i < end; i++) {
                    {
                        uint code = load_data(i);
                        uint k = i;
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                }
            }
            else if (bits == 6u && chk == 0u) {
                for (; i < end && (i & 3u) != 0u; i++) {
                    {
                        uint code = ((load_data(doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? load_data(doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u;
                        uint k = i;
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
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
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                    {
                        uint code = (w >> 6u) & 63u;
                        uint k = gk + 1u;
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                    {
                        uint code = (w >> 12u) & 63u;
                        uint k = gk + 2u;
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                    {
                        uint code = (w >> 18u) & 63u;
                        uint k = gk + 3u;
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                }
                i = i + 4u * ngroup;
                for (; i < end; i++) {
                    {
                        uint code = ((load_data(doff + ((i * 6u) >> 3u)) | (((i * 6u) & 7u) > 2u ? load_data(doff + ((i * 6u) >> 3u) + 1u) << 8u : 0u)) >> ((i * 6u) & 7u)) & 63u;
                        uint k = i;
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
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
                        if (chk != 0u && (code == 0u || code == 255u)) store_err(0u, 1u);
                        float v = load_lut(code);
                        if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                        store_dst(k, hg_f32_to_bf16(v));
                    }
                }
            }
        }
    }
}
