package tensor

import (
	"unsafe"

	"lgflow/tensor/internal/gemm"
)

// GEMMKernel reports which float32 micro-kernel MatMul uses on this machine:
// "avx512", "avx2" or "go" (portable; always so under the noasm build tag).
func GEMMKernel() string { return gemm.Kernel() }

// matLayout returns how a rows×cols matrix with strides (sr, sc) is passed
// to a row-major GEMM: flip reports that its memory holds the transpose
// row-major, ld is the row stride of what is passed, and ok is false when
// neither layout fits (the matrix must be copied).
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

func matOf(t *Tensor) (flip bool, ld int, ok bool) {
	r := len(t.shape)
	return matLayout(t.shape[r-2], t.shape[r-1], t.strides[r-2], t.strides[r-1])
}

func (cpuBackend) Gemm(dst *Tensor, alpha float64, a, b *Tensor, transA, transB bool, beta float64) {
	cpuGemm(dst, alpha, a, b, transA, transB, beta, nil)
}

// GemmBias sets dst = alpha·op(a)·op(b) + bias. A contiguous bias reaches
// the GEMM kernels, which add it to each tile of dst while it is in cache;
// other layouts (and a dst stored transposed) are copied into dst first.
func (cpuBackend) GemmBias(dst *Tensor, alpha float64, a, b *Tensor, transA, transB bool, bias *Tensor) {
	fc, _, ok := matOf(dst)
	if !bias.IsContiguous() || fc || !ok || len(dst.shape)-2 > maxDims || a.Size() == 0 || b.Size() == 0 || alpha == 0 {
		CPU.Copy(dst, bias)
		cpuGemm(dst, alpha, a, b, transA, transB, 1, nil)
		return
	}
	cpuGemm(dst, alpha, a, b, transA, transB, 0, bias)
}

// cpuGemm is Gemm; a non-nil bias (then beta == 0, dst not stored
// transposed and not copied, k > 0, alpha != 0) is added to every row.
func cpuGemm(dst *Tensor, alpha float64, a, b *Tensor, transA, transB bool, beta float64, bias *Tensor) {
	if a.Size() == 0 || b.Size() == 0 || alpha == 0 {
		// k == 0 (dst is not empty): the product is zero.
		if beta == 0 {
			CPU.Fill(dst, 0)
		} else {
			CPU.Unary(UnaryAffine, dst, dst, beta, 0)
		}
		return
	}
	fa, lda, ok := matOf(a)
	if !ok {
		a = a.Clone()
		fa, lda, _ = matOf(a)
	}
	fb, ldb, ok := matOf(b)
	if !ok {
		b = b.Clone()
		fb, ldb, _ = matOf(b)
	}
	fc, ldc, ok := matOf(dst)
	out := dst
	if !ok || len(dst.shape)-2 > maxDims {
		out = dst.NewLike()
		if beta != 0 {
			CPU.Copy(out, dst)
		}
		fc, ldc, _ = matOf(out)
	}
	r := len(out.shape)
	m, n := out.shape[r-2], out.shape[r-1]
	k := a.shape[len(a.shape)-1]
	if transA {
		k = a.shape[len(a.shape)-2]
	}
	j := getJob(pick(dst.dtype, gemmRange[float32], gemmRange[float64]))
	if len(b.shape) == 2 && r > 2 && !transA && !fa && !fc {
		// A shared right operand (a Linear layer on (batch..., m, k)
		// inputs): when the rows of every batch are equally spaced in a
		// and dst, multiply all batches as one tall matrix.
		var strs [4][maxDims]int
		for i := range r - 1 {
			strs[0][i], strs[1][i] = out.strides[i], a.strides[i]
		}
		l := &j.l
		l.setupStrides(out.shape[:r-1], 2, &strs, [4]int{out.offset, a.offset})
		if l.nd == 1 {
			rows, ldcT, ldaT := l.size, l.str[0][0], l.str[1][0]
			if rows == 1 {
				ldcT, ldaT = max(n, 1), max(k, 1)
			}
			j.t[0], j.t[1], j.t[2], j.t[3] = out, a, b, bias
			j.b[0], j.b[1] = false, transB != fb
			j.n[0], j.n[1], j.n[2], j.n[3], j.n[4], j.n[5] = rows, n, k, ldaT, ldb, ldcT
			j.f[0], j.f[1] = alpha, beta
			l.setupStrides(nil, 3, &strs, [4]int{out.offset, a.offset, b.offset})
			j.run(1, 1)
			putJob(j)
			if out != dst {
				CPU.Copy(dst, out)
			}
			return
		}
	}
	j.t[0], j.t[1], j.t[2], j.t[3] = out, a, b, bias
	j.b[0], j.b[1] = transA != fa, transB != fb
	j.n[0], j.n[1], j.n[2], j.n[3], j.n[4], j.n[5] = m, n, k, lda, ldb, ldc
	j.f[0], j.f[1] = alpha, beta
	if fc {
		// C is stored transposed: compute Cᵀ = op(B)ᵀ·op(A)ᵀ.
		j.t[1], j.t[2] = b, a
		j.b[0], j.b[1] = !(transB != fb), !(transA != fa)
		j.n[0], j.n[1], j.n[3], j.n[4] = n, m, ldb, lda
	}
	// Batch offsets.
	nbd := r - 2
	var strs [4][maxDims]int
	for i := range nbd {
		strs[0][i] = out.strides[i]
		if len(j.t[1].shape) == r {
			strs[1][i] = j.t[1].strides[i]
		}
		if len(j.t[2].shape) == r {
			strs[2][i] = j.t[2].strides[i]
		}
	}
	j.l.setupStrides(out.shape[:nbd], 3, &strs, [4]int{out.offset, j.t[1].offset, j.t[2].offset})
	work := max(m*n*k, 1)
	grain := j.l.size // one chunk: each product uses gemm's own threads
	if work < 1<<18 {
		grain = max(1, (1<<18)/work)
	}
	j.run(j.l.size, grain)
	putJob(j)
	if out != dst {
		CPU.Copy(dst, out)
	}
}

