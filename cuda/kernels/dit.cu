// dit.cu: the diffusion transformer's fused memory-bound ops
// (tensor/fused_dit.go): LayerNorm + adaLN modulation, the gated residual
// and bias + GELU, forward and backward. x, y and the gradients are
// contiguous (G, R, D) or (rows, D); the per-set vectors shift, scale and
// gate are rows of a strided (G, D) matrix (strides s0, s1), as slices of
// the adaLN projection are.

// ln_mod normalises each row of x (one block per row) and modulates it with
// its set's shift and scale:
//   u = (x - mean)*rstd*gamma + beta,  y = u + u*scale[g] + shift[g]
// with g = row / R. gamma, beta may be null; mean and rstd may be null.
template <typename T>
__global__ void ln_mod(T* y, T* mean, T* rstd, const T* x, const T* gamma, long long gs,
                       const T* beta, long long bs, const T* shift, long long sh0, long long sh1,
                       const T* scale, long long sc0, long long sc1, long long rows, long long R,
                       long long d, double eps) {
    __shared__ double sh[64];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * d;
        T* yr = y + r * d;
        long long g = r / R;
        double mu, rs;
        row_stats(xr, d, eps, sh, mean, rstd, r, &mu, &rs);
        T m = (T)mu, sc = (T)rs;
        for (long long i = threadIdx.x; i < d; i += blockDim.x) {
            T u = (xr[i] - m) * sc;
            if (gamma != 0) u *= gamma[i * gs];
            if (beta != 0) u += beta[i * bs];
            yr[i] = u + u * scale[g * sc0 + i * sc1] + shift[g * sh0 + i * sh1];
        }
    }
}

// ln_mod_bwd sets dx of one row per block: the LayerNorm backward of
// gu = gy + gy*scale[g].
template <typename T>
__global__ void ln_mod_bwd(T* dx, const T* gy, const T* x, const T* mean, const T* rstd,
                           const T* gamma, long long gs, const T* scale, long long sc0, long long sc1,
                           long long rows, long long R, long long d) {
    __shared__ double sh[64];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * d;
        const T* gr = gy + r * d;
        const T* sg = scale + (r / R) * sc0;
        T* dr = dx + r * d;
        double mu = (double)mean[r], rs = (double)rstd[r];
        double s1 = 0.0, s2 = 0.0;
        for (long long i = threadIdx.x; i < d; i += blockDim.x) {
            double xh = ((double)xr[i] - mu) * rs;
            double g = (double)(gr[i] + gr[i] * sg[i * sc1]);
            if (gamma != 0) g *= (double)gamma[i * gs];
            s1 += g;
            s2 += g * xh;
        }
        s1 = block_sum(s1, sh) / (double)d;
        s2 = block_sum(s2, sh) / (double)d;
        for (long long i = threadIdx.x; i < d; i += blockDim.x) {
            double xh = ((double)xr[i] - mu) * rs;
            double g = (double)(gr[i] + gr[i] * sg[i * sc1]);
            if (gamma != 0) g *= (double)gamma[i * gs];
            dr[i] = (T)(rs * (g - s1 - xh * s2));
        }
    }
}

