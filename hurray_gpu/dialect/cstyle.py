"""The C-family dialects (CUDA C, HIP C, OpenCL C 1.2, host C + OpenMP), as data.

Each differs from :class:`CStyleRenderer` only in class attributes, plus host C's entry and
SCALE8 hooks.
"""

from __future__ import annotations

import re
from typing import ClassVar

from hurray_gpu.dialect.crmath import CR_FUNCS
from hurray_gpu.dialect.host_blocks import C16_HELPER, T8_HELPER, T16_HELPER, Z8_HELPER, Z16_HELPER
from hurray_gpu.dialect.host_groups import render_group_entry
from hurray_gpu.dialect.host_scale8 import MX_HELPER, S8Z_FIELDS, S8Z_HELPERS
from hurray_gpu.dialect.kernel import LONG_ITEMS, KernelDef
from hurray_gpu.dialect.render import (
    AFFINE8_CALL,
    BLOCK8_CALL,
    BLOCK16_CALL,
    COPY8_CALL,
    COPY16_CALL,
    HFAFFINE8_CALL,
    MXSCALE8_CALL,
    SCALE8_CALL,
    SCALE8_CONV,
    CStyleRenderer,
    expand_block8,
    expand_scale8,
)
from hurray_gpu.dialect.softf64 import HARDWARE_F64

__all__ = ["CUDARenderer", "HIPRenderer", "HostCRenderer", "OpenCLRenderer"]

_C_OPS = {"U32": "(u32)(", "I32": "(i32)(", "F32": "(f32)(", "FMA": "fmaf(", "FMA_RN": "fmaf(",
          "FMIN": "fminf(",
          "FMAX": "fmaxf(", "SQRT": "sqrtf(", "FLOOR": "floorf(", "FABS": "fabsf(",
          "EXP2": "exp2f(", "LOG2": "log2f(", "F64": "(f64)(", "SQRT64": "sqrt(",
          "F64_HI": "hg_f64_hi(", "F64_LO": "hg_f64_lo(", "AS_F64": "hg_as_f64(",
    "POW2_64": "hg_pow2_64(", **{f"CR_{n}": f"hg_cr_{n.lower()}(" for n in CR_FUNCS}, "F16_BITS_TO_F32": "hg_f16_to_f32(",
          "BF16_BITS_TO_F32": "hg_bf16_to_f32(",
          "F32_TO_F16_BITS": "hg_f32_to_f16(", "F32_TO_BF16_BITS": "hg_f32_to_bf16("}


def _atomics(fmt: str, names: dict[str, str], cas: str) -> dict[str, str]:
    """ATOMIC_* templates from one call shape (``{fn}`` = the dialect's function name)."""
    table = {op: fmt.replace("{fn}", fn) for op, fn in names.items()}
    return {**table, "ATOMIC_CAS": cas}


class CUDARenderer(CStyleRenderer):
    """CUDA C for NVRTC: extern "C" entries, native __half conversions."""

    dialect = "cuda"
    extension = "cu"
    prelude = ""
    f16_prelude = "#include <cuda_fp16.h>"
    soft_f16 = False
    kernel_prefix = 'extern "C" __global__ void __launch_bounds__({threads})'
    function_prefix = "__device__ static inline"
    buffer_fmt = "{const}{type}* __restrict__ {name}"
    index_expr = ("(blockIdx.x * blockDim.x + threadIdx.x)",
                  "(blockIdx.y * blockDim.y + threadIdx.y)",
                  "(blockIdx.z * blockDim.z + threadIdx.z)")
    type_map: ClassVar[dict[str, str]] = {
        "u32": "unsigned int", "i32": "int", "f32": "float", "bool": "bool",
        "u8": "unsigned char", "i8": "signed char", "u16": "unsigned short", "i16": "short",
        "f16": "__half", "bf16": "unsigned short", "f64": "double"}
    f64_helpers = HARDWARE_F64["cuda"]
    op_map: ClassVar[dict[str, str]] = {
        **_C_OPS, "AS_F32": "__uint_as_float(", "AS_U32": "__float_as_uint(",
        "UMIN": "min(", "UMAX": "max(", "IMIN": "min(", "IMAX": "max(", "UMULHI": "__umulhi(",
        "BARRIER": "__syncthreads("}
    shared_decl = "__shared__ u32 {name}[{count}];"
    load_map = {**CStyleRenderer.load_map, "f16": "__half2float({b}[{i}])"}
    atomic_map: ClassVar[dict[str, str]] = _atomics(
        "{fn}(&{b}[{i}], {v})",
        {"ATOMIC_ADD": "atomicAdd", "ATOMIC_OR": "atomicOr", "ATOMIC_AND": "atomicAnd",
         "ATOMIC_XOR": "atomicXor", "ATOMIC_MIN": "atomicMin", "ATOMIC_MAX": "atomicMax",
         "ATOMIC_XCHG": "atomicExch"}, "atomicCAS(&{b}[{i}], {e}, {v})")
    store_map = {**CStyleRenderer.store_map, "f16": "({b}[{i}] = __float2half_rn({v}))"}


class HIPRenderer(CUDARenderer):
    """HIP C for hipRTC/hipcc: CUDA's spelling with HIP's half header."""

    dialect = "hip"
    extension = "hip"
    # hipRTC's built-in header already has the runtime and __half: including hip_fp16.h there
    # again redefines it (ROCm 5.2's hipRTC rejects that); hipcc needs both headers.
    prelude = "#if !defined(__HIPCC_RTC__)\n#include <hip/hip_runtime.h>\n#endif"
    f16_prelude = "#if !defined(__HIPCC_RTC__)\n#include <hip/hip_fp16.h>\n#endif"


class OpenCLRenderer(CStyleRenderer):
    """OpenCL C 1.2: half only through vload_half/vstore_half_rte (pocl has no fp16 math)."""

    dialect = "opencl"
    extension = "cl"
    soft_f16 = False
    kernel_prefix = ("__kernel __attribute__((reqd_work_group_size({lx}, {ly}, {lz}))) void")
    function_prefix = "static inline"
    buffer_fmt = "__global {const}{type}* restrict {name}"
    index_expr = ("((uint)get_global_id(0))", "((uint)get_global_id(1))",
                  "((uint)get_global_id(2))")
    type_map: ClassVar[dict[str, str]] = {
        "u32": "uint", "i32": "int", "f32": "float", "bool": "bool", "u8": "uchar",
        "i8": "char", "u16": "ushort", "i16": "short", "f16": "half", "bf16": "ushort",
        "f64": "double"}
    f64_helpers = HARDWARE_F64["opencl"]
    op_map: ClassVar[dict[str, str]] = {
        **_C_OPS, "FMA": "fma(", "FMA_RN": "fma(", "FMIN": "fmin(", "FMAX": "fmax(",
        "SQRT": "sqrt(",
        "FLOOR": "floor(", "FABS": "fabs(", "EXP2": "exp2(", "LOG2": "log2(",
        "AS_F32": "as_float(", "AS_U32": "as_uint(", "UMIN": "min(", "UMAX": "max(",
        "IMIN": "min(", "IMAX": "max(", "UMULHI": "mul_hi(",
        "BARRIER": "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE"}
    shared_decl = "__local u32 {name}[{count}];"
    load_map = {**CStyleRenderer.load_map, "f16": "vload_half({i}, {b})"}
    atomic_map: ClassVar[dict[str, str]] = _atomics(
        "{fn}(&{b}[{i}], {v})",
        {"ATOMIC_ADD": "atomic_add", "ATOMIC_OR": "atomic_or", "ATOMIC_AND": "atomic_and",
         "ATOMIC_XOR": "atomic_xor", "ATOMIC_MIN": "atomic_min", "ATOMIC_MAX": "atomic_max",
         "ATOMIC_XCHG": "atomic_xchg"}, "atomic_cmpxchg(&{b}[{i}], {e}, {v})")
    store_map = {**CStyleRenderer.store_map, "f16": "vstore_half_rte({v}, {i}, {b})"}