func gemmRange[T float](j *job, lo, hi int) {
	c, a, b := data[T](j.t[0]), data[T](j.t[1]), data[T](j.t[2])
	var bias []T
	if j.t[3] != nil {
		bias = data[T](j.t[3])[j.t[3].offset:]
	}
	tA, tB := j.b[0], j.b[1]
	m, n, k, lda, ldb, ldc := j.n[0], j.n[1], j.n[2], j.n[3], j.n[4], j.n[5]
	l := &j.l
	var cur cursor
	l.seek(&cur, lo)
	for pos := lo; pos < hi; pos++ {
		oc, oa, ob := cur.off[0], cur.off[1], cur.off[2]
		var z T
		switch {
		case unsafe.Sizeof(z) == 4 && bias != nil:
			gemm.SgemmBias(tA, tB, m, n, k, float32(j.f[0]), f32s(a[oa:]), lda, f32s(b[ob:]), ldb, f32s(bias), f32s(c[oc:]), ldc)
		case unsafe.Sizeof(z) == 4:
			gemm.Sgemm(tA, tB, m, n, k, float32(j.f[0]), f32s(a[oa:]), lda, f32s(b[ob:]), ldb, float32(j.f[1]), f32s(c[oc:]), ldc)
		case bias != nil:
			gemm.DgemmBias(tA, tB, m, n, k, j.f[0], f64s(a[oa:]), lda, f64s(b[ob:]), ldb, f64s(bias), f64s(c[oc:]), ldc)
		default:
			gemm.Dgemm(tA, tB, m, n, k, j.f[0], f64s(a[oa:]), lda, f64s(b[ob:]), ldb, j.f[1], f64s(c[oc:]), ldc)
		}
		if pos+1 < hi {
			l.advance(&cur, 1)
		}
	}
}

func f32s[T float](s []T) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

func f64s[T float](s []T) []float64 {
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}
