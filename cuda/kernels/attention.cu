// attention.cu: fused attention for sets of at most FA_NMAX tokens with
// heads of at most FA_DMAX (tensor.FlashAttention). One block per
// (batch, head), one thread per query row (forward, dq) or key row (dk,
// dv); keys and values (or queries and output gradients) pass through
// shared memory in tiles of FA_KT rows, with an online softmax. No
// (B, H, N, N) matrix is written: the forward saves the row log-sum-exp and
// the backward recomputes the probabilities from it.

#define FA_NMAX 128
#define FA_DMAX 64

// FA_KT is the tile height: 32 rows of float, 16 of double (16 KB for the
// two tiles of a head either way).
template <typename T> struct fa_kt { enum { v = 32 }; };
template <> struct fa_kt<double> { enum { v = 16 }; };

// AttnStrides holds the element strides of the operands, in the order
// q, k, v, out, gout, dq, dk, dv (B, H, N, Dh), lse (B, H, N) and
// keyMask (B, N).
struct AttnStrides {
    long long s[10][4];
};

#define FA_Q 0
#define FA_K 1
#define FA_V 2
#define FA_O 3
#define FA_G 4
#define FA_DQ 5
#define FA_DK 6
#define FA_DV 7
#define FA_L 8
#define FA_M 9

// fa_load copies rows [j0, j0+KT) of the (N, D) head matrices a and b (at
// offsets oa, ob, strides sa, sb) into the tiles ta, tb (rows of FA_DMAX),
// zero past row N.
template <typename T>
__device__ __forceinline__ void fa_load(T* ta, T* tb, const T* a, const long long* sa, long long oa,
                                        const T* b, const long long* sb, long long ob, long long j0,
                                        long long N, long long D) {
    const int KT = fa_kt<T>::v;
    for (long long e = threadIdx.x; e < KT * D; e += blockDim.x) {
        long long jj = e / D, d = e - jj * D, j = j0 + jj;
        bool in = j < N;
        ta[jj * FA_DMAX + d] = in ? a[oa + j * sa[2] + d * sa[3]] : T(0);
        tb[jj * FA_DMAX + d] = in ? b[ob + j * sb[2] + d * sb[3]] : T(0);
    }
}

// flash_fwd: grid B*H blocks (grid-stride), blockDim >= N threads.
template <typename T>
__global__ void flash_fwd(T* out, T* lse, const T* q, const T* k, const T* v, const T* mask,
                          AttnStrides st, long long B, long long H, long long N, long long D, double scale) {
    const int KT = fa_kt<T>::v;
    __shared__ T ks[KT * FA_DMAX];
    __shared__ T vs[KT * FA_DMAX];
    __shared__ T ps[KT * FA_NMAX];
    __shared__ T keep[FA_NMAX];
    const T ninf = (T)(-d_inf());
    const T sc = (T)scale;
    int i = threadIdx.x;
    bool active = i < N;
    for (long long bh = blockIdx.x; bh < B * H; bh += gridDim.x) {
        long long b = bh / H, h = bh - b * H;
        const long long* sq = st.s[FA_Q];
        const long long* sk = st.s[FA_K];
        const long long* sv = st.s[FA_V];
        const long long* so = st.s[FA_O];
        long long oq = b * sq[0] + h * sq[1] + i * sq[2];
        long long ok = b * sk[0] + h * sk[1], ov = b * sv[0] + h * sv[1];
        __syncthreads();
        for (long long j = threadIdx.x; j < N; j += blockDim.x)
            keep[j] = mask != 0 ? mask[b * st.s[FA_M][0] + j * st.s[FA_M][1]] : T(1);
        T acc[FA_DMAX];
#pragma unroll
        for (int d = 0; d < FA_DMAX; d++) acc[d] = T(0);
        T m = ninf, l = T(0);
        for (long long j0 = 0; j0 < N; j0 += KT) {
            __syncthreads();
            fa_load(ks, vs, k, sk, ok, v, sv, ov, j0, N, D);
            __syncthreads();
            if (!active) continue;
            T s[KT];
#pragma unroll
            for (int jj = 0; jj < KT; jj++) s[jj] = T(0);
            for (long long d = 0; d < D; d++) {
                T qd = q[oq + d * sq[3]];
#pragma unroll
                for (int jj = 0; jj < KT; jj++) s[jj] += qd * ks[jj * FA_DMAX + d];
            }
            T mt = m;
#pragma unroll
            for (int jj = 0; jj < KT; jj++) {
                s[jj] *= sc;
                if (j0 + jj < N && keep[j0 + jj] != T(0) && s[jj] > mt) mt = s[jj];
            }
            if (mt == ninf) {
#pragma unroll
                for (int jj = 0; jj < KT; jj++) ps[jj * FA_NMAX + i] = T(0);
                continue;
            }
            T alpha = m_exp(m - mt);
            l *= alpha;
#pragma unroll
            for (int d = 0; d < FA_DMAX; d++) acc[d] *= alpha;
#pragma unroll
            for (int jj = 0; jj < KT; jj++) {
                T p = (j0 + jj < N && keep[j0 + jj] != T(0)) ? m_exp(s[jj] - mt) : T(0);
                l += p;
                ps[jj * FA_NMAX + i] = p;
            }
            m = mt;
            long long nk = N - j0 < KT ? N - j0 : KT;
            for (long long jj = 0; jj < nk; jj++) {
                T p = ps[jj * FA_NMAX + i];
#pragma unroll
                for (int d = 0; d < FA_DMAX; d++) acc[d] += p * vs[jj * FA_DMAX + d];
            }
        }
        if (active) {
            long long oo = b * so[0] + h * so[1] + i * so[2];
            T inv = l > T(0) ? T(1) / l : T(0);
#pragma unroll
            for (int d = 0; d < FA_DMAX; d++)
                if (d < D) out[oo + d * so[3]] = acc[d] * inv;
            const long long* sl = st.s[FA_L];
            lse[b * sl[0] + h * sl[1] + i * sl[2]] = l > T(0) ? m + m_log(l) : ninf;
        }
    }
}