# Without OpenMP (zig cc ships no libgomp) a compiler given -DHG_THREADS runs the entry's chunks
# on POSIX threads: a team made per launch (no thread outlives a call, so a kernel library
# holds no state to tear down), one thread per CPU this process may run on (the online CPUs
# where there is no affinity mask) or OMP_NUM_THREADS, taking chunks from a shared counter as
# OpenMP's schedule(dynamic, 1) does; the calling thread is one of them. 64 at most: the chunk
# sizing wants 8 chunks per thread, and far fewer launches are that large. A failed
# pthread_create leaves fewer threads, not an error. Against OpenMP's kept team (both built by
# gcc, NF4 dequantization): even on launches of tens of milliseconds, about a fifth more CPU
# time on launches of a fraction of one.
_HOST_PRELUDE = """\
#if defined(HG_THREADS) && !defined(_OPENMP) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float hg_as_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t hg_as_u32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline uint32_t hg_umin(uint32_t a, uint32_t b) { return a < b ? a : b; }
static inline uint32_t hg_umax(uint32_t a, uint32_t b) { return a > b ? a : b; }
static inline int32_t hg_imin(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t hg_imax(int32_t a, int32_t b) { return a > b ? a : b; }
#ifdef _OPENMP
#include <omp.h>
#define HG_MAX_THREADS() omp_get_max_threads()
#elif defined(HG_THREADS)
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
typedef struct { void **bufs; const uint32_t *words; int64_t n0, n1, size, total; } hg_job_t;
typedef struct { void (*task)(const hg_job_t *, int64_t); const hg_job_t *job;
                 int64_t chunks, next; } hg_team_t;
static int hg_threads(void) {
    static int hg_n;
    int n = __atomic_load_n(&hg_n, __ATOMIC_RELAXED);
    if (n == 0) {
        const char *env = getenv("OMP_NUM_THREADS");
#ifdef __linux__
        cpu_set_t set;
        n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
#else
        n = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? (int)sysconf(_SC_NPROCESSORS_ONLN) : 1;
#endif
        n = env && atoi(env) > 0 ? atoi(env) : n;
        __atomic_store_n(&hg_n, n, __ATOMIC_RELAXED);
    }
    return n;
}
#define HG_MAX_THREADS() hg_threads()
static void *hg_worker(void *arg) {
    hg_team_t *team = (hg_team_t *)arg;
    for (int64_t c; (c = __atomic_fetch_add(&team->next, 1, __ATOMIC_RELAXED)) < team->chunks;)
        team->task(team->job, c);
    return NULL;
}
static void hg_parallel(void (*task)(const hg_job_t *, int64_t), const hg_job_t *job,
                        int64_t chunks) {
    hg_team_t team = {task, job, chunks, 0};
    pthread_t ids[63];  /* with the caller: 64 */
    int64_t want = HG_MAX_THREADS() < chunks ? HG_MAX_THREADS() : chunks;
    int started = 0;
    while (started < want - 1 && started < 63
           && pthread_create(&ids[started], NULL, hg_worker, &team) == 0)
        started++;
    hg_worker(&team);
    for (int i = 0; i < started; i++) pthread_join(ids[i], NULL);
}
#endif"""

# The host entry: the same ABI for every kernel, so ctypes needs one prototype. Each thread
# walks whole chunks of work items, advancing the ids with carries: a 64-bit division per
# item would cost more than most kernel bodies.
# Chunks hold 4096 work items, 128 for kernels tagged LONG_ITEMS (about 128k elements): counted
# in items alone, a 4 Mi-element dequantization was one chunk and one thread; at 32 a 64k one
# went parallel and paid more to wake the team than it saved.
# A launch of one chunk runs on the calling thread, outside any parallel region: waking the
# OpenMP team costs more than a small kernel (measured: small KV decode steps +25%, small
# gathers +70%), and even a region of one thread (``if(0)``) costs libgomp a team set-up and a
# futex wake, a system call per launch. Larger launches are cut into at least 8 chunks per
# thread, handed out as threads free up: with one chunk per thread (or 9 chunks on 2 threads)
# the wall time was that of the slowest or most loaded thread. Both run one chunk walk, kept
# out of line so that it stays the item's only caller (GCC then inlines the item into its
# loop; with the walk inlined twice it called large items, such as the layout gather's).
_HOST_ENTRY = """\
static __attribute__((noinline)) void {name}_chunk(int64_t hg_c, int64_t hg_size,
        int64_t hg_total, int64_t hg_n0, int64_t hg_n1{params}) {{
    int64_t hg_t = hg_c * hg_size;
    int64_t hg_end = hg_t + hg_size < hg_total ? hg_t + hg_size : hg_total;
    uint32_t hg_x = (uint32_t)(hg_t % hg_n0), hg_y = (uint32_t)((hg_t / hg_n0) % hg_n1);
    uint32_t hg_z = (uint32_t)(hg_t / (hg_n0 * hg_n1));{chunk_init}
    for (; hg_t < hg_end; hg_t++) {{
        {name}_item(hg_x, hg_y, hg_z, {args});
        if (++hg_x == (uint32_t)hg_n0) {{
            hg_x = 0;
            if (++hg_y == (uint32_t)hg_n1) {{ hg_y = 0; hg_z++; }}
        }}
    }}{fence}
}}

#if defined(HG_THREADS) && !defined(_OPENMP)
static void {name}_task(const hg_job_t *hg_job, int64_t hg_c) {{
    void **hg_bufs = hg_job->bufs;
    const uint32_t *hg_words = hg_job->words;
{unpack}
    {name}_chunk(hg_c, hg_job->size, hg_job->total, hg_job->n0, hg_job->n1{names});
}}
#endif

void {name}(void **hg_bufs, const uint32_t *hg_words, int64_t hg_n0, int64_t hg_n1,
            int64_t hg_n2) {{
{unpack}
    int64_t hg_total = hg_n0 * hg_n1 * hg_n2;
    int64_t hg_size = {size};
    int64_t hg_chunks = (hg_total + hg_size - 1) / hg_size;
#ifdef HG_MAX_THREADS
    int64_t hg_want = 8 * (int64_t)HG_MAX_THREADS();
    if (hg_chunks > 1 && hg_chunks < hg_want) {{
        hg_size = (hg_total + hg_want - 1) / hg_want;
        hg_chunks = (hg_total + hg_size - 1) / hg_size;
    }}
    if (hg_chunks > 1) {{
#ifdef _OPENMP
        #pragma omp parallel for schedule(dynamic, 1)
        for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
            {name}_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1{names});
#else
        hg_job_t hg_job = {{hg_bufs, hg_words, hg_n0, hg_n1, hg_size, hg_total}};
        hg_parallel({name}_task, &hg_job, hg_chunks);
#endif
        return;
    }}
#endif
    for (int64_t hg_c = 0; hg_c < hg_chunks; hg_c++)
        {name}_chunk(hg_c, hg_size, hg_total, hg_n0, hg_n1{names});
}}"""


