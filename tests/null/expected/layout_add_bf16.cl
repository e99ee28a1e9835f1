static inline float hg_bf16_to_f32(uint h) {
    return as_float((h & 0xffffu) << 16u);
}

static inline uint hg_f32_to_bf16(float v) {
    uint b = as_uint(v);
    // NaN becomes the canonical quiet NaN with its sign, as ml_dtypes does.
    if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16u) & 0x8000u) | 0x7fc0u;
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

#define load_dst(hg_i) ((uint)(dst[(hg_i)]))
#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (ushort)((hg_v)))
#define load_src(hg_i) ((uint)(src[(hg_i)]))
#define load_tx(hg_i) (tx[(hg_i)])
#define load_ty(hg_i) (ty[(hg_i)])
#define load_tz(hg_i) (tz[(hg_i)])

__kernel __attribute__((reqd_work_group_size(32, 8, 1))) void layout_add_bf16(__global ushort* restrict dst, __global const ushort* restrict src, __global const uint* restrict tx, __global const uint* restrict ty, __global const uint* restrict tz, uint nx, uint ny, uint nz, uint ndst) {
    uint x = ((uint)get_global_id(0));
    uint y = ((uint)get_global_id(1));
    uint z = ((uint)get_global_id(2));
    if (x >= nx || y >= ny || z >= nz) return;
    uint f = (z * ny + y) * nx + x;
    uint d = load_tz(z) + load_ty(y) + load_tx(x);
    if (d >= ndst) return;
    store_dst(d, hg_f32_to_bf16(hg_bf16_to_f32(load_dst(d)) + hg_bf16_to_f32(load_src(f))));
}
