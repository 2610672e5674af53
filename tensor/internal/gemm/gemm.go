package gemm

import (
	"fmt"
	"os"
)

// scalar is the element type of a GEMM.
type scalar interface{ ~float32 | ~float64 }

// kernel describes a micro-kernel and the cache blocking that suits it.
type kernel[T scalar] struct {
	name   string // "avx512", "avx2" or "go"
	mr, nr int    // tile of C computed by one call of fn
	mc     int    // rows of the packed A block (multiple of mr), sized for L2
	kc     int    // depth of the packed blocks, sized so a B micro-panel stays in L1
	nc     int    // columns of the packed B block (multiple of nr), sized for L3
	// small is the number of multiply-adds (m*n*k) below which the direct,
	// unpacked path is faster than packing for this kernel.
	small int64
	// fn computes C = alpha*A*B + beta*C for one mr x nr tile from packed
	// panels a (kc*mr values) and b (kc*nr values); see kernel_amd64.go.
	// A non-nil bias (nr values) is added instead of beta*C (see
	// kernel_amd64.go).
	fn func(kc int, a, b, c *T, ldc int, alpha, beta T, bias *T)
	// direct, if not nil, is fn reading A in place instead of from a
	// packed panel: row i of the tile at a + i*lda (op(A) row-major, k
	// contiguous), with the same bits as fn. The blocked path then skips
	// packing A for products whose A is not transposed.
	direct func(kc int, a *T, lda int, b, c *T, ldc int, alpha, beta T, bias *T)
	// directT, if not nil, is fn reading a transposed A in place: A stored
	// k x m, element (i, p) of the tile at a + p*lda + i, with the same
	// bits as fn. The blocked path then skips packing A for products whose
	// A is transposed (a linear layer's weight gradient).
	directT func(kc int, a *T, lda int, b, c *T, ldc int, alpha, beta T, bias *T)
	// directB, if not nil, is direct reading B in place as well: row p of
	// the nr columns at b + p*ldb (op(B) row-major), with the same bits as
	// fn. The blocked path uses it for small products (directBMaxWork)
	// whose B is not transposed, where packing B costs more than it saves.
	directB func(kc int, a *T, lda int, b *T, ldb int, c *T, ldc int, alpha, beta T, bias *T)
	// pairs, if not nil, makes fn's panels out of packed ones: it converts
	// panels consecutive packed panels of kc rows of w values at the start
	// of p (panel r at p[r*w*kc:]) in place, each into the first half of
	// its space (the bf16 kernel's panels of k pairs, see bf16.go), and
	// pairsFrom makes such a panel at dst straight from kc rows of w values
	// at src, row p at src[p*ld:]. The packing routines use them
	// (packAPairs, packBPairs); the driver is otherwise unchanged, offsets
	// included.
	pairs     func(p []T, w, kc, panels int)
	pairsFrom func(dst, src []T, ld, w, kc int)
}

// The kernels in use, chosen once at start-up.
var (
	sKern = pickKernel(sgemmKernels())
	dKern = pickKernel(dgemmKernels())
)

// pickKernel returns the first (best) of ks, or the one named by the
// environment variable LGFLOW_GEMM when that is among ks.
func pickKernel[T scalar](ks []*kernel[T]) *kernel[T] {
	if want := os.Getenv("LGFLOW_GEMM"); want != "" {
		for _, k := range ks {
			if k.name == want {
				return k
			}
		}
	}
	return ks[0]
}

// Kernel reports which float32 micro-kernel Sgemm uses on this machine:
// "avx512", "avx2" or "go".
func Kernel() string { return sKern.name }

// Sgemm computes, in float32,
//
//	C = alpha * op(A) * op(B) + beta * C
//
// where op(A) is m x k, op(B) is k x n and C is m x n. All matrices are
// row-major: element (i, j) of C is c[i*ldc+j]. op(A) is A when transA is
// false (A is m x k, element (i, p) at a[i*lda+p]) and A^T when it is true
// (A is stored k x m, element (p, i) at a[p*lda+i]); likewise op(B) with
// transB and ldb. Only c is written, and only its m x n elements; a and b
// are read. When beta == 0, C is overwritten without being read, so NaNs
// there do not propagate; when alpha == 0 or k == 0, A and B are not read.
//
// Sgemm panics if a dimension is negative, a row stride is smaller than its
// row length, or a slice is too short for the matrix it holds. a and b may
// overlap each other but must not overlap c. Large products use all
// runtime.GOMAXPROCS(0) threads; Sgemm may be called concurrently.
//
// The assembly micro-kernels (Kernel "avx512" and "avx2") flush denormals
// to zero, in their operands and in their results (MXCSR DAZ and FTZ for
// the call): a denormal costs the x86 cores a microcode assist of hundreds
// of cycles, and a trained network's gradients hold thousands of them,
// which made weight-gradient products up to 40x slower. Magnitudes under
// 2^-126 (1.2e-38) then count as zero; the Go kernel and the small-product
// path keep them.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemm(&sState, sgemmKern(m, n, k), 0, "Sgemm", transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, nil, c, ldc)
}

