"""Host C source of the layout gather's block statements (TRANSPOSE8, ZORDER8, TRANSPOSE16,
ZORDER16, COPY16) on u32 words: AVX2/AVX-512 register moves and whole-line streaming stores.
The host renderer emits a helper only in kernels that call its statement."""

__all__ = ["C16_HELPER", "T8_HELPER", "T16_HELPER", "Z8_HELPER", "Z16_HELPER"]

# TRANSPOSE8 and ZORDER8 of u32 words on the host (AVX2; kept apart from SCALE8): eight 8-word
# loads, then lane moves. TRANSPOSE8: the 32-bit and 64-bit unpacks and 128-bit lane swaps of a
# register transpose. ZORDER8: a vector's lane bits are (j0 k0 j1) and its index (k1 j2 k2);
# swapping lanes 1 and 2, then 64-bit halves with the neighbouring vector, then 128-bit halves
# with the vector 4 away leaves lanes (k0 k1 k2) and index (j0 j2 j1): row j.
# hg_t8_rows: rows j of the 8 x 8 transpose in o[j] (TRANSPOSE16's AVX2 form shares it).
T8_HELPER = """\
#if defined(__AVX2__) && !defined(HG_T8_ROWS)
#define HG_T8_ROWS
#include <immintrin.h>
// The 32-bit, then 64-bit unpack stages of a register transpose of n vectors r (P: the
// intrinsics' prefix, _mm256 or _mm512); then u[4i + k] holds, in 128-bit lane l, row 4l + k
// of columns 4i..4i+3.
#define HG_T_UNPACK(P, n, r, t, u) do { \\
    for (int k = 0; k < (n); k += 2) { \\
        t[k] = P##_unpacklo_epi32(r[k], r[k + 1]); \\
        t[k + 1] = P##_unpackhi_epi32(r[k], r[k + 1]); \\
    } \\
    for (int k = 0; k < (n); k += 4) { \\
        u[k] = P##_unpacklo_epi64(t[k], t[k + 2]); \\
        u[k + 1] = P##_unpackhi_epi64(t[k], t[k + 2]); \\
        u[k + 2] = P##_unpacklo_epi64(t[k + 1], t[k + 3]); \\
        u[k + 3] = P##_unpackhi_epi64(t[k + 1], t[k + 3]); \\
    } \\
} while (0)
static inline void hg_t8_rows(__m256i o[8], const uint32_t *restrict s, uint32_t si, uint32_t sn) {
    __m256i r[8], t[8], u[8];
    for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_si256((const void *)(s + (uint32_t)(si + k * sn)));
    HG_T_UNPACK(_mm256, 8, r, t, u);
    for (int j = 0; j < 4; j++) {
        o[j] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x20);
        o[j + 4] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x31);
    }
}
static inline void hg_t8_u32(uint32_t *restrict d, uint32_t di, uint32_t dn,
                             const uint32_t *restrict s, uint32_t si, uint32_t sn) {
    __m256i o[8];
    hg_t8_rows(o, s, si, sn);
    for (int j = 0; j < 8; j++) _mm256_storeu_si256((void *)(d + (uint32_t)(di + j * dn)), o[j]);
}
#endif"""
Z8_HELPER = """\
#if defined(__AVX2__) && !defined(HG_Z8_ROWS)
#define HG_Z8_ROWS
#include <immintrin.h>
// Rows j of the 64 words' 8 x 8 Morton group in o[j] (ZORDER16's quarters share it).
static inline void hg_z8_rows(__m256i o[8], const uint32_t *restrict s, uint32_t si) {
    __m256i v[8], w[8];
    for (int i = 0; i < 8; i++)
        v[i] = _mm256_shuffle_epi32(_mm256_loadu_si256((const void *)(s + si + 8 * i)), 0xD8);
    for (int i = 0; i < 8; i += 2) {
        w[i] = _mm256_unpacklo_epi64(v[i], v[i + 1]);
        w[i + 1] = _mm256_unpackhi_epi64(v[i], v[i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        int lo = (i & 1) | ((i << 1) & 4);  // the rows of w[i] | w[i + 4]: lo and lo | 2
        o[lo] = _mm256_permute2x128_si256(w[i], w[i + 4], 0x20);
        o[lo | 2] = _mm256_permute2x128_si256(w[i], w[i + 4], 0x31);
    }
}
static inline void hg_z8_u32(uint32_t *restrict d, uint32_t di, uint32_t dn,
                             const uint32_t *restrict s, uint32_t si, uint32_t unused) {
    __m256i o[8];
    (void)unused;
    hg_z8_rows(o, s, si);
    for (int j = 0; j < 8; j++) _mm256_storeu_si256((void *)(d + (uint32_t)(di + j * dn)), o[j]);
}
#endif"""


