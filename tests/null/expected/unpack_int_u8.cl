#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (uchar)((hg_v)))
#define load_data(hg_i) ((uint)(data[(hg_i)]))

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void unpack_int_u8(__global uchar* restrict dst, __global const uchar* restrict data, uint n, uint doff, uint bits, uint sgn) {
    uint i = ((uint)get_global_id(0));
    if (i >= n) return;
    uint bit = i * bits;
    uint code = (load_data(doff + (bit >> 3u)) >> (bit & 7u)) & ((1u << bits) - 1u);
    if (sgn != 0u && code >= (1u << (bits - 1u))) code = code | ~((1u << bits) - 1u);
    store_dst(i, code & 255u);
}