// ln_mod_sets sums over the R rows of each set g (grid (ceil(d/blockDim),
// G), one thread per column i):
//   dshift[g, i] = sum gy,  dscale[g, i] = sum gy*u
// (either may be null; strides ds0, ds1 and dc0, dc1), and the set's
// partial parameter gradients part[g*2d + i] = sum gu*xhat and
// part[g*2d + d + i] = sum gu, with gu = gy + gy*scale[g], for
// add_param_grads (part may be null).
template <typename T>
__global__ void ln_mod_sets(T* dshift, long long ds0, long long ds1, T* dscale, long long dc0,
                            long long dc1, double* part, const T* gy, const T* x, const T* mean,
                            const T* rstd, const T* gamma, long long gs, const T* beta, long long bs,
                            const T* scale, long long sc0, long long sc1, long long R, long long d) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d) return;
    long long g = blockIdx.y;
    T gm = gamma != 0 ? gamma[i * gs] : T(1);
    T bt = beta != 0 ? beta[i * bs] : T(0);
    T sc = scale[g * sc0 + i * sc1];
    double ssh = 0.0, ssc = 0.0, pg = 0.0, pb = 0.0;
    for (long long r = g * R; r < (g + 1) * R; r++) {
        T gi = gy[r * d + i];
        T m = mean[r], s = rstd[r];
        T xh = (x[r * d + i] - m) * s;
        T u = xh;
        if (gamma != 0) u *= gm;
        if (beta != 0) u += bt;
        ssh += (double)gi;
        ssc += (double)(gi * u);
        double gu = (double)(gi + gi * sc);
        pg += gu * (((double)x[r * d + i] - (double)m) * (double)s);
        pb += gu;
    }
    if (dshift != 0) dshift[g * ds0 + i * ds1] = (T)ssh;
    if (dscale != 0) dscale[g * dc0 + i * dc1] = (T)ssc;
    if (part != 0) {
        part[g * 2 * d + i] = pg;
        part[g * 2 * d + d + i] = pb;
    }
}

// gate_res sets out = x + gate[g]*h elementwise over n = G*R*d elements
// (out may be x).
template <typename T>
__global__ void gate_res(T* out, const T* x, const T* gate, long long g0, long long g1,
                         const T* h, long long n, long long R, long long d) {
    GRID_LOOP(e, n) {
        long long r = e / d, i = e - r * d;
        out[e] = x[e] + gate[(r / R) * g0 + i * g1] * h[e];
    }
}

// gate_res_bwd (grid (ceil(d/blockDim), G), one thread per column of a set)
// sets dh = gy*gate[g] (dh may be null) and dgate[g, i] = sum over the set's
// rows of gy*h (dgate may be null; strides dg0, dg1).
template <typename T>
__global__ void gate_res_bwd(T* dh, T* dgate, long long dg0, long long dg1, const T* gy, const T* h,
                             const T* gate, long long g0, long long g1, long long R, long long d) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d) return;
    long long g = blockIdx.y;
    T gt = gate[g * g0 + i * g1];
    double s = 0.0;
    for (long long r = g * R; r < (g + 1) * R; r++) {
        T gi = gy[r * d + i];
        if (dh != 0) dh[r * d + i] = gi * gt;
        s += (double)(gi * h[r * d + i]);
    }
    if (dgate != 0) dgate[g * dg0 + i * dg1] = (T)s;
}

// bias_gelu sets y = GELU(x + bias[i]) over n elements of rows of d (bias,
// stride bs, may be null).
template <typename T>
__global__ void bias_gelu(T* y, const T* x, const T* bias, long long bs, long long n, long long d) {
    GRID_LOOP(e, n) {
        T u = x[e];
        if (bias != 0) u += bias[(e % d) * bs];
        y[e] = gelu_(u);
    }
}

// bias_gelu_bwd sets dx = gy*GELU'(x + bias[i]).
template <typename T>
__global__ void bias_gelu_bwd(T* dx, const T* gy, const T* x, const T* bias, long long bs, long long n,
                              long long d) {
    GRID_LOOP(e, n) {
        T u = x[e];
        if (bias != 0) u += bias[(e % d) * bs];
        dx[e] = gy[e] * gelu_grad_(u);
    }
}

// col_partials sums the rows of a chunk of a (rows, d) matrix per column
// (grid (ceil(d/blockDim), nchunks)): part[c*2d + i] = sum over the chunk's
// rows of a[r, i], and part[c*2d + d + i] = 0, in add_param_grads' layout.
template <typename T>
__global__ void col_partials(double* part, const T* a, long long rows, long long d, long long chunk) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d) return;
    long long c = blockIdx.y;
    long long r0 = c * chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
    double s = 0.0;
    for (long long r = r0; r < r1; r++) s += (double)a[r * d + i];
    part[c * 2 * d + i] = s;
    part[c * 2 * d + d + i] = 0.0;
}
