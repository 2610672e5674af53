// fused.cu: LayerNorm forward and backward, softmax cross entropy forward and
// backward, and the softmax steps of attention. Rows are contiguous; one
// block per row, statistics accumulated in double.

// layernorm normalises rows of d elements of x into y:
//   y = (x - mean)*rstd*gamma + beta,  rstd = 1/sqrt(var + eps)
// gamma, beta (stride gs, bs) may be null; mean and rstd (one per row) may be
// null (not saved).
template <typename T>
__global__ void layernorm(T* y, T* mean, T* rstd, const T* x, const T* gamma, long long gs,
                          const T* beta, long long bs, long long rows, long long d, double eps) {
    __shared__ double sh[64];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * d;
        T* yr = y + r * d;
        double mu, rs;
        row_stats(xr, d, eps, sh, mean, rstd, r, &mu, &rs);
        T m = (T)mu, sc = (T)rs;
        for (long long i = threadIdx.x; i < d; i += blockDim.x) {
            T h = (xr[i] - m) * sc;
            if (gamma != 0) h *= gamma[i * gs];
            if (beta != 0) h += beta[i * bs];
            yr[i] = h;
        }
    }
}

// layernorm_bwd sets dx from gy, x and the saved mean and rstd:
//   g = gy*gamma,  xhat = (x-mean)*rstd
//   dx = rstd*(g - mean(g) - xhat*mean(g*xhat))
template <typename T>
__global__ void layernorm_bwd(T* dx, const T* gy, const T* x, const T* mean, const T* rstd,
                              const T* gamma, long long gs, long long rows, long long d) {
    __shared__ double sh[64];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * d;
        const T* gr = gy + r * d;
        T* dr = dx + r * d;
        double mu = (double)mean[r], rs = (double)rstd[r];
        double s1 = 0.0, s2 = 0.0;
        for (long long i = threadIdx.x; i < d; i += blockDim.x) {
            double xh = ((double)xr[i] - mu) * rs;
            double g = (double)gr[i];
            if (gamma != 0) g *= (double)gamma[i * gs];
            s1 += g;
            s2 += g * xh;
        }
        s1 = block_sum(s1, sh) / (double)d;
        s2 = block_sum(s2, sh) / (double)d;
        for (long long i = threadIdx.x; i < d; i += blockDim.x) {
            double xh = ((double)xr[i] - mu) * rs;
            double g = (double)gr[i];
            if (gamma != 0) g *= (double)gamma[i * gs];
            dr[i] = (T)(rs * (g - s1 - xh * s2));
        }
    }
}

// layernorm_params accumulates the parameter gradients of a chunk of rows:
// grid (ceil(d/blockDim.x), nchunks); part[c*2d + i] = sum of gy*xhat and
// part[c*2d + d + i] = sum of gy over the rows of chunk c, for column i.
template <typename T>
__global__ void layernorm_params(double* part, const T* gy, const T* x, const T* mean,
                                 const T* rstd, long long rows, long long d, long long chunk) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d) return;
    long long c = blockIdx.y;
    long long r0 = c * chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
    double dg = 0.0, db = 0.0;
    for (long long r = r0; r < r1; r++) {
        double g = (double)gy[r * d + i];
        double xh = ((double)x[r * d + i] - (double)mean[r]) * (double)rstd[r];
        dg += g * xh;
        db += g;
    }
    part[c * 2 * d + i] = dg;
    part[c * 2 * d + d + i] = db;
}

// add_param_grads adds the chunk partials of layernorm_params, summed in
// chunk order, into dgamma (stride gs) and dbeta (stride bs), either of which
// may be null.
template <typename T>
__global__ void add_param_grads(T* dgamma, long long gs, T* dbeta, long long bs, const double* part,
                                long long d, long long nch) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d) return;
    double dg = 0.0, db = 0.0;
    for (long long c = 0; c < nch; c++) {
        dg += part[c * 2 * d + i];
        db += part[c * 2 * d + d + i];
    }
    if (dgamma != 0) dgamma[i * gs] += (T)dg;
    if (dbeta != 0) dbeta[i * bs] += (T)db;
}