# TRANSPOSE16 of u32 words on the host: rows of 16 words are whole cache lines, so an output past
# the cache (hg_big, as SCALE8's) is written with non-temporal stores where every row starts on
# a line: measured on a 4096^2 f32 column-major source, 8 x 8 transposes with plain stores
# moved 0.2-0.4 of copy bandwidth (each destination line is read, then filled in two halves
# while the 16 KiB-strided source and destination rows evict each other in L1); whole-line
# streaming stores 0.7-0.9. AVX-512: one 16 x 16 register transpose (unpacks, then 128-bit
# lane shuffles); AVX2: four 8 x 8 ones (hg_t8_rows), each row's halves stored back to back.
# _B16_BASE: what TRANSPOSE16 and ZORDER16 share (a kernel may use both: emitted once).
_B16_BASE = """\
#ifndef HG_B16_BASE
#define HG_B16_BASE
#ifndef HG_STREAM_BYTES
#define HG_STREAM_BYTES (32u << 20)
#endif
#ifndef hg_big
#define hg_big(total, size) ((uint64_t)(total) * (size) > (uint64_t)HG_STREAM_BYTES)
#endif
#if defined(__AVX2__)
#include <immintrin.h>
static inline void hg_t16_fence(void) { _mm_sfence(); }
#else
static inline void hg_t16_fence(void) {}
#endif
#endif"""
T16_HELPER = T8_HELPER + "\n" + _B16_BASE + """
#if defined(__AVX2__)
#if defined(__AVX512F__)
static inline void hg_t16_u32(uint32_t *restrict d, uint32_t di, uint32_t dn,
                              const uint32_t *restrict s, uint32_t si, uint32_t sn, int big) {
    __m512i r[16], t[16], u[16], o[16];
    int nt = big && ((((uintptr_t)(d + di)) | ((uintptr_t)dn << 2)) & 63u) == 0u;
    for (int k = 0; k < 16; k++) r[k] = _mm512_loadu_si512((const void *)(s + (uint32_t)(si + k * sn)));
    HG_T_UNPACK(_mm512, 16, r, t, u);
    for (int k = 0; k < 4; k++) {
        __m512i v0 = _mm512_shuffle_i32x4(u[k], u[k + 4], 0x44);
        __m512i v1 = _mm512_shuffle_i32x4(u[k], u[k + 4], 0xEE);
        __m512i w0 = _mm512_shuffle_i32x4(u[k + 8], u[k + 12], 0x44);
        __m512i w1 = _mm512_shuffle_i32x4(u[k + 8], u[k + 12], 0xEE);
        o[k] = _mm512_shuffle_i32x4(v0, w0, 0x88);
        o[k + 4] = _mm512_shuffle_i32x4(v0, w0, 0xDD);
        o[k + 8] = _mm512_shuffle_i32x4(v1, w1, 0x88);
        o[k + 12] = _mm512_shuffle_i32x4(v1, w1, 0xDD);
    }
    for (int j = 0; j < 16; j++) {
        void *p = (void *)(d + (uint32_t)(di + j * dn));
        if (nt) _mm512_stream_si512(p, o[j]);
        else _mm512_storeu_si512(p, o[j]);
    }
}
#else
static inline void hg_t16_u32(uint32_t *restrict d, uint32_t di, uint32_t dn,
                              const uint32_t *restrict s, uint32_t si, uint32_t sn, int big) {
    int nt = big && ((((uintptr_t)(d + di)) | ((uintptr_t)dn << 2)) & 63u) == 0u;
    for (uint32_t h = 0; h < 16u; h += 8u) {
        __m256i a[8], b[8];
        hg_t8_rows(a, s, si + h, sn);
        hg_t8_rows(b, s, si + h + 8u * sn, sn);
        for (uint32_t j = 0; j < 8u; j++) {
            __m256i *p = (__m256i *)(void *)(d + (uint32_t)(di + (h + j) * dn));
            if (nt) { _mm256_stream_si256(p, a[j]); _mm256_stream_si256(p + 1, b[j]); }
            else { _mm256_storeu_si256(p, a[j]); _mm256_storeu_si256(p + 1, b[j]); }
        }
    }
}
#endif
#endif"""

