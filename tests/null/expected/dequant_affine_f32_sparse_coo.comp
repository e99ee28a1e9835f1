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
layout(std430, set = 0, binding = 6) readonly buffer hg_mt_block { uint mt[]; };
layout(push_constant) uniform hg_push_block { uint n; uint doff; uint bits; uint sgn; uint mode; uint stype; uint zmode; uint zoff; uint nparam; uint inner; uint ssize; uint omul; uint kshift; int zlo; int zhi; float sval; int zval; uint nnz; uint nix; uint rank; } hg_pc;
void store_dst(uint hg_i, float hg_v) { dst[hg_i] = floatBitsToUint(hg_v); }
uint load_data(uint hg_i) { return ((data[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
uint load_scales(uint hg_i) { return ((scales[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
uint load_zps(uint hg_i) { return ((zps[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
void store_err(uint hg_i, uint hg_v) { err[hg_i] = hg_v; }
uint load_ix(uint hg_i) { return ix[hg_i]; }
uint load_mt(uint hg_i) { return mt[hg_i]; }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
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
    uint nnz = hg_pc.nnz;
    uint nix = hg_pc.nix;
    uint rank = hg_pc.rank;
    uint g = gl_GlobalInvocationID.x;
    if (g >= nnz + nparam) return;
    uint first = 0u;
    uint so = 0u;
    if (g < nnz) {
        uint i = g;
        uint fi = 0u;
        uint ok = 1u;
        for (uint d = 0u; d < rank; d++) {
            uint c = 2u * (i * rank + d);
            uint coord = c < nix ? load_ix(c) : 0xffffffffu;
            if (coord >= load_mt(2u * d)) ok = 0u;
            fi = fi + coord * load_mt(2u * d + 1u);
        }
        if (ok == 0u || fi >= n) return;
        first = fi;
        so = g;
    } else {
        uint pb = g - nnz;
        uint ob = 0u;
        uint rb = 0u;
        uint ab = pb << kshift;
        if (omul != 0u) {
            uint rest = pb / omul;
            ab = (pb - rest * omul) << kshift;
            ob = rest / inner;
            rb = rest - ob * inner;
        }
        if (ob >= n || ab >= ssize) return;
        first = (ob * ssize + ab) * inner + rb;
        if (first >= n) return;
    }
    uint last = first + 1u;
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
        for (; i < end; i++) {
            uint code = 0u;
            if (bits == 8u) {
                code = load_data(doff + so);
            } else if (bits < 8u) {
                uint bit = so * bits;
                uint at = doff + (bit >> 3u);
                uint sh = bit & 7u;
                code = load_data(at) >> sh;
                if (sh + bits > 8u) code = code | (load_data(at + 1u) << (8u - sh));
                code = code & ((1u << bits) - 1u);
            } else if (bits == 16u) {
                uint at = doff + so * 2u;
                code = load_data(at) | (load_data(at + 1u) << 8u);
            } else {
                uint at = doff + so * 4u;
                code = load_data(at) | (load_data(at + 1u) << 8u) | (load_data(at + 2u) << 16u)
                       | (load_data(at + 3u) << 24u);
            }
            {
                uint k = i;
                // Branch-free sign extension: random signs would mispredict a branch.
                int q = int(code << sx) >> sx;
                if (g < nnz) store_dst(k, s * float(int(uint(q) - uint(z))));
            }
        }
    }
}
