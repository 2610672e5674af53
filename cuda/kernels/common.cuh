// common.cuh: definitions shared by every lgflow kernel. The Go side
// (package cuda) concatenates common.cuh, elementwise.cu, reduce.cu,
// index.cu, fused.cu, gine.cu, dit.cu, attention.cu and deepset.cu, in that
// order (sourceFiles in kernels.go), into one NVRTC program. No header of
// the CUDA toolkit is included: NVRTC provides the device math functions,
// atomics and warp intrinsics used here.
//
// Every kernel is a function template over the element type T (float or
// double); the Go side instantiates it through NVRTC name expressions such
// as "unary<float>".

#define MAXD 8   // dimensions of a strided layout after coalescing (layout.go: maxDims)
#define MAXOPS 4 // operands of a strided layout (layout.go: maxOps)

// Lay describes the iteration over n elements of a shape of nd dimensions
// (dims[0] outermost) for up to MAXOPS operands: element i, with row-major
// multi-index c, is at offset sum_j c[j]*str[k][j] of operand k. It mirrors
// the Go struct layout in layout.go byte for byte.
struct Lay {
    long long n;
    int nd;
    int pad_;
    long long dims[MAXD];
    long long str[MAXOPS][MAXD];
};

// lay_offsets sets off[k] to operand k's offset of element i of L. Indices
// that fit in 32 bits use 32-bit division.
template <int NOP>
__device__ __forceinline__ void lay_offsets(const Lay& L, long long i, long long (&off)[NOP]) {
#pragma unroll
    for (int k = 0; k < NOP; k++) off[k] = 0;
    if (L.n <= 0x7fffffffLL) {
        unsigned int r = (unsigned int)i;
#pragma unroll
        for (int j = MAXD - 1; j >= 1; j--) {
            if (j < L.nd) {
                unsigned int d = (unsigned int)L.dims[j];
                unsigned int q = r / d;
                unsigned int c = r - q * d;
                r = q;
#pragma unroll
                for (int k = 0; k < NOP; k++) off[k] += (long long)c * L.str[k][j];
            }
        }
#pragma unroll
        for (int k = 0; k < NOP; k++) off[k] += (long long)r * L.str[k][0];
    } else {
        long long r = i;
#pragma unroll
        for (int j = MAXD - 1; j >= 1; j--) {
            if (j < L.nd) {
                long long d = L.dims[j];
                long long q = r / d;
                long long c = r - q * d;
                r = q;
#pragma unroll
                for (int k = 0; k < NOP; k++) off[k] += c * L.str[k][j];
            }
        }
#pragma unroll
        for (int k = 0; k < NOP; k++) off[k] += r * L.str[k][0];
    }
}

// Grid-stride loop over [0, n).
#define GRID_LOOP(i, n)                                                      \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;     \
         i < (n); i += (long long)blockDim.x * gridDim.x)

// ---- math by type ----

__device__ __forceinline__ float  m_exp(float x)   { return expf(x); }
__device__ __forceinline__ double m_exp(double x)  { return exp(x); }
__device__ __forceinline__ float  m_log(float x)   { return logf(x); }
__device__ __forceinline__ double m_log(double x)  { return log(x); }
__device__ __forceinline__ float  m_sqrt(float x)  { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float  m_rsqrt(float x) { return 1.0f / sqrtf(x); }
__device__ __forceinline__ double m_rsqrt(double x){ return 1.0 / sqrt(x); }
__device__ __forceinline__ float  m_tanh(float x)  { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float  m_erf(float x)   { return erff(x); }
__device__ __forceinline__ double m_erf(double x)  { return erf(x); }
__device__ __forceinline__ float  m_pow(float x, float p)   { return powf(x, p); }
__device__ __forceinline__ double m_pow(double x, double p) { return pow(x, p); }
__device__ __forceinline__ float  m_abs(float x)   { return fabsf(x); }
__device__ __forceinline__ double m_abs(double x)  { return fabs(x); }

__device__ __forceinline__ double d_inf() { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ double d_nan() { return __longlong_as_double(0x7ff8000000000000LL); }
__device__ __forceinline__ bool d_finite(double x) { return x == x && x != d_inf() && x != -d_inf(); }

// ---- block reductions (blockDim.x a multiple of 32, at most 1024) ----

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// block_sum returns the sum of v over the block to every thread. sh holds
// 32 doubles of shared memory.
__device__ __forceinline__ double block_sum(double v, double* sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    if (w == 0) {
        int nw = (blockDim.x + 31) >> 5;
        v = lane < nw ? sh[lane] : 0.0;
        v = warp_sum(v);
        if (lane == 0) sh[0] = v;
    }
    __syncthreads();
    return sh[0];
}

// row_stats sets mu and rs to the mean and 1/sqrt(variance + eps) of the
// row xr of d elements, in double (two passes), for every thread of the
// block, and writes them rounded to T into mean[r] and rstd[r] where those
// are not null. sh holds 32 doubles of shared memory.
template <typename T>
__device__ void row_stats(const T* xr, long long d, double eps, double* sh, T* mean, T* rstd,
                          long long r, double* mu, double* rs) {
    double s = 0.0;
    for (long long i = threadIdx.x; i < d; i += blockDim.x) s += (double)xr[i];
    double m = block_sum(s, sh) / (double)d;
    double v = 0.0;
    for (long long i = threadIdx.x; i < d; i += blockDim.x) {
        double c = (double)xr[i] - m;
        v += c * c;
    }
    double q = 1.0 / sqrt(block_sum(v, sh) / (double)d + eps);
    if (threadIdx.x == 0) {
        if (mean != 0) mean[r] = (T)m;
        if (rstd != 0) rstd[r] = (T)q;
    }
    *mu = m;
    *rs = q;
}

// max_cnt combines running (maximum of the non-NaN values, count of non-NaN
// values) pairs.
__device__ __forceinline__ void max_cnt_combine(double& m, double& c, double m2, double c2) {
    if (m2 > m) m = m2;
    c += c2;
}

__device__ __forceinline__ void warp_max_cnt(double& m, double& c) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        double m2 = __shfl_xor_sync(0xffffffffu, m, o);
        double c2 = __shfl_xor_sync(0xffffffffu, c, o);
        max_cnt_combine(m, c, m2, c2);
    }
}

// block_max_cnt reduces (max, count) pairs over the block and returns the
// result to every thread. sh holds 64 doubles of shared memory.
__device__ __forceinline__ void block_max_cnt(double& m, double& c, double* sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    warp_max_cnt(m, c);
    __syncthreads();
    if (lane == 0) { sh[w] = m; sh[32 + w] = c; }
    __syncthreads();
    if (w == 0) {
        int nw = (blockDim.x + 31) >> 5;
        m = lane < nw ? sh[lane] : -d_inf();
        c = lane < nw ? sh[32 + lane] : 0.0;
        warp_max_cnt(m, c);
        if (lane == 0) { sh[0] = m; sh[32] = c; }
    }
    __syncthreads();
    m = sh[0];
    c = sh[32];
}

// nan_max is max(a, b) that propagates NaN, like Go's built-in max.
__device__ __forceinline__ double nan_max(double a, double b) {
    if (a != a) return a;
    if (b != b || b > a) return b;
    return a;
}

__device__ __forceinline__ double block_nan_max(double v, double* sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    if (w == 0) {
        int nw = (blockDim.x + 31) >> 5;
        v = lane < nw ? sh[lane] : 0.0;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (lane == 0) sh[0] = v;
    }
    __syncthreads();
    return sh[0];
}
