// index.cu: IndexSelect, ScatterAdd and SegmentSum on contiguous operands
// with int32 indices in device memory.

// index_select sets d[o, j, i] = a[o, idx[j], i] for the contiguous
// (outer, nidx, inner) view of d and (outer, na, inner) view of a.
template <typename T>
__global__ void index_select(T* d, const T* a, const int* idx, long long nidx, long long na,
                             long long inner, long long n) {
    GRID_LOOP(e, n) {
        long long i = e % inner;
        long long r = e / inner;
        long long j = r % nidx;
        long long o = r / nidx;
        d[e] = a[(o * na + idx[j]) * inner + i];
    }
}

// scatter_atomic adds row i of the (n/w, w) src into row idx[i] of d with
// atomicAdd (summation order unspecified).
template <typename T>
__global__ void scatter_atomic(T* d, const T* s, const int* idx, long long w, long long n) {
    GRID_LOOP(e, n) {
        long long i = e / w, c = e - i * w;
        atomicAdd(d + (long long)idx[i] * w + c, s[e]);
    }
}

// csr_sum sets row r = list[j] of the (rows, w) d, for j < u, to the sum
// of the src rows perm[p], p in [rowptr[j], rowptr[j+1]), added in that
// order (so the result is deterministic), starting from d's row if
// accumulate is set and from 0 otherwise. With mean set the sum is
// multiplied by 1/count. One thread per element of the listed rows.
template <typename T>
__global__ void csr_sum(T* d, const T* s, const int* list, const int* rowptr, const int* perm,
                        long long u, long long w, int accumulate, int mean) {
    GRID_LOOP(e, u * w) {
        long long j = e / w, c = e - j * w;
        long long de = (long long)list[j] * w + c;
        int p0 = rowptr[j], p1 = rowptr[j + 1];
        T acc = accumulate ? d[de] : T(0);
        for (int p = p0; p < p1; p++) acc += s[(long long)perm[p] * w + c];
        if (mean && p1 > p0) acc *= T(1) / (T)(p1 - p0);
        d[de] = acc;
    }
}

// scale_rows multiplies row r of the (rows, w) d by 1/cnt[r] where cnt[r] > 0.
template <typename T>
__global__ void scale_rows(T* d, const int* cnt, long long w, long long n) {
    GRID_LOOP(e, n) {
        int c = cnt[e / w];
        if (c > 0) d[e] *= T(1) / (T)c;
    }
}
