#version 450

layout(std430, set = 0, binding = 0) buffer hg_dst_block { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer hg_data_block { uint data[]; };
layout(std430, set = 0, binding = 2) readonly buffer hg_lut_block { uint lut[]; };
layout(std430, set = 0, binding = 3) readonly buffer hg_scales_block { uint scales[]; };
layout(std430, set = 0, binding = 4) buffer hg_err_block { uint err[]; };
layout(std430, set = 0, binding = 5) readonly buffer hg_ix_block { uint ix[]; };
layout(std430, set = 0, binding = 6) readonly buffer hg_mt_block { uint mt[]; };
layout(push_constant) uniform hg_push_block { uint n; uint doff; uint bits; uint chk; uint mode; uint nparam; uint inner; uint ssize; uint omul; uint kshift; uint nnz; uint nix; uint nlev; } hg_pc;
void store_dst(uint hg_i, float hg_v) { dst[hg_i] = floatBitsToUint(hg_v); }
uint load_data(uint hg_i) { return ((data[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
float load_lut(uint hg_i) { return uintBitsToFloat(lut[hg_i]); }
uint load_scales(uint hg_i) { return ((scales[hg_i >> 2u] >> ((hg_i & 3u) * 8u)) & 0xffu); }
void store_err(uint hg_i, uint hg_v) { err[hg_i] = hg_v; }
uint load_ix(uint hg_i) { return ix[hg_i]; }
uint load_mt(uint hg_i) { return mt[hg_i]; }

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

void main() {
    uint n = hg_pc.n;
    uint doff = hg_pc.doff;
    uint bits = hg_pc.bits;
    uint chk = hg_pc.chk;
    uint mode = hg_pc.mode;
    uint nparam = hg_pc.nparam;
    uint inner = hg_pc.inner;
    uint ssize = hg_pc.ssize;
    uint omul = hg_pc.omul;
    uint kshift = hg_pc.kshift;
    uint nnz = hg_pc.nnz;
    uint nix = hg_pc.nix;
    uint nlev = hg_pc.nlev;
    uint g = gl_GlobalInvocationID.x;
    if (g >= nnz + nparam) return;
    uint first = 0u;
    uint so = 0u;
    if (g < nnz) {
        uint i = g;
        uint fi = 0u;
        uint p = i;
        uint ok = 1u;
        uint l = nlev;
        while (l > 0u) {
            l = l - 1u;
            uint at = l * 6u;
            uint coord = p;
            if (load_mt(at + 5u) == 0u) {
                uint c = load_mt(at) + 2u * p;
                coord = c < nix ? load_ix(c) : 0xffffffffu;
            }
            if (coord >= load_mt(at + 4u)) ok = 0u;
            fi = fi + coord * load_mt(at + 3u);
            if (l > 0u) {
                uint po = load_mt(at + 1u);
                uint lo = 0u;
                uint hi = max(load_mt(at + 2u), 1u) - 1u;
                while (hi - lo > 1u) {
                    uint md = lo + (hi - lo) / 2u;
                    uint c = po + 2u * md;
                    uint v = c < nix ? load_ix(c) : 0xffffffffu;
                    if (v <= p) lo = md; else hi = md;
                }
                p = lo;
            }
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
                    float v = s * load_lut(code);
                    if (g < nnz) store_dst(k, v);
                }
            }
        } else {
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
                    if (chk != 0u && (code == 0u || code == 255u)) store_err(0u, 1u);
                    float v = load_lut(code);
                    if (mode != 0u && (floatBitsToUint(v) & 0x7fffffffu) <= 0x7f800000u) v = s * v;
                    if (g < nnz) store_dst(k, v);
                }
            }
        }
    }
}