// ce_fwd writes the softmax of each row of C logits into prob and the
// row's weighted loss w*(logsumexp(x) - x[t]) into loss[r] (0 where the
// weight is 0; weight may be null for all ones).
template <typename T>
__global__ void ce_fwd(T* prob, const T* x, const int* tgt, const float* weight, long long rows,
                       long long C, double* loss) {
    __shared__ double sh[64];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * C;
        T* pr = prob + r * C;
        double m = -d_inf(), c = 0.0;
        for (long long k = threadIdx.x; k < C; k += blockDim.x) {
            double v = (double)xr[k];
            if (v == v) {
                c += 1.0;
                if (v > m) m = v;
            }
        }
        block_max_cnt(m, c, sh);
        if (c == 0.0 && C > 0) m = d_nan();
        T tm = (T)m;
        double s = 0.0;
        for (long long k = threadIdx.x; k < C; k += blockDim.x) {
            T e = m_exp(xr[k] - tm);
            pr[k] = e;
            s += (double)e;
        }
        s = block_sum(s, sh);
        T inv = (T)(1.0 / s);
        for (long long k = threadIdx.x; k < C; k += blockDim.x) pr[k] *= inv;
        if (threadIdx.x == 0) {
            double w = weight != 0 ? (double)weight[r] : 1.0;
            double l = 0.0;
            if (w != 0.0) l = w * ((double)tm + log(s) - (double)xr[tgt[r]]);
            loss[r] = l;
        }
    }
}

// ce_bwd sets d = scale*w*(prob - onehot(t)) elementwise over rows of C.
template <typename T>
__global__ void ce_bwd(T* d, const T* prob, const int* tgt, const float* weight, long long C,
                       long long n, double scale) {
    GRID_LOOP(e, n) {
        long long r = e / C, k = e - r * C;
        double w = scale;
        if (weight != 0) w *= (double)weight[r];
        if (w == 0.0) {
            d[e] = T(0);
        } else {
            T s = (T)w;
            T v = s * prob[e];
            if (k == tgt[r]) v -= s;
            d[e] = v;
        }
    }
}

// attn_softmax turns each contiguous row of N scores in p (rows of the
// (B, H, N, N) probabilities, already scaled) into softmax probabilities,
// with keys j where mask[b*ms0 + j*ms1] == 0 excluded (mask may be null).
// A row with every key masked becomes 0.
template <typename T>
__global__ void attn_softmax(T* p, const T* mask, long long ms0, long long ms1, long long H,
                             long long N, long long rows) {
    __shared__ double sh[64];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        long long b = r / (H * N);
        T* pr = p + r * N;
        const T* mr = mask != 0 ? mask + b * ms0 : 0;
        double m = -d_inf(), c = 0.0;
        for (long long j = threadIdx.x; j < N; j += blockDim.x) {
            if (mr != 0 && mr[j * ms1] == T(0)) continue;
            double v = (double)pr[j];
            if (v == v) {
                c += 1.0;
                if (v > m) m = v;
            }
        }
        block_max_cnt(m, c, sh);
        if (c == 0.0 || m == -d_inf()) {
            for (long long j = threadIdx.x; j < N; j += blockDim.x) pr[j] = T(0);
            continue;
        }
        T tm = (T)m;
        double s = 0.0;
        for (long long j = threadIdx.x; j < N; j += blockDim.x) {
            T e = (mr != 0 && mr[j * ms1] == T(0)) ? T(0) : m_exp(pr[j] - tm);
            pr[j] = e;
            s += (double)e;
        }
        s = block_sum(s, sh);
        T inv = (T)(1.0 / s);
        for (long long j = threadIdx.x; j < N; j += blockDim.x) pr[j] *= inv;
    }
}

// attn_dsoftmax turns dP into dS = P*(dP - rowsum(dP*P)) in place, for
// contiguous rows of N.
template <typename T>
__global__ void attn_dsoftmax(T* ds, const T* p, long long N, long long rows) {
    __shared__ double sh[64];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        T* dr = ds + r * N;
        const T* pr = p + r * N;
        double s = 0.0;
        for (long long j = threadIdx.x; j < N; j += blockDim.x) s += (double)dr[j] * (double)pr[j];
        T st = (T)block_sum(s, sh);
        for (long long j = threadIdx.x; j < N; j += blockDim.x) dr[j] = pr[j] * (dr[j] - st);
    }
}
