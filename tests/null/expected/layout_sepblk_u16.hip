#define store_dst(hg_i, hg_v) (dst[(hg_i)] = (unsigned short)((hg_v)))
#define load_src(hg_i) ((unsigned int)(src[(hg_i)]))
#define load_tx(hg_i) (tx[(hg_i)])
#define load_ty(hg_i) (ty[(hg_i)])
#define load_tz(hg_i) (tz[(hg_i)])

extern "C" __global__ void __launch_bounds__(64) layout_sepblk_u16(unsigned short* __restrict__ dst, const unsigned short* __restrict__ src, const unsigned int* __restrict__ tx, const unsigned int* __restrict__ ty, const unsigned int* __restrict__ tz, unsigned int nx, unsigned int ny, unsigned int nz, unsigned int wpe, unsigned int woff, unsigned int nsrc, unsigned int bx, unsigned int by) {
    unsigned int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * bx;
    unsigned int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * by;
    unsigned int z = (blockIdx.z * blockDim.z + threadIdx.z);
    if (x0 >= nx || y0 >= ny || z >= nz) return;
    unsigned int x1 = x0 + min(nx - x0, bx);
    unsigned int y1 = y0 + min(ny - y0, by);
    unsigned int oz = load_tz(z);
    for (unsigned int y = y0; y < y1; y++) {
        unsigned int oy = oz + load_ty(y);
        unsigned int f = (z * ny + y) * nx;
        if (wpe == 1u) {
            unsigned int b = woff + oy;
            for (unsigned int x = x0; x < x1; x++) {
                unsigned int s = b + load_tx(x);
                store_dst(f + x, s < nsrc ? load_src(s) : 0u);
            }
        } else {
            for (unsigned int x = x0; x < x1; x++) {
                unsigned int s = woff + (oy + load_tx(x)) * wpe;
                unsigned int o = (f + x) * wpe;
                for (unsigned int w = 0u; w < wpe; w++) {
                    unsigned int v = 0u;
                    if (s + w < nsrc && s + w >= s) v = load_src(s + w);
                    store_dst(o + w, v);
                }
            }
        }
    }
}
