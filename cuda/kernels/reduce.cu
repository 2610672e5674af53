// reduce.cu: reductions along axes, over all elements, argmax and softmax.
// Partial sums are accumulated in double for both element types.

// Reductions: the values of tensor.ReduceOp, plus R_SUMEXP (sum of
// exp(x - ref) for a per-output reference ref, the second pass of a
// log-sum-exp).
enum { R_SUM, R_MEAN, R_MAX, R_LSE, R_MAXABS, R_SUMSQ, R_SUMEXP };

// reduce_finish turns an accumulated (acc, cnt) into the reduction's value:
// a mean divides by K, a max of no non-NaN value among K > 0 is NaN, and a
// log-sum-exp with reference m is m + log(acc) (m itself when not finite).
__device__ __forceinline__ double reduce_finish(int op, double acc, double cnt, long long K, double m) {
    switch (op) {
    case R_MEAN: return acc / (double)K;
    case R_MAX: return (cnt == 0.0 && K > 0) ? d_nan() : acc;
    case R_SUMEXP: return d_finite(m) ? m + log(acc) : m;
    }
    return acc;
}

// reduce_rows reduces contiguous rows of K elements: one block per output.
// L iterates the outputs with operand 0 = d and operand 1 = a (the row
// start). op is R_SUM, R_MEAN, R_MAX or R_LSE.
template <typename T>
__global__ void reduce_rows(int op, T* d, const T* a, long long K, Lay L) {
    __shared__ double sh[64];
    for (long long o = blockIdx.x; o < L.n; o += gridDim.x) {
        long long off[2];
        lay_offsets<2>(L, o, off);
        const T* row = a + off[1];
        double r;
        if (op == R_SUM || op == R_MEAN) {
            double s = 0.0;
            for (long long k = threadIdx.x; k < K; k += blockDim.x) s += (double)row[k];
            s = block_sum(s, sh);
            r = reduce_finish(op, s, 0.0, K, 0.0);
        } else {
            double m = -d_inf(), c = 0.0;
            for (long long k = threadIdx.x; k < K; k += blockDim.x) {
                double v = (double)row[k];
                if (v == v) {
                    c += 1.0;
                    if (v > m) m = v;
                }
            }
            block_max_cnt(m, c, sh);
            m = reduce_finish(R_MAX, m, c, K, 0.0);
            r = m;
            if (op == R_LSE && d_finite(m)) {
                double s = 0.0;
                for (long long k = threadIdx.x; k < K; k += blockDim.x) s += exp((double)row[k] - m);
                s = block_sum(s, sh);
                r = m + log(s);
            }
        }
        if (threadIdx.x == 0) d[off[0]] = (T)r;
    }
}

// reduce_gen reduces along arbitrary axes. Lo iterates the nout outputs
// (operand 0 = d, operand 1 = a), Lr the K reduced positions (operand 0 =
// a). Thread x of the grid handles output x; the reduced range is split in
// S = gridDim.y contiguous parts. With S == 1 the result is finished and
// stored (into outd[o] if outd is not null, else into d); otherwise the
// pair (acc, cnt) goes to part[(s*nout + o)*2 + {0,1}] for reduce_fin. op
// is R_SUM, R_MEAN, R_MAX or R_SUMEXP (which needs ref[o], the maximum).
template <typename T>
__global__ void reduce_gen(int op, T* d, const T* a, Lay Lo, Lay Lr, double* part,
                           double* outd, const double* ref) {
    long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long nout = Lo.n;
    if (o >= nout) return;
    long long off[2];
    lay_offsets<2>(Lo, o, off);
    const T* base = a + off[1];
    long long K = Lr.n, S = gridDim.y, s = blockIdx.y;
    long long chunk = (K + S - 1) / S;
    long long lo = s * chunk, hi = lo + chunk < K ? lo + chunk : K;
    double acc = op == R_MAX ? -d_inf() : 0.0, cnt = 0.0;
    double m = ref != 0 ? ref[o] : 0.0;
    bool skip = op == R_SUMEXP && !d_finite(m);
    for (long long k = lo; k < hi && !skip; k++) {
        long long ro[1];
        lay_offsets<1>(Lr, k, ro);
        double v = (double)base[ro[0]];
        switch (op) {
        case R_MAX:
            if (v == v) {
                cnt += 1.0;
                if (v > acc) acc = v;
            }
            break;
        case R_SUMEXP: acc += exp(v - m); break;
        default: acc += v;
        }
    }
    if (S == 1) {
        double r = reduce_finish(op, acc, cnt, K, m);
        if (outd != 0) outd[o] = r;
        else d[off[0]] = (T)r;
        return;
    }
    part[(s * nout + o) * 2] = acc;
    part[(s * nout + o) * 2 + 1] = cnt;
}

// reduce_fin combines the S partial pairs of reduce_gen for each output
// (thread) and stores the finished value (see reduce_gen for K, outd, ref).
template <typename T>
__global__ void reduce_fin(int op, T* d, Lay Lo, long long K, long long S, const double* part,
                           double* outd, const double* ref) {
    long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long nout = Lo.n;
    if (o >= nout) return;
    double acc = op == R_MAX ? -d_inf() : 0.0, cnt = 0.0;
    for (long long s = 0; s < S; s++) {
        double a = part[(s * nout + o) * 2], c = part[(s * nout + o) * 2 + 1];
        if (op == R_MAX) max_cnt_combine(acc, cnt, a, c);
        else acc += a;
    }
    double m = ref != 0 ? ref[o] : 0.0;
    double r = reduce_finish(op, acc, cnt, K, m);
    if (outd != 0) {
        outd[o] = r;
    } else {
        long long off[1];
        lay_offsets<1>(Lo, o, off);
        d[off[0]] = (T)r;
    }
}

