#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

#define store_kpool(hg_i, hg_v) (kpool[(hg_i)] = (signed char)((hg_v)))
#define store_vpool(hg_i, hg_v) (vpool[(hg_i)] = (signed char)((hg_v)))
#define store_kscales(hg_i, hg_v) (kscales[(hg_i)] = (float)((hg_v)))
#define store_vscales(hg_i, hg_v) (vscales[(hg_i)] = (float)((hg_v)))
#define load_kpart(hg_i) (kpart[(hg_i)])
#define load_vpart(hg_i) (vpart[(hg_i)])
#define load_ksrc(hg_i) (ksrc[(hg_i)])
#define load_vsrc(hg_i) (vsrc[(hg_i)])
#define load_slots(hg_i) (slots[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) kv_q8_scatter_f32(signed char* __restrict__ kpool, signed char* __restrict__ vpool, float* __restrict__ kscales, float* __restrict__ vscales, const unsigned int* __restrict__ kpart, const unsigned int* __restrict__ vpart, const float* __restrict__ ksrc, const float* __restrict__ vsrc, const unsigned int* __restrict__ slots, unsigned int n, unsigned int lanes, unsigned int row, unsigned int num_slots) {
    unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || lanes == 0u || lanes > 4096u || row == 0u || row > 0xFFFFEFFFu) return;
    unsigned int t = i / lanes;
    if (t >= n / lanes) return;
    unsigned int lane = i - t * lanes;
    unsigned int slot = load_slots(t);
    if (slot >= num_slots) return;
    unsigned int from = t * row;
    unsigned int to = slot * row;
    {
        unsigned int amax = 0u;
        if (lanes == 1u) {
            for (unsigned int w = 0u; w < row; w += 1u) {
                unsigned int a = __float_as_uint(load_ksrc(from + w)) & 0x7fffffffu;
                if (a < 0x7f800000u) amax = max(amax, a);
            }
        } else {
            for (unsigned int j = 0u; j < lanes; j++) amax = max(amax, load_kpart(t * lanes + j));
        }
        int e = -126;
        if (amax >= 0x00800000u) {
            e = (int)(amax >> 23u) - 133;
            e = max(e, -126);
            if (__uint_as_float(amax) * __uint_as_float((unsigned int)(127 - e) << 23u) >= 127.5f) e = e + 1;
        }
        float inv = __uint_as_float((unsigned int)(127 - e) << 23u);
        if (lane == 0u) store_kscales(slot, __uint_as_float((unsigned int)(127 + e) << 23u));
        if (lanes == 1u) {
            for (unsigned int w = 0u; w < row; w++) {
                float v = load_ksrc(from + w);
                unsigned int a = __float_as_uint(v) & 0x7fffffffu;
                int q = 0;
                if (a == 0x7f800000u) {
                    q = (__float_as_uint(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = min(max((int)(floorf(v * inv + 0.5f)), -127), 127);
                }
                store_kpool(to + w, q);
            }
        } else {
            for (unsigned int w = lane; w < row; w += lanes) {
                float v = load_ksrc(from + w);
                unsigned int a = __float_as_uint(v) & 0x7fffffffu;
                int q = 0;
                if (a == 0x7f800000u) {
                    q = (__float_as_uint(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = min(max((int)(floorf(v * inv + 0.5f)), -127), 127);
                }
                store_kpool(to + w, q);
            }
        }
    }
    {
        unsigned int amax = 0u;
        if (lanes == 1u) {
            for (unsigned int w = 0u; w < row; w += 1u) {
                unsigned int a = __float_as_uint(load_vsrc(from + w)) & 0x7fffffffu;
                if (a < 0x7f800000u) amax = max(amax, a);
            }
        } else {
            for (unsigned int j = 0u; j < lanes; j++) amax = max(amax, load_vpart(t * lanes + j));
        }
        int e = -126;
        if (amax >= 0x00800000u) {
            e = (int)(amax >> 23u) - 133;
            e = max(e, -126);
            if (__uint_as_float(amax) * __uint_as_float((unsigned int)(127 - e) << 23u) >= 127.5f) e = e + 1;
        }
        float inv = __uint_as_float((unsigned int)(127 - e) << 23u);
        if (lane == 0u) store_vscales(slot, __uint_as_float((unsigned int)(127 + e) << 23u));
        if (lanes == 1u) {
            for (unsigned int w = 0u; w < row; w++) {
                float v = load_vsrc(from + w);
                unsigned int a = __float_as_uint(v) & 0x7fffffffu;
                int q = 0;
                if (a == 0x7f800000u) {
                    q = (__float_as_uint(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = min(max((int)(floorf(v * inv + 0.5f)), -127), 127);
                }
                store_vpool(to + w, q);
            }
        } else {
            for (unsigned int w = lane; w < row; w += lanes) {
                float v = load_vsrc(from + w);
                unsigned int a = __float_as_uint(v) & 0x7fffffffu;
                int q = 0;
                if (a == 0x7f800000u) {
                    q = (__float_as_uint(v) >> 31u) != 0u ? -127 : 127;
                } else if (a >= 0x00800000u && a < 0x7f800000u) {
                    q = min(max((int)(floorf(v * inv + 0.5f)), -127), 127);
                }
                store_vpool(to + w, q);
            }
        }
    }
}