# SCALE8_<T> on the host (AVX2; -march=native names it where the CPU has it): a group's eight
# codes as lanes (a shift of a broadcast word), their T values by two 8-lane permutes of a
# 16-entry table and a blend by each code's fourth bit (4-bit) or eight scalar loads (6-, 8-bit:
# AVX2 gathers are slower than the loads on AMD cores; the codes' bytes are assembled in
# registers, as a partial memcpy into a zeroed word stalls on store forwarding), one multiply
# by s with NaN lanes kept, then the output conversion (hg_s8_cv: conv 0 f32 as is, 1 bf16, 2
# f16, in 16-bit lanes) in vector integer arithmetic with the portable helpers' rounding and
# NaN rules (f16: F16C rounds finite values to nearest even like hg_f32_to_f16; NaN lanes take
# that helper's payload rule). Runs of at least four groups of 4-bit codes scale and convert
# the 16 entries once (the same operations on the same operands give the same bits) and then
# only look codes up: f32 by the permutes, 16-bit outputs 32 codes at a time by byte shuffles
# (hg_s8_sh32) of tables of the entries' low and high bytes (both 128-bit lanes hold all 16).
# hg_s8_run is always inlined so that the code width is a constant. An output larger than
# HG_STREAM_BYTES (the cpu backend passes its cache size, see _stream_bytes) is written with
# non-temporal stores where aligned: no read of each line before it is overwritten (an output
# that fits the cache is faster with plain stores); the entry fences them before its items
# count as done.
#
# A table T of a small float format (sign, E exponent, M mantissa bits, bias 2^(E-1) - 1) is
# arithmetic: code magnitude c below k has the value q * 2^(max(c >> M, 1) - bias - M), q the
# significand (c's mantissa plus the implicit bit of a normal code), an integer of at most
# four bits, so the f32 bits of q (a conversion) plus that exponent are T(c) exactly; for a
# power-of-two scale s = 2^(e-127) that keeps every such value normal ([elo, ehi]) s * T(c)
# is exact, and the oracle's multiply and rounding give the same bits as adding e - 127 to the
# exponent. Magnitudes from k up (inf and NaN codes, at most the top 16) keep their entries.
# hg_s8_fmt_check finds M and k by comparing that arithmetic with every entry (both signs) and
# records them in the chunk's hg_s8_c (the entry declares it, items take it): a table buffer
# is read-only while a kernel runs, and the next chunk checks again (a private array, rebuilt
# per run, is never checked: hg_s8_run's last argument is NULL). 6- and 8-bit codes then need no table loads (f32
# bits computed for eight codes at once, bf16 outputs their exact high halves); 4-bit tables
# (no inf/NaN codes) keep their 16 values as bf16 bits (t16; nz: the nonzero ones), which only
# get e - 127 added to their exponent per run. 6- and 8-bit codes go 16 at a time in 16-bit
# lanes where the output allows (hg_s8_b16): as bf16 (and f32, bf16 widened: every value of
# such a table has at most four significant bits, so its f32 low half is zero) and as f16 when
# every normal code's value stays f16-normal at that scale, a normal magnitude is its bits
# shifted into place plus the exponent offset, and the few subnormal (below 2^M; f16: F16C
# rounds them per run, so float8_e5m2's f16 subnormals qualify) and inf/NaN magnitudes are
# byte-shuffle lookups: half the instructions of the eight-code f32 path and its narrowing.
_SCALE8_HELPERS = """\
#ifndef HG_STREAM_BYTES
#define HG_STREAM_BYTES (32u << 20)
#endif
#define hg_big(total, size) ((uint64_t)(total) * (size) > (uint64_t)HG_STREAM_BYTES)
#if defined(__AVX2__)
#include <immintrin.h>
typedef struct {
    const float *tab;
    int bits, m, k, elo, eln, ehi;  // eln: elo of the normal codes (from 2^M) alone
    __m256i sp[2], bp[2], t16, nz;  // sp: T of the top 16 magnitudes; bp: bf16-rule NaNs
    // Magnitudes m below 8 (nz16: 2^M > m > 0): T's exponent fields and bf16 mantissas; the
    // top 8 as each output writes them (f32: high halves, top0 when exact).
    __m256i ex16, mb16, nz16, hi16[3];
    int top0;
""" + S8Z_FIELDS + """} hg_s8_fmt_t;
static inline void hg_s8_fence(void) { _mm_sfence(); }
""" + S8Z_HELPERS + """static inline __m256i hg_s8_codes(const uint8_t *p, int bits) {
    if (bits == 8) return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
    uint32_t w;
    uint16_t h;
    memcpy(&w, p, 4);
    memcpy(&h, p + 4, 2);  // 6-bit: codes 0-3 from bytes 0-2, codes 4-7 from bytes 3-5
    __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)(w | (uint64_t)h << 32)),
        _mm256_setr_epi8(0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1,
                         3, 4, 5, -1, 3, 4, 5, -1, 3, 4, 5, -1, 3, 4, 5, -1));
    return _mm256_and_si256(_mm256_srlv_epi32(b, _mm256_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18)),
                            _mm256_set1_epi32(63));
}
// Sixteen codes (two groups) in 16-bit lanes. 6-bit: each lane takes the two bytes holding its
// code (the first byte alone, in the high half, for a code in one byte) and a multiply-high by
// 2^(16 - shift) shifts it into place; the 12 bytes are read as two overlapping 8-byte words.
static inline __m256i hg_s8_codes16(const uint8_t *p, int bits) {
    if (bits == 8) return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)p));
    __m256i w = _mm256_set_m128i(_mm_loadl_epi64((const __m128i *)(const void *)(p + 4)),
                                 _mm_loadl_epi64((const __m128i *)(const void *)p));
    w = _mm256_shuffle_epi8(w, _mm256_setr_epi8(-1, 0, 0, 1, 1, 2, -1, 2, -1, 3, 3, 4, 4, 5, -1, 5,
                                                -1, 2, 2, 3, 3, 4, -1, 4, -1, 5, 5, 6, 6, 7, -1, 7));
    return _mm256_and_si256(_mm256_mulhi_epu16(w, _mm256_setr_epi16(
        256, 1024, 4096, 64, 256, 1024, 4096, 64, 256, 1024, 4096, 64, 256, 1024, 4096, 64)),
        _mm256_set1_epi16(63));
}
// The f32 bits of s * T(c) for eight codes, x = e - 127 - bias - M (see above).
static inline __m256i hg_s8_fast(__m256i c, const hg_s8_fmt_t *f, int x, __m256i sp0,
                                 __m256i sp1) {
    __m128i m = _mm_cvtsi32_si128(f->m);
    __m256i one = _mm256_set1_epi32(1);
    __m256i mag = _mm256_and_si256(c, _mm256_set1_epi32((1 << (f->bits - 1)) - 1));
    __m256i ef = _mm256_max_epu32(_mm256_srl_epi32(mag, m), one);
    __m256i q = _mm256_sub_epi32(mag, _mm256_sll_epi32(_mm256_sub_epi32(ef, one), m));
    __m256i b = _mm256_add_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(q)), _mm256_andnot_si256(
        _mm256_cmpeq_epi32(q, _mm256_setzero_si256()),
        _mm256_slli_epi32(_mm256_add_epi32(ef, _mm256_set1_epi32(x)), 23)));
    if (f->k < 1 << (f->bits - 1))
        b = _mm256_blendv_epi8(b, _mm256_castps_si256(_mm256_blendv_ps(
            _mm256_permutevar8x32_ps(_mm256_castsi256_ps(sp0), c),
            _mm256_permutevar8x32_ps(_mm256_castsi256_ps(sp1), c),
            _mm256_castsi256_ps(_mm256_slli_epi32(c, 28)))),
            _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(f->k - 1)));
    return _mm256_or_si256(b, _mm256_slli_epi32(_mm256_srl_epi32(
        c, _mm_cvtsi32_si128(f->bits - 1)), 31));
}
// 16-bit bits (w mantissa bits: bf16 7, f16 10) of s * T(c) for 16 codes in 16-bit lanes, x
// the exponent offset << w: a normal magnitude shifted into place plus x, capped at infinity
// (f16 at scales past its range: a value of at most four significant bits is exact below
// 2^16 and rounds to infinity from there; the add saturates); subnormal ones (below 2^M <= 8)
// and those from k up (k >= top 8) by byte shuffles of 8-entry tables (lo16: this run's
// values; hi: the output's inf/NaN bits).
static inline __m256i hg_s8_b16(__m256i c, const hg_s8_fmt_t *f, __m256i x, __m256i lo16,
                                __m256i hi, int w) {
    __m256i mag = _mm256_and_si256(c, _mm256_set1_epi16((short)((1 << (f->bits - 1)) - 1)));
    __m256i ix = _mm256_add_epi16(_mm256_mullo_epi16(_mm256_and_si256(mag, _mm256_set1_epi16(7)),
                                                     _mm256_set1_epi16(0x0202)),
                                  _mm256_set1_epi16(0x0100));
    __m256i b = _mm256_adds_epu16(_mm256_sll_epi16(mag, _mm_cvtsi32_si128(w - f->m)), x);
    if (w == 10) b = _mm256_min_epu16(b, _mm256_set1_epi16(0x7c00));  // (bf16 stays in range)
    b = _mm256_blendv_epi8(b, _mm256_shuffle_epi8(lo16, ix),
                           _mm256_cmpgt_epi16(_mm256_set1_epi16((short)(1 << f->m)), mag));
    if (f->k < 1 << (f->bits - 1))
        b = _mm256_blendv_epi8(b, _mm256_shuffle_epi8(hi, ix),
                               _mm256_cmpgt_epi16(mag, _mm256_set1_epi16((short)(f->k - 1))));
    return _mm256_or_si256(b, _mm256_and_si256(_mm256_sll_epi16(c, _mm_cvtsi32_si128(
        16 - f->bits)), _mm256_set1_epi16((short)0x8000)));
}
static __attribute__((noinline)) void hg_s8_fmt_check(hg_s8_fmt_t *out, const float *tab,
                                                      int bits) {
    int half = 1 << (bits - 1);
    hg_s8_fmt_t f, g;
    uint32_t t[256];
    memset(&f, 0, sizeof f);
    f.tab = tab;
    f.bits = bits;
    memcpy(t, tab, sizeof(float) << bits);
    for (int m = bits == 4 ? 1 : 2; m <= (bits == 4 ? 1 : 3); m++) {
        int k = 0, bias = (1 << (bits - 2 - m)) - 1, ok = 1, lo = 255, ln = 255, hi = 0;
        g = f;
        g.m = m;
        g.k = half;
        for (; k < half; k += 8) {
            uint32_t v[8];
            __m256i c = _mm256_add_epi32(_mm256_set1_epi32(k),
                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            _mm256_storeu_si256((__m256i *)(void *)v, hg_s8_fast(c, &g, -bias - m, f.sp[0],
                                                                  f.sp[1]));
            int e = 0;
            while (e < 8 && v[e] == t[k + e]) e++;
            if (e < 8) {
                k += e;
                break;
            }
        }
        for (int c = 0; c < half; c++) {
            ok &= t[c + half] == (t[c] | 0x80000000u) && t[c] >> 31 == 0u;  // both signs
            if (c >= k)  // an inf/NaN code among the top 16 (4-bit tables: none)
                ok &= (t[c] & 0x7f800000u) == 0x7f800000u && c >= half - 16 && bits > 4;
            else if (c > 0) {
                lo = (int)(t[c] >> 23) < lo ? (int)(t[c] >> 23) : lo;
                ln = c >= 1 << m && (int)(t[c] >> 23) < ln ? (int)(t[c] >> 23) : ln;
                hi = (int)(t[c] >> 23) > hi ? (int)(t[c] >> 23) : hi;
            }
        }
        if (ok && k > f.k) {
            f = g;
            f.k = k;
            f.elo = 128 - lo;
            f.eln = 128 - ln;
            f.ehi = 381 - hi;
            if (bits > 4) {
                f.sp[0] = _mm256_loadu_si256((const __m256i *)(const void *)(t + half - 16));
                f.sp[1] = _mm256_loadu_si256((const __m256i *)(const void *)(t + half - 8));
            } else {
                __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)t);
                __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(t + 8));
                f.t16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(
                    _mm256_srli_epi32(a, 16), _mm256_srli_epi32(b, 16)), 0xd8);
                f.nz = _mm256_cmpgt_epi16(_mm256_and_si256(f.t16, _mm256_set1_epi16(0x7fff)),
                                          _mm256_setzero_si256());
            }
        }
    }
    for (int h = 0; h < 2; h++)
        f.bp[h] = _mm256_blendv_epi8(f.sp[h], _mm256_set1_epi32(0x7fc00000),
                                     _mm256_cmpgt_epi32(f.sp[h], _mm256_set1_epi32(0x7f800000)));
    if (bits > 4 && f.k) {
        uint16_t v[6][16];  // ex, mb, nz, hi per output
        f.top0 = 1;
        for (int c = 0; c < 16; c++) {
            uint32_t top = t[half - 8 + (c & 7)], sub = (c & 7) && (c & 7) < 1 << f.m;
            uint32_t nan = (top & 0x7fffffffu) > 0x7f800000u, hm = (top >> 13) & 0x3ffu;
            v[0][c] = (uint16_t)(sub ? t[c & 7] >> 23 : 0u);
            v[1][c] = (uint16_t)(sub ? (t[c & 7] >> 16) & 0x7fu : 0u);
            v[2][c] = (uint16_t)(sub ? 0xffffu : 0u);
            v[3][c] = (uint16_t)(top >> 16);
            v[4][c] = (uint16_t)(nan ? 0x7fc0u : top >> 16);
            v[5][c] = (uint16_t)(nan ? 0x7c00u | (hm ? hm : 1u) : 0x7c00u);
            f.top0 &= half - 8 + (c & 7) < f.k || (top & 0xffffu) == 0u;
        }
        __m256i *to[6] = {&f.ex16, &f.mb16, &f.nz16, &f.hi16[0], &f.hi16[1], &f.hi16[2]};
        for (int h = 0; h < 6; h++) *to[h] = _mm256_loadu_si256((const __m256i *)(const void *)v[h]);
    }
#ifdef HG_S8Z
    hg_s8z_check(&f, t, bits);
#endif
    *out = f;
}
// e when s = 2^(e-127) keeps every arithmetic value of the table normal, else 0.
static inline int hg_s8_exp(float s, const hg_s8_fmt_t *f) {
    uint32_t b;
    memcpy(&b, &s, 4);
    int e = (int)(b >> 23);
    return f->k > 0 && (b & 0x807fffffu) == 0u && e >= f->elo && e <= f->ehi ? e : 0;
}
static inline __m256 hg_s8_t4(__m256 lo, __m256 hi, const uint8_t *p) {
    uint32_t w;
    memcpy(&w, p, 4);
    __m256i ix = _mm256_srlv_epi32(_mm256_set1_epi32((int)w),
                                   _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, ix), _mm256_permutevar8x32_ps(hi, ix),
                            _mm256_castsi256_ps(_mm256_slli_epi32(ix, 28)));
}
static inline __attribute__((always_inline)) __m256 hg_s8_pick(const float *tab,
                                                               const uint8_t *p, int bits) {
    uint64_t c, m = (1u << bits) - 1u;
    uint32_t w;
    uint16_t h;
    memcpy(&w, p, 4);
    if (bits == 8) memcpy(&c, p, 8);
    else c = w | (bits == 6 ? (memcpy(&h, p + 4, 2), (uint64_t)h << 32) : 0u);
    return _mm256_setr_ps(tab[c & m], tab[(c >> bits) & m], tab[(c >> 2 * bits) & m],
                          tab[(c >> 3 * bits) & m], tab[(c >> 4 * bits) & m],
                          tab[(c >> 5 * bits) & m], tab[(c >> 6 * bits) & m],
                          tab[(c >> 7 * bits) & m]);
}
static inline __m256i hg_s8_scale(__m256 t, float s) {
    __m256 v = _mm256_mul_ps(t, _mm256_set1_ps(s));
    return _mm256_castps_si256(_mm256_blendv_ps(v, t, _mm256_cmp_ps(t, t, _CMP_UNORD_Q)));
}
static inline void hg_s8_st32(void *d, __m256i v, int big) {
    if (big && ((uintptr_t)d & 31u) == 0u) _mm256_stream_si256((__m256i *)d, v);
    else _mm256_storeu_si256((__m256i *)d, v);
}
static inline void hg_s8_st16(void *d, __m128i v, int big) {
    if (big && ((uintptr_t)d & 15u) == 0u) _mm_stream_si128((__m128i *)d, v);
    else _mm_storeu_si128((__m128i *)d, v);
}
static inline __m256i hg_s8_cv(__m256i b, int conv) {
    __m256i q = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(0x8000)), r = b;
    if (conv == 1) {
        __m256i odd = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
        r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)),
                                               odd), 16);
        q = _mm256_or_si256(q, _mm256_set1_epi32(0x7fc0));
    }
#if defined(__F16C__)
    if (conv == 2) {
        r = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(_mm256_castsi256_ps(b),
                                                  _MM_FROUND_TO_NEAREST_INT));
        __m256i m = _mm256_and_si256(_mm256_srli_epi32(b, 13), _mm256_set1_epi32(0x3ff));
        m = _mm256_or_si256(m, _mm256_and_si256(_mm256_cmpeq_epi32(m, _mm256_setzero_si256()),
                                                _mm256_set1_epi32(1)));
        q = _mm256_or_si256(_mm256_or_si256(q, _mm256_set1_epi32(0x7c00)), m);
    }
#endif
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7fffffff)),
                                     _mm256_set1_epi32(0x7f800000));
    return conv ? _mm256_blendv_epi8(r, q, nan) : b;
}
static inline void hg_s8_sh32(uint16_t *d, __m256i tl, __m256i th, const uint8_t *p, int big) {
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)p), f = _mm_set1_epi8(15);
    __m128i lo = _mm_and_si128(c, f), hi = _mm_and_si128(_mm_srli_epi16(c, 4), f);
    __m256i ix = _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
    __m256i l = _mm256_shuffle_epi8(tl, ix), h = _mm256_shuffle_epi8(th, ix);
    __m256i a = _mm256_unpacklo_epi8(l, h), b = _mm256_unpackhi_epi8(l, h);
    hg_s8_st32(d, _mm256_permute2x128_si256(a, b, 0x20), big);
    hg_s8_st32(d + 16, _mm256_permute2x128_si256(a, b, 0x31), big);
}
static inline __attribute__((always_inline)) void hg_s8_run(
        void *restrict d, const float *tab, const uint8_t *restrict p, int bits, float s,
        uint32_t g, int big, int conv, hg_s8_fmt_t *f) {
    uint32_t j = 0;
    // Codes 2 KiB ahead: runs of single MX blocks read so few bytes per call that the hardware
    // prefetchers fell behind once non-temporal stores took the memory bus (loads stalled).
    _mm_prefetch((const char *)p + 2048, _MM_HINT_T0);
    __m256 lo = _mm256_loadu_ps(tab), hi = bits == 4 ? _mm256_loadu_ps(tab + 8) : lo;
    int e = 0;
    if (f && (bits != 4 || (conv == 1 && g >= 4u))) {
        if (f->tab != tab || f->bits != bits) hg_s8_fmt_check(f, tab, bits);
        e = hg_s8_exp(s, f);
    }
#ifdef HG_S8Z
    // 6-/8-bit runs of whole 32-code blocks: a block per 512-bit register (host_scale8).
    if (f && bits != 4 && conv != 2) j = hg_s8z_run(d, p, bits, s, g, big, conv, f);
    if (j == g) return;
#endif
    if (bits == 4 && g >= 4u) {
        __m256i t;
        if (e) {
            t = _mm256_add_epi16(f->t16, _mm256_and_si256(
                f->nz, _mm256_set1_epi16((short)((e - 127) << 7))));
        } else {
            __m256i a = hg_s8_cv(hg_s8_scale(lo, s), conv), b = hg_s8_cv(hg_s8_scale(hi, s), conv);
            for (; conv == 0 && j < g; j++)
                hg_s8_st32((float *)d + 8u * j, _mm256_castps_si256(hg_s8_t4(
                    _mm256_castsi256_ps(a), _mm256_castsi256_ps(b), p + 4u * j)), big);
            if (conv == 0) return;
            t = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
        }
        t = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(t, _mm256_setr_epi8(
            0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
            0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15)), 0xd8);
        for (; j + 4u <= g; j += 4u)
            hg_s8_sh32((uint16_t *)d + 8u * j, _mm256_permute2x128_si256(t, t, 0x00),
                       _mm256_permute2x128_si256(t, t, 0x11), p + 4u * j, big);
    } else if (e) {
        hg_s8_fmt_t h = *f;
        __m256i sp0 = conv == 1 ? h.bp[0] : h.sp[0], sp1 = conv == 1 ? h.bp[1] : h.sp[1];
        int x = e - 127 - ((1 << (bits - 2 - h.m)) - 1) - h.m;
        // 16 codes at a time in 16-bit lanes: f16 where no normal code's value is subnormal
        // (the exponent offset in 6 bits), f32 as bf16 widened (exact: values of at most four
        // significant bits) when the top entries are.
        int w = conv == 2 ? 10 : 7, ob = conv == 2 ? 15 : 127;
        if (bits > 4 && h.k >= (1 << (bits - 1)) - 8 && (conv != 0 || h.top0)
                && (conv != 2 || (e >= h.eln + 112 && x + h.m + ob < 64))) {
            __m256i x16 = _mm256_set1_epi16((short)((x + h.m + ob) << w));
            __m256i lo16 = _mm256_and_si256(h.nz16, _mm256_or_si256(
                h.mb16, _mm256_sll_epi16(_mm256_add_epi16(
                    h.ex16, _mm256_set1_epi16((short)(e - 254 + ob))), _mm_cvtsi32_si128(w))));
#if defined(__F16C__)
            // f16 (asked for only with F16C): s * T(c) rounded as the oracle rounds it.
            if (conv == 2)
                lo16 = _mm256_and_si256(h.nz16, _mm256_broadcastsi128_si256(_mm256_cvtps_ph(
                    _mm256_mul_ps(lo, _mm256_set1_ps(s)), _MM_FROUND_TO_NEAREST_INT)));
#endif
            for (; j + 2u <= g; j += 2u) {
                __m256i v = hg_s8_b16(hg_s8_codes16(p + (size_t)bits * j, bits), &h, x16, lo16,
                                      h.hi16[conv], w);
                if (conv == 0) {
                    __m256i a = _mm256_unpacklo_epi16(_mm256_setzero_si256(), v);
                    __m256i b = _mm256_unpackhi_epi16(_mm256_setzero_si256(), v);
                    hg_s8_st32((float *)d + 8u * j, _mm256_permute2x128_si256(a, b, 0x20), big);
                    hg_s8_st32((float *)d + 8u * j + 8, _mm256_permute2x128_si256(a, b, 0x31), big);
                } else {
                    hg_s8_st32((uint16_t *)d + 8u * j, v, big);
                }
            }
        }
        for (; conv == 0 && j < g; j++)
            hg_s8_st32((float *)d + 8u * j, hg_s8_fast(hg_s8_codes(p + (size_t)bits * j, bits),
                                                       &h, x, sp0, sp1), big);
        for (; j + 2u <= g; j += 2u) {
            __m256i v = hg_s8_fast(hg_s8_codes(p + (size_t)bits * j, bits), &h, x, sp0, sp1);
            __m256i w = hg_s8_fast(hg_s8_codes(p + (size_t)bits * (j + 1u), bits), &h, x, sp0,
                                   sp1);
            v = conv == 1 ? _mm256_srli_epi32(v, 16) : hg_s8_cv(v, conv);  // exact: no rounding
            w = conv == 1 ? _mm256_srli_epi32(w, 16) : hg_s8_cv(w, conv);
            hg_s8_st32((uint16_t *)d + 8u * j, _mm256_permute4x64_epi64(
                _mm256_packus_epi32(v, w), 0xd8), big);
        }
    }
    for (; j < g; j++) {
        const uint8_t *q = p + (size_t)bits * j;
        __m256i v = hg_s8_cv(hg_s8_scale(bits == 4 ? hg_s8_t4(lo, hi, q)
                                         : hg_s8_pick(tab, q, bits), s), conv);
        if (conv == 0) hg_s8_st32((float *)d + 8u * j, v, big);
        else hg_s8_st16((uint16_t *)d + 8u * j, _mm_packus_epi32(
            _mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)), big);
    }
}
// AFFINE8: sixteen (then eight) codes widened to i32 lanes (sign-extended when sx), minus z,
// converted (to nearest even, as C's conversion), times s, then SCALE8's output conversion and
// stores: no table, so 8-bit affine codes (Q8_0) load nothing but their own bytes. With s
// finite no product is NaN (the codes' values are finite), so the conversion skips the NaN
// rules: f16 is F16C's rounding alone, bf16 the helper's rounding add.
static inline __m256i hg_a8_bf16(__m256i b) {
    return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)),
        _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1))), 16);
}
static inline __attribute__((always_inline)) void hg_a8_run(
        void *restrict d, const uint8_t *restrict p, uint32_t sx, int32_t z, float s,
        uint32_t g, int big, int conv) {
    __m256i vz = _mm256_set1_epi32(z);
    __m256 vs = _mm256_set1_ps(s);
    uint32_t j = 0, sb;
    memcpy(&sb, &s, 4);
    int fin = (sb & 0x7f800000u) != 0x7f800000u;
    // A normal (or zero) s makes every nonzero product normal: AVX512-BF16's conversion,
    // which treats subnormal inputs as zero, then rounds every product as the helper does.
    int nrm = fin && ((sb & 0x7f800000u) != 0u || (sb & 0x7fffffffu) == 0u);
    (void)nrm;
    _mm_prefetch((const char *)p + 2048, _MM_HINT_T0);
#define HG_A8(c) _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32( \
        sx ? _mm256_cvtepi8_epi32(c) : _mm256_cvtepu8_epi32(c), vz)), vs)
    for (; j + 2u <= g; j += 2u) {
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(p + 8u * j));
        __m256 a = HG_A8(c), b = HG_A8(_mm_unpackhi_epi64(c, c));
        __m256i x = _mm256_castps_si256(a), y = _mm256_castps_si256(b);
        if (conv == 0) {
            hg_s8_st32((float *)d + 8u * j, x, big);
            hg_s8_st32((float *)d + 8u * j + 8, y, big);
            continue;
        }
#if defined(__F16C__)
        if (conv == 2 && fin) {
            hg_s8_st32((uint16_t *)d + 8u * j, _mm256_set_m128i(
                _mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT),
                _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT)), big);
            continue;
        }
#endif
#if defined(__AVX512BF16__) && defined(__AVX512VL__)
        if (conv == 1 && nrm) {
            hg_s8_st32((uint16_t *)d + 8u * j, _mm256_set_m128i((__m128i)_mm256_cvtneps_pbh(b),
                                                                (__m128i)_mm256_cvtneps_pbh(a)), big);
            continue;
        }
#endif
        x = fin ? hg_a8_bf16(x) : hg_s8_cv(x, conv);
        y = fin ? hg_a8_bf16(y) : hg_s8_cv(y, conv);
        hg_s8_st32((uint16_t *)d + 8u * j, _mm256_permute4x64_epi64(
            _mm256_packus_epi32(x, y), 0xd8), big);
    }
    for (; j < g; j++) {
        __m256i v = _mm256_castps_si256(HG_A8(_mm_loadl_epi64(
            (const __m128i *)(const void *)(p + 8u * j))));
        if (conv == 0) {
            hg_s8_st32((float *)d + 8u * j, v, big);
            continue;
        }
        v = hg_s8_cv(v, conv);
        hg_s8_st16((uint16_t *)d + 8u * j, _mm_packus_epi32(
            _mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)), big);
    }
#undef HG_A8
}
#else
typedef struct { const float *tab; } hg_s8_fmt_t;
static inline void hg_s8_fence(void) {}
#endif
""" + MX_HELPER
# The SCALE8_<T> helper's conversion per (dst type, T).
_SCALE8_STORES = {("f32", "F32"): 0, ("u16", "BF16"): 1, ("u16", "F16"): 2}

