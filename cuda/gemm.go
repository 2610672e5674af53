package cuda

import (
	"fmt"
	"unsafe"

	"lgflow/tensor"
)

// matLayout returns how a rows×cols matrix with strides (sr, sc) is handed
// to a row-major GEMM: flip reports that its memory holds the transpose
// row-major, ld is the row stride of what is passed, and ok is false when
// neither layout fits (the matrix must be copied). It matches the CPU
// backend's rule.
func matLayout(rows, cols, sr, sc int) (flip bool, ld int, ok bool) {
	if rows == 0 || cols == 0 {
		return false, max(cols, 1), true
	}
	if cols == 1 || sc == 1 {
		ld = sr
		if rows == 1 {
			ld = max(cols, 1)
		}
		if ld >= max(cols, 1) {
			return false, ld, true
		}
	}
	if rows == 1 || sr == 1 {
		ld = sc
		if cols == 1 {
			ld = max(rows, 1)
		}
		if ld >= max(rows, 1) {
			return true, ld, true
		}
	}
	return false, 0, false
}

func matOf(t *tensor.Tensor) (flip bool, ld int, ok bool) {
	s, st := t.Shape(), t.Strides()
	r := len(s)
	return matLayout(s[r-2], s[r-1], st[r-2], st[r-1])
}

// Gemm sets dst = alpha·op(a)·op(b) + beta·dst with cuBLAS (see
// tensor.Gemm for shapes; batch dimensions equal, or one operand of rank 2
// shared by every batch). Row-major products are computed as the
// column-major Cᵀ = op(B)ᵀ·op(A)ᵀ; batches go to one strided-batched call
// per run of uniformly strided batches. Operands whose last two axes have
// neither unit column nor unit row stride are copied first.
func (b *Backend) Gemm(dst *tensor.Tensor, alpha float64, x, y *tensor.Tensor, transA, transB bool, beta float64) {
	b.enter()
	defer b.exit()
	b.gemm(dst, alpha, x, y, transA, transB, beta)
}

// GemmBias sets dst = alpha·op(a)·op(b) + bias (bias of shape (n,) added
// to every row): bias is copied into dst, then cuBLAS accumulates the
// product onto it (beta = 1).
func (b *Backend) GemmBias(dst *tensor.Tensor, alpha float64, x, y *tensor.Tensor, transA, transB bool, bias *tensor.Tensor) {
	b.enter()
	defer b.exit()
	b.copy(dst, bias)
	b.gemm(dst, alpha, x, y, transA, transB, 1)
}

func (b *Backend) gemm(c *tensor.Tensor, alpha float64, a, bm *tensor.Tensor, transA, transB bool, beta float64) {
	if c.Size() == 0 {
		return
	}
	cs := c.Shape()
	r := len(cs)
	m, n := cs[r-2], cs[r-1]
	k := a.Dim(-1)
	if transA {
		k = a.Dim(-2)
	}
	if k == 0 || alpha == 0 {
		if beta == 0 {
			b.fill(c, 0)
		} else {
			b.unary(tensor.UnaryAffine, c, c, beta, 0)
		}
		return
	}
	fa, lda, ok := matOf(a)
	if !ok {
		var tmp bool
		a, tmp = b.contig(a)
		if tmp {
			defer b.free(a)
		}
		fa, lda, _ = matOf(a)
	}
	fb, ldb, ok := matOf(bm)
	if !ok {
		var tmp bool
		bm, tmp = b.contig(bm)
		if tmp {
			defer b.free(bm)
		}
		fb, ldb, _ = matOf(bm)
	}
	out := c
	fc, ldc, ok := matOf(c)
	if !ok {
		out = b.contigDst(c, beta != 0)
		fc, ldc, _ = matOf(out)
	}
	opA, opB := transA != fa, transB != fb
	A, B := a, bm
	M, N := m, n
	lA, lB := lda, ldb
	if fc {
		// out's memory holds Cᵀ row-major: compute Cᵀ = op(B)ᵀ·op(A)ᵀ.
		A, B = bm, a
		opA, opB = !opB, !opA
		M, N = n, m
		lA, lB = ldb, lda
	}
	// Batch strides (0 for a shared rank-2 operand), coalesced over the
	// three operands.
	nb := r - 2
	batchShape := cs[:nb]
	var str [maxOps][]int
	for i, t := range []*tensor.Tensor{out, A, B} {
		s := make([]int, nb)
		if t.Rank() == r {
			copy(s, t.Strides()[:nb])
		}
		str[i] = s
	}
	bl := stridedLayout(batchShape, 3, &str)
	nd := int(bl.nd)
	// The largest batch dimension goes to one strided-batched call; the
	// others (e.g. the heads of (B, N, H, D) storage viewed as (B, H, N, D))
	// are looped over.
	in := 0
	for j := range nd {
		if bl.dims[j] > bl.dims[in] {
			in = j
		}
	}
	inner := int(bl.dims[in])
	sC, sA, sB := int(bl.str[0][in]), int(bl.str[1][in]), int(bl.str[2][in])
	outer := int(bl.n) / max(inner, 1)
	es := c.DType().Size()
	pC, pA, pB := b.dptr(out), b.dptr(A), b.dptr(B)
	for o := range outer {
		// Offsets of outer batch o over the other dimensions.
		var oc, oa, ob int
		rem := o
		for j := nd - 1; j >= 0; j-- {
			if j == in {
				continue
			}
			d := int(bl.dims[j])
			x := rem % d
			rem /= d
			oc += x * int(bl.str[0][j])
			oa += x * int(bl.str[1][j])
			ob += x * int(bl.str[2][j])
		}
		for s := 0; s < inner; s += maxBatch {
			cnt := min(maxBatch, inner-s)
			b.gemmCall(c.DType(), opA, opB, M, N, k, alpha,
				pA+uintptr((oa+s*sA)*es), lA, sA,
				pB+uintptr((ob+s*sB)*es), lB, sB, beta,
				pC+uintptr((oc+s*sC)*es), ldc, sC, cnt)
		}
	}
	b.finishDst(c, out)
}

