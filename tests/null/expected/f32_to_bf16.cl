static inline uint hg_f32_to_bf16(float v) {
    uint b = as_uint(v);
    // NaN becomes the canonical quiet NaN with its sign, as ml_dtypes does.
    if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16u) & 0x8000u) | 0x7fc0u;
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (ushort)hg_f32_to_bf16((hg_v)))
#define load_src(hg_i) (src[(hg_i)])

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void f32_to_bf16(__global ushort* restrict dst, __global const float* restrict src, uint n) {
    uint i = ((uint)get_global_id(0));
    if (i >= n) return;
    store_dst(i, load_src(i));
}
