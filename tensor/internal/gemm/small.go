package gemm

// smallGemm computes C = alpha*op(A)*op(B) + beta*C directly, without
// packing, in one thread. Arguments are valid and alpha != 0, k > 0. Every
// product is rounded before it is added, in every build (the conversions
// keep a compiler from fusing them).
func smallGemm[T scalar](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if transB {
		// Dot products: row j of B is column j of op(B).
		for i := range m {
			crow := c[i*ldc : i*ldc+n]
			for j := range crow {
				brow := b[j*ldb : j*ldb+k]
				var s T
				if transA {
					for p, bv := range brow {
						s += T(a[p*lda+i] * bv)
					}
				} else {
					arow := a[i*lda : i*lda+k]
					for p, bv := range brow {
						s += T(arow[p] * bv)
					}
				}
				if beta == 0 {
					crow[j] = alpha * s
				} else {
					crow[j] = T(alpha*s) + T(beta*crow[j])
				}
			}
		}
		return
	}
	// Row updates: row i of C accumulates op(A)[i][p] * row p of B.
	for i := range m {
		crow := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(crow)
		} else if beta != 1 {
			for j := range crow {
				crow[j] *= beta
			}
		}
		for p := range k {
			var av T
			if transA {
				av = a[p*lda+i]
			} else {
				av = a[i*lda+p]
			}
			av *= alpha
			brow := b[p*ldb : p*ldb+n]
			for j, bv := range brow {
				crow[j] += T(av * bv)
			}
		}
	}
}