// SgemmBias computes, in float32,
//
//	C = alpha * op(A) * op(B) + bias
//
// with bias (n values) added to every row of C, as a linear layer's forward
// pass needs it. Layouts and checks are Sgemm's; C is written without being
// read. The result is bit for bit that of copying bias into every row of C
// and calling Sgemm with beta = 1, but the micro-kernels add bias to each
// tile in their registers, without a pass over C or reading it.
func SgemmBias(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, bias []float32, c []float32, ldc int) {
	checkBias("SgemmBias", n, len(bias))
	gemm(&sState, sgemmKern(m, n, k), 0, "SgemmBias", transA, transB, m, n, k, alpha, a, lda, b, ldb, 0, bias[:n], c, ldc)
}

// Dgemm is Sgemm in float64: C = alpha * op(A) * op(B) + beta * C, with the
// same layout, argument checks and memory behaviour. It uses an AVX2+FMA
// micro-kernel where the CPU has one and portable Go elsewhere.
func Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	gemm(&dState, dKern, 0, "Dgemm", transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, nil, c, ldc)
}

// DgemmBias is SgemmBias in float64: C = alpha * op(A) * op(B) + bias.
func DgemmBias(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, bias []float64, c []float64, ldc int) {
	checkBias("DgemmBias", n, len(bias))
	gemm(&dState, dKern, 0, "DgemmBias", transA, transB, m, n, k, alpha, a, lda, b, ldb, 0, bias[:n], c, ldc)
}

// checkBias panics unless a bias of length has the n values a row of C needs.
func checkBias(fn string, n, length int) {
	if n >= 0 && length < n {
		panic(fmt.Sprintf("gemm.%s: len(bias) = %d, want n = %d", fn, length, n))
	}
}

// checkMatrix panics unless s holds a rows x cols row-major matrix with row
// stride ld.
func checkMatrix(fn, name string, rows, cols, ld, length int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("gemm.%s: ld%s = %d is less than the row length %d of %s (%dx%d)", fn, name, ld, max(1, cols), name, rows, cols))
	}
	if rows == 0 || cols == 0 {
		return
	}
	if need := (rows-1)*ld + cols; length < need {
		panic(fmt.Sprintf("gemm.%s: len(%s) = %d, but a %dx%d matrix with ld%s = %d needs %d", fn, name, length, rows, cols, name, ld, need))
	}
}

// checkArgs panics on invalid GEMM arguments.
func checkArgs(fn string, transA, transB bool, m, n, k, la, lda, lb, ldb, lc, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm.%s: negative dimension m=%d n=%d k=%d", fn, m, n, k))
	}
	if transA {
		checkMatrix(fn, "a", k, m, lda, la)
	} else {
		checkMatrix(fn, "a", m, k, lda, la)
	}
	if transB {
		checkMatrix(fn, "b", n, k, ldb, lb)
	} else {
		checkMatrix(fn, "b", k, n, ldb, lb)
	}
	checkMatrix(fn, "c", m, n, ldc, lc)
}

// gemm validates the arguments and dispatches to the scaling-only, direct
// or blocked path. maxWorkers > 0 caps the number of threads (for tests and
// benchmarks). A non-nil bias (n values, beta == 0) is added to every row:
// C = alpha*op(A)*op(B) + bias.
func gemm[T scalar](st *typeState[T], kn *kernel[T], maxWorkers int, fn string, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, bias []T, c []T, ldc int) {
	checkArgs(fn, transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 || work(m, n, k) < kn.small {
		if bias != nil {
			// C = bias, then alpha*op(A)*op(B) accumulated onto it.
			fillRows(m, n, bias, c, ldc)
			beta = 1
		}
		if k == 0 || alpha == 0 {
			scaleC(m, n, beta, c, ldc)
			return
		}
		smallGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	st.blocked(kn, maxWorkers, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, bias, c, ldc)
}

// fillRows copies bias (n values) into each of the m rows of C.
func fillRows[T scalar](m, n int, bias, c []T, ldc int) {
	for i := range m {
		copy(c[i*ldc:i*ldc+n], bias[:n])
	}
}

// scaleC computes C = beta*C; beta == 0 zeroes C without reading it.
func scaleC[T scalar](m, n int, beta T, c []T, ldc int) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}
