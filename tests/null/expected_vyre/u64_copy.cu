#define load_b0_x(hg_i) (b0_x[(hg_i)])
#define load_b1_y(hg_i) (b1_y[(hg_i)])
#define store_b1_y(hg_i, hg_v) (b1_y[(hg_i)] = (unsigned int)((hg_v)))
#define load_b2_z(hg_i) (b2_z[(hg_i)])
#define store_b2_z(hg_i, hg_v) (b2_z[(hg_i)] = (unsigned int)((hg_v)))

extern "C" __global__ void __launch_bounds__(4) vyre_02e8db7f85ed0612(const unsigned int* __restrict__ b0_x, unsigned int* __restrict__ b1_y, unsigned int* __restrict__ b2_z, unsigned int n0, unsigned int n1, unsigned int n2) {
    {
        bool t1 = (blockIdx.x * blockDim.x + threadIdx.x) < n0;
        unsigned int t2w0 = t1 ? load_b0_x(2u * ((blockIdx.x * blockDim.x + threadIdx.x))) : 0u;
        unsigned int t2w1 = t1 ? load_b0_x(2u * ((blockIdx.x * blockDim.x + threadIdx.x)) + 1u) : 0u;
        if ((blockIdx.x * blockDim.x + threadIdx.x) < n1) { store_b1_y(2u * ((blockIdx.x * blockDim.x + threadIdx.x)), t2w0); store_b1_y(2u * ((blockIdx.x * blockDim.x + threadIdx.x)) + 1u, t2w1); }
        bool t3 = (blockIdx.x * blockDim.x + threadIdx.x) < n0;
        unsigned int t4w0 = t3 ? load_b0_x(2u * ((blockIdx.x * blockDim.x + threadIdx.x))) : 0u;
        unsigned int t4w1 = t3 ? load_b0_x(2u * ((blockIdx.x * blockDim.x + threadIdx.x)) + 1u) : 0u;
        bool t5 = (blockIdx.x * blockDim.x + threadIdx.x) < n1;
        unsigned int t6w0 = t5 ? load_b1_y(2u * ((blockIdx.x * blockDim.x + threadIdx.x))) : 0u;
        unsigned int t6w1 = t5 ? load_b1_y(2u * ((blockIdx.x * blockDim.x + threadIdx.x)) + 1u) : 0u;
        bool t7 = (t4w1 < t6w1) || ((t4w1 == t6w1) && (t4w0 < t6w0));
        unsigned int t8 = t7 ? 1u : 0u;
        if ((blockIdx.x * blockDim.x + threadIdx.x) < n2) { store_b2_z((blockIdx.x * blockDim.x + threadIdx.x), t8); }
    }
}
