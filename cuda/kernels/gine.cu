// gine.cu: the fused GINE neighbourhood sum of message passing and its
// backward, over an edge index in device memory (see gine.go): no
// (edges, F) message tensor and no atomics. Every kernel runs one thread
// per (row, feature column), consecutive threads on consecutive columns,
// and sums a row's edges in the index's order, so results do not depend
// on the launch configuration.

// gine_keep returns 1 when m's sign bit is clear (ReLU passes m) and 0
// otherwise: the CPU's branch-free mask, bit for bit (-0 and -NaN are cut).
__device__ __forceinline__ float gine_keep(float m) { return __float_as_int(m) < 0 ? 0.0f : 1.0f; }
__device__ __forceinline__ double gine_keep(double m) { return __double_as_longlong(m) < 0 ? 0.0 : 1.0; }

// gine_fwd sets out[i, c] to the sum over positions p in [ptr[i], ptr[i+1])
// of ReLU(h[other[p], c] + e[row[p], c]), or of h[other[p], c] when e is
// null; (nodes, f) out and h, e of f columns.
template <typename T>
__global__ void gine_fwd(T* out, const T* h, const T* e, const int* ptr, const int* other, const int* row,
                         long long nodes, long long f) {
    GRID_LOOP(i, nodes * f) {
        long long n = i / f, c = i - n * f;
        int p0 = ptr[n], p1 = ptr[n + 1];
        T acc = T(0);
        if (e != 0) {
            for (int p = p0; p < p1; p++) {
                T m = h[(long long)other[p] * f + c] + e[(long long)row[p] * f + c];
                acc += m * gine_keep(m);
            }
        } else {
            for (int p = p0; p < p1; p++) acc += h[(long long)other[p] * f + c];
        }
        out[i] = acc;
    }
}

// gine_bwd_src accumulates, for node i and the positions p in
// [ptr[i], ptr[i+1]) of its outgoing edges (other[p] their destinations,
// row[p] their edge-term rows), g = gout[other[p], c] masked by
// h[i, c] + e[row[p], c] (unmasked without e) into dh[i, c] (if dh is not
// null) and into de[row[p], c] (if de is not null: dense edge terms, one
// row per edge, so no two threads add to one element).
template <typename T>
__global__ void gine_bwd_src(T* dh, T* de, const T* gout, const T* h, const T* e, const int* ptr,
                             const int* other, const int* row, long long nodes, long long f) {
    GRID_LOOP(i, nodes * f) {
        long long n = i / f, c = i - n * f;
        int p0 = ptr[n], p1 = ptr[n + 1];
        if (p0 == p1) continue;
        T acc = dh != 0 ? dh[i] : T(0);
        if (e != 0) {
            T hv = h[i];
            for (int p = p0; p < p1; p++) {
                long long er = (long long)row[p] * f + c;
                T m = gout[(long long)other[p] * f + c] * gine_keep(hv + e[er]);
                acc += m;
                if (de != 0) de[er] += m;
            }
        } else {
            for (int p = p0; p < p1; p++) acc += gout[(long long)other[p] * f + c];
        }
        if (dh != 0) dh[i] = acc;
    }
}

// gine_de_tiles sets part[t, c], for tile t of edges of class cls[t] at
// class-sorted positions [lo[t], lo[t+1]) (src and dst their endpoints),
// to the sum of gout[dst[q], c] masked by h[src[q], c] + e[cls[t], c].
template <typename T>
__global__ void gine_de_tiles(T* part, const T* gout, const T* h, const T* e, const int* src, const int* dst,
                              const int* lo, const int* cls, long long tiles, long long f) {
    GRID_LOOP(i, tiles * f) {
        long long t = i / f, c = i - t * f;
        T ev = e[(long long)cls[t] * f + c];
        T acc = T(0);
        for (int q = lo[t]; q < lo[t + 1]; q++) {
            acc += gout[(long long)dst[q] * f + c] * gine_keep(h[(long long)src[q] * f + c] + ev);
        }
        part[i] = acc;
    }
}

// gine_de_sum adds to de[k, c] the partial sums part[t, c] of class k's
// tiles t in [ptr[k], ptr[k+1]), in order.
template <typename T>
__global__ void gine_de_sum(T* de, const T* part, const int* ptr, long long classes, long long f) {
    GRID_LOOP(i, classes * f) {
        long long k = i / f, c = i - k * f;
        int t0 = ptr[k], t1 = ptr[k + 1];
        if (t0 == t1) continue;
        T acc = de[i];
        for (int t = t0; t < t1; t++) acc += part[(long long)t * f + c];
        de[i] = acc;
    }
}
