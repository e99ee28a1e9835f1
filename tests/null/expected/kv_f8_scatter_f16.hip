#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#if !defined(__HIPCC_RTC__)
#include <hip/hip_fp16.h>
#endif

#define store_kpool(hg_i, hg_v) (kpool[(hg_i)] = (unsigned char)((hg_v)))
#define store_vpool(hg_i, hg_v) (vpool[(hg_i)] = (unsigned char)((hg_v)))
#define load_ksrc(hg_i) (__half2float(ksrc[(hg_i)]))
#define load_vsrc(hg_i) (__half2float(vsrc[(hg_i)]))
#define load_slots(hg_i) (slots[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) kv_f8_scatter_f16(unsigned char* __restrict__ kpool, unsigned char* __restrict__ vpool, const __half* __restrict__ ksrc, const __half* __restrict__ vsrc, const unsigned int* __restrict__ slots, unsigned int n, unsigned int lanes, unsigned int row, unsigned int num_slots) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    unsigned int t = i / lanes;
    if (t >= n / lanes) return;
    unsigned int lane = i - t * lanes;
    unsigned int slot = load_slots(t);
    if (slot >= num_slots) return;
    unsigned int from = t * row;
    unsigned int to = slot * row;
    for (unsigned int w = lane; w < row; w += lanes) {
        unsigned int b = __float_as_uint(load_ksrc(from + w));
        unsigned int a = b & 0x7fffffffu;
        unsigned int code = 0u;
        if (a > 0x7f800000u) {
            code = 0x7fu;
        } else if (a >= 0x43e00000u) {
            code = 0x7eu;
        } else if (a >= 0x3c800000u) {
            code = ((a + 0x7ffffu + ((a >> 20u) & 1u)) >> 20u) - 960u;
        } else if ((a >> 23u) >= 117u) {
            // Subnormal e4m3: round m * 2^(e - 141) to nearest even (as hg_f32_to_f16 does).
            unsigned int m = (a & 0x7fffffu) | 0x800000u;
            unsigned int s = 141u - (a >> 23u);
            code = (m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s;
        }
        store_kpool(to + w, ((b >> 24u) & 0x80u) | code);
    }
    for (unsigned int w = lane; w < row; w += lanes) {
        unsigned int b = __float_as_uint(load_vsrc(from + w));
        unsigned int a = b & 0x7fffffffu;
        unsigned int code = 0u;
        if (a > 0x7f800000u) {
            code = 0x7fu;
        } else if (a >= 0x43e00000u) {
            code = 0x7eu;
        } else if (a >= 0x3c800000u) {
            code = ((a + 0x7ffffu + ((a >> 20u) & 1u)) >> 20u) - 960u;
        } else if ((a >> 23u) >= 117u) {
            // Subnormal e4m3: round m * 2^(e - 141) to nearest even (as hg_f32_to_f16 does).
            unsigned int m = (a & 0x7fffffu) | 0x800000u;
            unsigned int s = 141u - (a >> 23u);
            code = (m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s;
        }
        store_vpool(to + w, ((b >> 24u) & 0x80u) | code);
    }
}
