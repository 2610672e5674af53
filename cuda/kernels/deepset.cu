// deepset.cu: the LG-VAE decoder's fused row-wise DeepSet
// (tensor/fused_deepset.go). The scores s, their upstream gradient gy and
// the results y and ds are contiguous (R, N); ctx and dctx are contiguous
// (R, D); the vectors ws, bs, wo (D) have strides (wss, bss, wos) and bo
// is one element. Nothing of size R*N*D is stored: every kernel recomputes
// the pre-activations h = s*ws + bs + ctx it needs. No atomics: the
// results are the same from run to run.

// deepset_fwd sets y[r, j] = bo + sum_d wo[d]*GELU(h[r, j, d]) over the n =
// R*N scores, one thread per score looping over d (the sum in double).
template <typename T>
__global__ void deepset_fwd(T* y, const T* s, const T* ctx, const T* ws, long long wss, const T* bs,
                            long long bss, const T* wo, long long wos, const T* bo, long long n,
                            long long N, long long D) {
    GRID_LOOP(e, n) {
        const T* c = ctx + (e / N) * D;
        T sv = s[e];
        double acc = 0.0;
        for (long long k = 0; k < D; k++) {
            T h = sv * ws[k * wss] + bs[k * bss] + c[k];
            acc += (double)wo[k * wos] * (double)gelu_(h);
        }
        y[e] = (T)((double)bo[0] + acc);
    }
}

// deepset_bwd_ds sets ds[r, j] = sum_d dh*ws[d] with dh = (gy*wo[d])*GELU'(h),
// one thread per score looping over d (the sum in double).
template <typename T>
__global__ void deepset_bwd_ds(T* ds, const T* gy, const T* s, const T* ctx, const T* ws, long long wss,
                               const T* bs, long long bss, const T* wo, long long wos, long long n,
                               long long N, long long D) {
    GRID_LOOP(e, n) {
        const T* c = ctx + (e / N) * D;
        T sv = s[e], g = gy[e];
        double acc = 0.0;
        for (long long k = 0; k < D; k++) {
            T w = ws[k * wss];
            T h = sv * w + bs[k * bss] + c[k];
            T dh = (g * wo[k * wos]) * gelu_grad_(h);
            acc += (double)dh * (double)w;
        }
        ds[e] = (T)acc;
    }
}

// deepset_bwd_cols runs one thread per (chunk c, column k), e = c*D + k <
// nch*D, over the rows [c*chunk, (c+1)*chunk) of a chunk: it sets
// dctx[r, k] = sum_j dh[r, j, k] (dctx may be null) and writes the chunk's
// partial parameter gradients, P = 3D + 1 doubles per chunk (part may be
// null):
//   part[c*P + k] = sum dh*s,  part[c*P + D + k] = sum dh,
//   part[c*P + 2D + k] = sum gy*GELU(h) (0 unless want_wo),
//   part[c*P + 3D] = sum gy (by the thread of column 0).
template <typename T>
__global__ void deepset_bwd_cols(T* dctx, double* part, const T* gy, const T* s, const T* ctx, const T* ws,
                                 long long wss, const T* bs, long long bss, const T* wo, long long wos,
                                 long long R, long long N, long long D, long long chunk, long long nch,
                                 long long want_wo) {
    GRID_LOOP(e, nch * D) {
        long long c = e / D, k = e - c * D;
        long long r0 = c * chunk, r1 = r0 + chunk < R ? r0 + chunk : R;
        T w = ws[k * wss], b = bs[k * bss], o = wo[k * wos];
        double pws = 0.0, pbs = 0.0, pwo = 0.0, pbo = 0.0;
        for (long long r = r0; r < r1; r++) {
            const T* sr = s + r * N;
            const T* gr = gy + r * N;
            T cv = ctx[r * D + k];
            double rc = 0.0;
            for (long long j = 0; j < N; j++) {
                T sv = sr[j], g = gr[j];
                T h = sv * w + b + cv;
                T dh = (g * o) * gelu_grad_(h);
                rc += (double)dh;
                pws += (double)dh * (double)sv;
                if (want_wo) pwo += (double)g * (double)gelu_(h);
                pbo += (double)g;
            }
            if (dctx != 0) dctx[r * D + k] = (T)rc;
            pbs += rc;
        }
        if (part != 0) {
            double* p = part + c * (3 * D + 1);
            p[k] = pws;
            p[D + k] = pbs;
            p[2 * D + k] = pwo;
            if (k == 0) p[3 * D] = pbo;
        }
    }
}

// deepset_params sums the nch chunk partials of deepset_bwd_cols in chunk
// order, one thread per partial i < 3D + 1, and adds them into dws, dbs,
// dwo (strides s0, s1, s2) and dbo, any of which may be null.
template <typename T>
__global__ void deepset_params(T* dws, long long s0, T* dbs, long long s1, T* dwo, long long s2, T* dbo,
                               const double* part, long long D, long long nch) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long P = 3 * D + 1;
    if (i >= P) return;
    double acc = 0.0;
    for (long long c = 0; c < nch; c++) acc += part[c * P + i];
    if (i < D) {
        if (dws != 0) dws[i * s0] += (T)acc;
    } else if (i < 2 * D) {
        if (dbs != 0) dbs[(i - D) * s1] += (T)acc;
    } else if (i < 3 * D) {
        if (dwo != 0) dwo[(i - 2 * D) * s2] += (T)acc;
    } else if (dbo != 0) {
        dbo[0] += (T)acc;
    }
}