class HostCRenderer(CStyleRenderer):
    """C11 for the host compiler: one work item per loop iteration, OpenMP across cores."""

    dialect = "c"
    extension = "c"
    prelude = _HOST_PRELUDE
    soft_f16 = True
    kernel_prefix = "static inline void"
    function_prefix = "static inline"
    buffer_fmt = "{const}{type} *restrict {name}"
    index_expr = ("hg_gid0", "hg_gid1", "hg_gid2")
    type_map: ClassVar[dict[str, str]] = {
        "u32": "uint32_t", "i32": "int32_t", "f32": "float", "bool": "_Bool", "u8": "uint8_t",
        "i8": "int8_t", "u16": "uint16_t", "i16": "int16_t", "f16": "uint16_t",
        "bf16": "uint16_t", "f64": "double"}
    f64_helpers = HARDWARE_F64["c"]
    op_map: ClassVar[dict[str, str]] = {
        **_C_OPS, "AS_F32": "hg_as_f32(", "AS_U32": "hg_as_u32(", "UMIN": "hg_umin(",
        "UMAX": "hg_umax(", "IMIN": "hg_imin(", "IMAX": "hg_imax(", "UMULHI": "hg_umulhi("}
    intrinsic_helpers: ClassVar[dict[str, str]] = {
        "UMULHI": "static inline uint32_t hg_umulhi(uint32_t a, uint32_t b) {\n"
                  "    return (uint32_t)(((uint64_t)a * b) >> 32);\n}",
        # GCC has no atomic min/max builtins: a compare-exchange loop (returns the old word).
        "ATOMIC_MIN": "static inline uint32_t hg_atomic_umin(uint32_t *p, uint32_t v) {\n"
                      "    uint32_t old = __atomic_load_n(p, __ATOMIC_SEQ_CST);\n"
                      "    while (v < old && !__atomic_compare_exchange_n(p, &old, v, 0,\n"
                      "           __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}\n    return old;\n}",
        "ATOMIC_MAX": "static inline uint32_t hg_atomic_umax(uint32_t *p, uint32_t v) {\n"
                      "    uint32_t old = __atomic_load_n(p, __ATOMIC_SEQ_CST);\n"
                      "    while (v > old && !__atomic_compare_exchange_n(p, &old, v, 0,\n"
                      "           __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}\n    return old;\n}",
        "ATOMIC_CAS": "static inline uint32_t hg_atomic_cas(uint32_t *p, uint32_t e, uint32_t v) {\n"
                      "    __atomic_compare_exchange_n(p, &e, v, 0, __ATOMIC_SEQ_CST,\n"
                      "                                __ATOMIC_SEQ_CST);\n    return e;\n}",
        **{f"{op}_{t}": _SCALE8_HELPERS for op in ("SCALE8", "MXSCALE8", "NFSCALE8", "HFSCALE8",
                                                    "AFFINE8", "HFAFFINE8") for t in SCALE8_CONV},
        "TRANSPOSE8": T8_HELPER, "ZORDER8": Z8_HELPER, "TRANSPOSE16": T16_HELPER,
        "ZORDER16": Z16_HELPER, "COPY16": C16_HELPER}
    atomic_map: ClassVar[dict[str, str]] = {
        **{op: f"__atomic_{fn}(&{{b}}[{{i}}], {{v}}, __ATOMIC_SEQ_CST)" for op, fn in (
            ("ATOMIC_ADD", "fetch_add"), ("ATOMIC_OR", "fetch_or"), ("ATOMIC_AND", "fetch_and"),
            ("ATOMIC_XOR", "fetch_xor"), ("ATOMIC_XCHG", "exchange_n"))},
        "ATOMIC_MIN": "hg_atomic_umin(&{b}[{i}], {v})", "ATOMIC_MAX": "hg_atomic_umax(&{b}[{i}], {v})",
        "ATOMIC_CAS": "hg_atomic_cas(&{b}[{i}], {e}, {v})"}

    def scale8(self, kernel: KernelDef) -> str:
        types = {p.name: p.dtype for p in kernel.buffers}
        tabs = {name: dtype for name, dtype, _ in kernel.private}

        def vector(m: re.Match[str], conv: str, dst: str, ok: bool, call: str) -> str:
            """The statement as the host call ``call`` (holes {store}: the output
            conversion, {size}: the element size) where AVX2 (and F16C for f16) is, else as
            its loops; the loops alone when ``ok`` is false (a table that is no f32 array,
            codes or scales that are no bytes) or the output is not one SCALE8 writes."""
            store = _SCALE8_STORES.get((types.get(dst, ""), conv))
            if store is None or not ok:
                return expand_scale8(m[0])
            isa = "defined(__AVX2__)" + (" && defined(__F16C__)" if conv == "F16" else "")
            size = "4u" if conv == "F32" else "2u"
            return (f"\n#if {isa}\n{call.format(store=store, size=size)}\n#else\n"
                    f"{expand_scale8(m[0])}\n#endif\n")

        def scaled(m: re.Match[str]) -> str:
            conv, dst, k, tab, data, at, bits, s, big, groups = m.groups()
            return vector(m, conv, dst, "f32" in (types.get(tab), tabs.get(tab))
                          and types.get(data) == "u8",
                          f"hg_s8_run({dst} + ({k}), {tab}, {data} + ({at}), {bits}, {s}, "
                          f"{groups}, hg_big({big}, {{size}}), {{store}}, "
                          f"{'hg_s8_c' if tab in types else 'NULL'});")

        def affine(m: re.Match[str]) -> str:
            conv, dst, k, data, at, sx, z, s, big, groups = m.groups()
            return vector(m, conv, dst, types.get(data) == "u8",
                          f"hg_a8_run({dst} + ({k}), {data} + ({at}), {sx}, {z}, {s}, "
                          f"{groups}, hg_big({big}, {{size}}), {{store}});")

        def mx(m: re.Match[str]) -> str:
            kind, conv, dst, k, tab, data, at, bits, scales, p, total, g, nblk, err = m.groups()
            nf, width = {"MX": (0, ""), "NF": (1, " * 4u"), "HF": (2, " * 2u")}[kind]
            return vector(m, conv, dst, "f32" in (types.get(tab), tabs.get(tab))
                          and types.get(data) == "u8" and types.get(scales) == "u8",
                          f"if (hg_mx_run({dst} + ({k}), {tab}, {data} + ({at}), {bits}, "
                          f"{scales} + ({p}){width}, {g}, {nblk}, hg_big({total}, {{size}}), "
                          f"{{store}}, {'hg_s8_c' if tab in types else 'NULL'}, {nf})) "
                          f"STORE({err}, 0u, 1u);")

        def hfa(m: re.Match[str]) -> str:
            conv, dst, k, data, at, sx, z, scales, p, total, g, nblk, err = m.groups()
            return vector(m, conv, dst, types.get(data) == "u8" and types.get(scales) == "u8",
                          f"if (hg_hfa_run({dst} + ({k}), {data} + ({at}), {sx}, {z}, "
                          f"{scales} + ({p}) * 2u, {g}, {nblk}, hg_big({total}, {{size}}), "
                          f"{{store}})) STORE({err}, 0u, 1u);")

        text = MXSCALE8_CALL.sub(mx, HFAFFINE8_CALL.sub(hfa, kernel.body))
        return AFFINE8_CALL.sub(affine, SCALE8_CALL.sub(scaled, text))

    def block8(self, kernel: KernelDef, text: str) -> str:
        types = {p.name: p.dtype for p in kernel.buffers}

        def vector(m: re.Match[str]) -> str:
            op, dst, di, dn, src, si, sn = m.groups()
            if types.get(dst) != "u32" or types.get(src) != "u32":
                return expand_block8(m[0])
            fn = "hg_t8_u32" if op == "TRANSPOSE8" else "hg_z8_u32"
            return (f"\n#if defined(__AVX2__)\n{fn}({dst}, {di}, {dn}, {src}, {si}, {sn});"
                    f"\n#else\n{expand_block8(m[0])}\n#endif\n")

        def copy(m: re.Match[str]) -> str:
            dst, di, src, si = m.groups()
            if types.get(dst) != types.get(src) or dst not in types:
                return expand_block8(m[0])
            return f"memcpy(&{dst}[{di}], &{src}[{si}], 8 * sizeof {dst}[0]);"

        def t16(m: re.Match[str]) -> str:
            op, dst, di, dn, src, si, sn, total = m.groups()
            if types.get(dst) != "u32" or types.get(src) != "u32":
                return expand_block8(m[0])
            fn = "hg_t16_u32" if op == "TRANSPOSE16" else "hg_z16_u32"
            return (f"\n#if defined(__AVX2__)\n{fn}({dst}, {di}, {dn}, {src}, {si}, {sn}, "
                    f"hg_big({total}, 4u));\n#else\n{expand_block8(m[0])}\n#endif\n")

        def c16(m: re.Match[str]) -> str:
            dst, di, src, si, sj, total = m.groups()
            if types.get(dst) != "u32" or types.get(src) != "u32":
                return expand_block8(m[0])
            return (f"\n#if defined(__AVX2__)\nhg_c16_u32({dst}, {di}, {src}, {si}, {sj}, "
                    f"hg_big({total}, 4u));\n#else\n{expand_block8(m[0])}\n#endif\n")

        text = COPY16_CALL.sub(c16, BLOCK16_CALL.sub(t16, text))
        return BLOCK8_CALL.sub(vector, COPY8_CALL.sub(copy, text))

    def render_entry(self, kernel: KernelDef) -> str:
        unpack = []
        for index, param in enumerate(kernel.buffers):
            decl = self.render_param(param)
            const = "const " if param.access == "r" else ""
            unpack.append(f"    {decl} = ({const}{self.type_map[param.dtype]} *)hg_bufs[{index}];")
        for index, param in enumerate(kernel.scalars):
            value = f"hg_words[{index}]"
            if param.dtype == "f32":
                value = f"hg_as_f32({value})"
            elif param.dtype == "i32":
                value = f"(int32_t){value}"
            unpack.append(f"    {self.render_param(param)} = {value};")
        names, params = ", ".join(p.name for p in kernel.params), self.render_params(kernel)
        if kernel.shared or "BARRIER(" in kernel.body:
            # Work items run one after another here: a barrier splits the body into regions,
            # each a loop over the group's items (host_groups).
            text = expand_block8(expand_scale8(re.sub(r"//[^\n]*", "", kernel.body)))
            return render_group_entry(kernel, text, self.translate, params, "\n".join(unpack),
                                      lambda t: self.type_map[t])
        # SCALE8 kernels: a chunk's table checks (hg_s8_fmt_t), passed to its items.
        s8 = bool(SCALE8_CALL.search(kernel.body) or MXSCALE8_CALL.search(kernel.body))
        item_params = "uint32_t hg_gid0, uint32_t hg_gid1, uint32_t hg_gid2, " + \
            ("hg_s8_fmt_t *restrict hg_s8_c, " if s8 else "")
        item = (f"static inline void {kernel.name}_item({item_params}{params}) "
                f"{{\n{self.body(kernel)}\n}}")
        # Non-temporal stores are weakly ordered: drained before the chunk counts as done.
        fence = "\n    hg_s8_fence();" if s8 or AFFINE8_CALL.search(kernel.body) else ""
        if BLOCK16_CALL.search(kernel.body) or COPY16_CALL.search(kernel.body):
            fence += "\n    hg_t16_fence();"
        init = "\n    hg_s8_fmt_t hg_s8_c;\n    hg_s8_c.tab = NULL;" if s8 else ""
        size = 128 if LONG_ITEMS in kernel.tags else 4096
        entry = _HOST_ENTRY.format(name=kernel.name, unpack="\n".join(unpack), size=size,
                                   params=params and ", " + params, names=names and ", " + names,
                                   args=("&hg_s8_c, " if s8 else "") + names, fence=fence,
                                   chunk_init=init)
        return f"{item}\n\n{entry}"
