static inline float hg_f16_to_f32(uint h) {
    uint sign = (h & 0x8000u) << 16u;
    uint expo = (h >> 10u) & 0x1fu;
    uint mant = h & 0x3ffu;
    if (expo == 0x1fu) return as_float(sign | 0x7f800000u | (mant << 13u));
    if (expo != 0u) return as_float(sign | ((expo + 112u) << 23u) | (mant << 13u));
    // Subnormal: mant * 2^-24 is exact in float.
    return as_float(sign | as_uint((float)(mant) * 5.9604644775390625e-8f));
}

static inline uint hg_f32_to_f16(float v) {
    uint b = as_uint(v);
    uint sign = (b >> 16u) & 0x8000u;
    uint a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        // NaN keeps its top payload bits and stays a NaN, as NumPy does.
        uint m = (a >> 13u) & 0x3ffu;
        return sign | 0x7c00u | (m == 0u ? 1u : m);
    }
    if (a >= 0x477ff000u) return sign | 0x7c00u;
    if (a >= 0x38800000u) return sign | ((a + 0xfffu + ((a >> 13u) & 1u) - 0x38000000u) >> 13u);
    uint e = a >> 23u;
    if (e < 102u) return sign;
    uint m = (a & 0x7fffffu) | 0x800000u;
    uint s = 126u - e;
    return sign | ((m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s);
}

#define load_dst(hg_i) ((uint)(dst[(hg_i)]))
#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (ushort)((hg_v)))
#define load_src(hg_i) ((uint)(src[(hg_i)]))
#define load_tx(hg_i) (tx[(hg_i)])
#define load_ty(hg_i) (ty[(hg_i)])
#define load_tz(hg_i) (tz[(hg_i)])

__kernel __attribute__((reqd_work_group_size(32, 8, 1))) void layout_add_f16(__global ushort* restrict dst, __global const ushort* restrict src, __global const uint* restrict tx, __global const uint* restrict ty, __global const uint* restrict tz, uint nx, uint ny, uint nz, uint ndst) {
    uint x = ((uint)get_global_id(0));
    uint y = ((uint)get_global_id(1));
    uint z = ((uint)get_global_id(2));
    if (x >= nx || y >= ny || z >= nz) return;
    uint f = (z * ny + y) * nx + x;
    uint d = load_tz(z) + load_ty(y) + load_tx(x);
    if (d >= ndst) return;
    store_dst(d, hg_f32_to_f16(hg_f16_to_f32(load_dst(d)) + hg_f16_to_f32(load_src(f))));
}