// maxBatch bounds the batch count of one cuBLAS call.
const maxBatch = 65535

// gemmCall computes, for each of count batches, the row-major
// C(M×N) = alpha·op(A)·op(B) + beta·C with leading dimensions lA, lB, ldc
// and batch strides sA, sB, sC (elements), as the column-major
// Cᵀ = op(B)ᵀ·op(A)ᵀ.
func (b *Backend) gemmCall(dt tensor.DType, opA, opB bool, M, N, K int, alpha float64,
	pA uintptr, lA, sA int, pB uintptr, lB, sB int, beta float64, pC uintptr, ldc, sC, count int) {
	ta, tb := uintptr(cublasOpN), uintptr(cublasOpN)
	if opB {
		ta = cublasOpT
	}
	if opA {
		tb = cublasOpT
	}
	var fn uintptr
	var name string
	var pal, pbe uintptr
	if dt == tensor.Float32 {
		b.scal32[0], b.scal32[1] = float32(alpha), float32(beta)
		pal, pbe = uintptr(unsafe.Pointer(&b.scal32[0])), uintptr(unsafe.Pointer(&b.scal32[1]))
		fn, name = b.blas.sgemm, "cublasSgemm_v2"
		if count > 1 {
			fn, name = b.blas.sgemmStridedBatched, "cublasSgemmStridedBatched"
		}
	} else {
		b.scal[0], b.scal[1] = alpha, beta
		pal, pbe = uintptr(unsafe.Pointer(&b.scal[0])), uintptr(unsafe.Pointer(&b.scal[1]))
		fn, name = b.blas.dgemm, "cublasDgemm_v2"
		if count > 1 {
			fn, name = b.blas.dgemmStridedBatched, "cublasDgemmStridedBatched"
		}
	}
	var code int
	if count > 1 {
		code = call(fn, b.handle, ta, tb, uintptr(N), uintptr(M), uintptr(K), pal,
			pB, uintptr(lB), uintptr(sB), pA, uintptr(lA), uintptr(sA), pbe,
			pC, uintptr(ldc), uintptr(sC), uintptr(count))
	} else {
		code = call(fn, b.handle, ta, tb, uintptr(N), uintptr(M), uintptr(K), pal,
			pB, uintptr(lB), pA, uintptr(lA), pbe, pC, uintptr(ldc))
	}
	if err := b.blas.check(name, code); err != nil {
		panic(fmt.Errorf("%w (m=%d n=%d k=%d lda=%d ldb=%d ldc=%d batch=%d)", err, N, M, K, lB, lA, ldc, count))
	}
	if b.syncEach {
		if err := b.sync(); err != nil {
			panic(fmt.Errorf("%w (after %s)", err, name))
		}
	}
}