// flash_bwd: grid B*H blocks (grid-stride), blockDim >= N threads. Phase 1:
// thread i computes dq_i over key tiles; phase 2: thread j computes dk_j and
// dv_j over query tiles. dS = P*(dP - D_i) with D_i = gout_i·out_i.
template <typename T>
__global__ void flash_bwd(T* dq, T* dk, T* dv, const T* gout, const T* q, const T* k, const T* v,
                          const T* out, const T* lse, const T* mask, AttnStrides st, long long B,
                          long long H, long long N, long long D, double scale) {
    const int KT = fa_kt<T>::v;
    __shared__ T ta[KT * FA_DMAX];
    __shared__ T tb[KT * FA_DMAX];
    __shared__ T ps[KT * FA_NMAX];
    __shared__ T keep[FA_NMAX];
    __shared__ T Ls[FA_NMAX];
    __shared__ T Ds[FA_NMAX];
    const T ninf = (T)(-d_inf());
    const T sc = (T)scale;
    int t = threadIdx.x;
    bool active = t < N;
    const long long* sq = st.s[FA_Q];
    const long long* sk = st.s[FA_K];
    const long long* sv = st.s[FA_V];
    const long long* sg = st.s[FA_G];
    for (long long bh = blockIdx.x; bh < B * H; bh += gridDim.x) {
        long long b = bh / H, h = bh - b * H;
        long long oq = b * sq[0] + h * sq[1], ok = b * sk[0] + h * sk[1];
        long long ov = b * sv[0] + h * sv[1], og = b * sg[0] + h * sg[1];
        __syncthreads();
        for (long long j = threadIdx.x; j < N; j += blockDim.x) {
            keep[j] = mask != 0 ? mask[b * st.s[FA_M][0] + j * st.s[FA_M][1]] : T(1);
            const long long* sl = st.s[FA_L];
            Ls[j] = lse[b * sl[0] + h * sl[1] + j * sl[2]];
            const long long* so = st.s[FA_O];
            long long oo = b * so[0] + h * so[1] + j * so[2];
            T di = T(0);
            for (long long d = 0; d < D; d++) di += gout[og + j * sg[2] + d * sg[3]] * out[oo + d * so[3]];
            Ds[j] = di;
        }
        T acc[FA_DMAX];
        // Phase 1: dq_i = scale * sum_j dS_ij k_j.
#pragma unroll
        for (int d = 0; d < FA_DMAX; d++) acc[d] = T(0);
        for (long long j0 = 0; j0 < N; j0 += KT) {
            __syncthreads();
            fa_load(ta, tb, k, sk, ok, v, sv, ov, j0, N, D);
            __syncthreads();
            if (!active) continue;
            T s[KT], dp[KT];
#pragma unroll
            for (int jj = 0; jj < KT; jj++) s[jj] = dp[jj] = T(0);
            for (long long d = 0; d < D; d++) {
                T qd = q[oq + t * sq[2] + d * sq[3]];
                T gd = gout[og + t * sg[2] + d * sg[3]];
#pragma unroll
                for (int jj = 0; jj < KT; jj++) {
                    s[jj] += qd * ta[jj * FA_DMAX + d];
                    dp[jj] += gd * tb[jj * FA_DMAX + d];
                }
            }
            T li = Ls[t], di = Ds[t];
#pragma unroll
            for (int jj = 0; jj < KT; jj++) {
                bool ok2 = j0 + jj < N && keep[j0 + jj] != T(0) && li != ninf;
                T p = ok2 ? m_exp(s[jj] * sc - li) : T(0);
                ps[jj * FA_NMAX + t] = p * (dp[jj] - di);
            }
            long long nk = N - j0 < KT ? N - j0 : KT;
            for (long long jj = 0; jj < nk; jj++) {
                T ds = ps[jj * FA_NMAX + t];
#pragma unroll
                for (int d = 0; d < FA_DMAX; d++) acc[d] += ds * ta[jj * FA_DMAX + d];
            }
        }
        if (active) {
            const long long* s2 = st.s[FA_DQ];
            long long o = b * s2[0] + h * s2[1] + t * s2[2];
#pragma unroll
            for (int d = 0; d < FA_DMAX; d++)
                if (d < D) dq[o + d * s2[3]] = sc * acc[d];
        }
        // Phase 2: dv_j = sum_i P_ij gout_i, dk_j = scale * sum_i dS_ij q_i.
        T acv[FA_DMAX];
#pragma unroll
        for (int d = 0; d < FA_DMAX; d++) acc[d] = acv[d] = T(0);
        bool kj = active && keep[t] != T(0);
        for (long long i0 = 0; i0 < N; i0 += KT) {
            __syncthreads();
            fa_load(ta, tb, q, sq, oq, gout, sg, og, i0, N, D);
            __syncthreads();
            if (!kj) continue;
            T s[KT], dp[KT];
#pragma unroll
            for (int ii = 0; ii < KT; ii++) s[ii] = dp[ii] = T(0);
            for (long long d = 0; d < D; d++) {
                T kd = k[ok + t * sk[2] + d * sk[3]];
                T vd = v[ov + t * sv[2] + d * sv[3]];
#pragma unroll
                for (int ii = 0; ii < KT; ii++) {
                    s[ii] += ta[ii * FA_DMAX + d] * kd;
                    dp[ii] += tb[ii * FA_DMAX + d] * vd;
                }
            }
#pragma unroll
            for (int ii = 0; ii < KT; ii++) {
                long long qi = i0 + ii;
                T li = qi < N ? Ls[qi] : ninf;
                T p = li != ninf ? m_exp(s[ii] * sc - li) : T(0);
                s[ii] = p;                                   // P_ij
                dp[ii] = li != ninf ? p * (dp[ii] - Ds[qi]) : T(0); // dS_ij
            }
#pragma unroll
            for (int d = 0; d < FA_DMAX; d++) {
                T a = acv[d], c = acc[d];
#pragma unroll
                for (int ii = 0; ii < KT; ii++) {
                    a += s[ii] * tb[ii * FA_DMAX + d];
                    c += dp[ii] * ta[ii * FA_DMAX + d];
                }
                acv[d] = a;
                acc[d] = c;
            }
        }
        if (active) {
            const long long* s2 = st.s[FA_DK];
            const long long* s3 = st.s[FA_DV];
            long long o2 = b * s2[0] + h * s2[1] + t * s2[2];
            long long o3 = b * s3[0] + h * s3[1] + t * s3[2];
#pragma unroll
            for (int d = 0; d < FA_DMAX; d++) {
                if (d < D) {
                    dk[o2 + d * s2[3]] = sc * acc[d];
                    dv[o3 + d * s3[3]] = acv[d];
                }
            }
        }
    }
}