// reduce_all reduces every element of a (operand 0 of L) per block into
// part[blockIdx.x]: R_SUM, R_SUMSQ (sums) or R_MAXABS (max |x|, NaN
// propagating). The host combines the partials.
template <typename T>
__global__ void reduce_all(int op, const T* a, Lay L, double* part) {
    __shared__ double sh[64];
    double acc = 0.0;
    GRID_LOOP(i, L.n) {
        long long off[1];
        lay_offsets<1>(L, i, off);
        double v = (double)a[off[0]];
        if (op == R_MAXABS) acc = nan_max(acc, fabs(v));
        else if (op == R_SUMSQ) acc += v * v;
        else acc += v;
    }
    double r = op == R_MAXABS ? block_nan_max(acc, sh) : block_sum(acc, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = r;
}

// argmax_better reports whether (v2, i2) ranks before (v1, i1): non-NaN
// before NaN, then larger values, then smaller indices. i < 0 marks no
// value.
template <typename T>
__device__ __forceinline__ bool argmax_better(T v1, long long i1, T v2, long long i2) {
    if (i2 < 0) return false;
    if (i1 < 0) return true;
    bool n1 = v1 != v1, n2 = v2 != v2;
    if (n1 != n2) return n1;
    if (n1) return i2 < i1;
    return v2 > v1 || (v2 == v1 && i2 < i1);
}

// argmax_k writes out[o] = the index along the reduced axis (K elements at
// stride ka) of the largest element of output o (L: operand 0 = a), first
// on ties, NaNs last. One warp per output.
template <typename T>
__global__ void argmax_k(const T* a, long long K, long long ka, Lay L, int* out) {
    long long gw = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    long long nw = ((long long)gridDim.x * blockDim.x) >> 5;
    int lane = threadIdx.x & 31;
    for (long long o = gw; o < L.n; o += nw) {
        long long off[1];
        lay_offsets<1>(L, o, off);
        const T* base = a + off[0];
        T best = T(0);
        long long bi = -1;
        for (long long k = lane; k < K; k += 32) {
            T v = base[k * ka];
            if (argmax_better<T>(best, bi, v, k)) { best = v; bi = k; }
        }
#pragma unroll
        for (int s = 16; s > 0; s >>= 1) {
            T v2 = __shfl_xor_sync(0xffffffffu, best, s);
            long long i2 = __shfl_xor_sync(0xffffffffu, bi, s);
            if (argmax_better<T>(best, bi, v2, i2)) { best = v2; bi = i2; }
        }
        if (lane == 0) out[o] = bi < 0 ? 0 : (int)bi;
    }
}

// softmax_rows sets each contiguous row of K elements of d to the softmax
// (log-softmax if lg) of the row of a; one block per row. L iterates the
// rows (operand 0 = d, 1 = a). d may alias a. A row with no finite maximum
// becomes NaN.
template <typename T>
__global__ void softmax_rows(T* d, const T* a, long long K, int lg, Lay L) {
    __shared__ double sh[64];
    for (long long o = blockIdx.x; o < L.n; o += gridDim.x) {
        long long off[2];
        lay_offsets<2>(L, o, off);
        const T* x = a + off[1];
        T* y = d + off[0];
        double m = -d_inf(), c = 0.0;
        for (long long k = threadIdx.x; k < K; k += blockDim.x) {
            double v = (double)x[k];
            if (v == v) {
                c += 1.0;
                if (v > m) m = v;
            }
        }
        block_max_cnt(m, c, sh);
        if (c == 0.0 || m == -d_inf()) {
            for (long long k = threadIdx.x; k < K; k += blockDim.x) y[k] = (T)d_nan();
            continue;
        }
        T tm = (T)m;
        double s = 0.0;
        for (long long k = threadIdx.x; k < K; k += blockDim.x) s += (double)m_exp(x[k] - tm);
        s = block_sum(s, sh);
        if (lg) {
            T lse = tm + (T)log(s);
            for (long long k = threadIdx.x; k < K; k += blockDim.x) y[k] = x[k] - lse;
        } else {
            T inv = (T)(1.0 / s);
            for (long long k = threadIdx.x; k < K; k += blockDim.x) y[k] = m_exp(x[k] - tm) * inv;
        }
    }
}

// softmax_strided is softmax_rows for rows whose K elements are at stride
// kd in d and ka in a: one thread per row.
template <typename T>
__global__ void softmax_strided(T* d, const T* a, long long K, long long kd, long long ka, int lg, Lay L) {
    GRID_LOOP(o, L.n) {
        long long off[2];
        lay_offsets<2>(L, o, off);
        const T* x = a + off[1];
        T* y = d + off[0];
        double m = -d_inf();
        for (long long k = 0; k < K; k++) {
            double v = (double)x[k * ka];
            if (v > m) m = v;
        }
        if (m == -d_inf()) {
            for (long long k = 0; k < K; k++) y[k * kd] = (T)d_nan();
            continue;
        }
        T tm = (T)m;
        double s = 0.0;
        for (long long k = 0; k < K; k++) s += (double)m_exp(x[k * ka] - tm);
        if (lg) {
            T lse = tm + (T)log(s);
            for (long long k = 0; k < K; k++) y[k * kd] = x[k * ka] - lse;
        } else {
            T inv = (T)(1.0 / s);
            for (long long k = 0; k < K; k++) y[k * kd] = m_exp(x[k * ka] - tm) * inv;
        }
    }
}