# ZORDER16: its four 8 x 8 quarters (j's fourth bit at 64, k's at 128) as ZORDER8's rows, each
# destination row the two quarters' rows stored back to back: a whole cache line, streamed for
# an output past the cache as TRANSPOSE16's. Measured on a 4096^2 f32 Morton source (CPU
# seconds of a copy of the same bytes over the gather's, 2 CPUs under load): ZORDER8 with plain
# stores 0.20-0.32, ZORDER16 streaming whole lines 0.56-0.73.
Z16_HELPER = Z8_HELPER + "\n" + _B16_BASE + """
#if defined(__AVX2__)
static inline void hg_z16_u32(uint32_t *restrict d, uint32_t di, uint32_t dn,
                              const uint32_t *restrict s, uint32_t si, uint32_t unused, int big) {
    int nt = big && ((((uintptr_t)(d + di)) | ((uintptr_t)dn << 2)) & 63u) == 0u;
    (void)unused;
    for (uint32_t h = 0; h < 2u; h++) {
        __m256i a[8], b[8];
        hg_z8_rows(a, s, si + 64u * h);
        hg_z8_rows(b, s, si + 64u * h + 128u);
        for (uint32_t j = 0; j < 8u; j++) {
            __m256i *p = (__m256i *)(void *)(d + (uint32_t)(di + (8u * h + j) * dn));
            if (nt) { _mm256_stream_si256(p, a[j]); _mm256_stream_si256(p + 1, b[j]); }
            else { _mm256_storeu_si256(p, a[j]); _mm256_storeu_si256(p + 1, b[j]); }
        }
    }
}
#endif"""


# COPY16 of u32 words on the host: the two 8-word runs as one 16-word row, a whole cache line
# where it starts on one, streamed past the cache for an output too large for it (hg_big):
# measured on a 4096^2 f32 source of 64 x 64 tiles of 8 x 8, COPY8's plain 32-byte stores
# moved 0.3-0.5 of copy bandwidth (each destination line is read before it is overwritten).
C16_HELPER = _B16_BASE + """
#if defined(__AVX2__)
static inline void hg_c16_u32(uint32_t *restrict d, uint32_t di, const uint32_t *restrict s,
                              uint32_t si, uint32_t sj, int big) {
    __m256i a = _mm256_loadu_si256((const void *)(s + si));
    __m256i b = _mm256_loadu_si256((const void *)(s + sj));
    void *p = (void *)(d + di);
#if defined(__AVX512F__)
    __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
    if (big && ((uintptr_t)p & 63u) == 0u) _mm512_stream_si512(p, v);
    else _mm512_storeu_si512(p, v);
#else
    if (big && ((uintptr_t)p & 63u) == 0u) {
        _mm256_stream_si256((__m256i *)p, a);
        _mm256_stream_si256((__m256i *)p + 1, b);
    } else {
        _mm256_storeu_si256((__m256i *)p, a);
        _mm256_storeu_si256((__m256i *)p + 1, b);
    }
#endif
}
#endif"""
