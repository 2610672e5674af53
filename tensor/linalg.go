package tensor

// gemmShapes validates the operands of Gemm and returns the result shape.
func gemmShapes(name string, a, b *Tensor, transA, transB bool) (m, n, k int, batch []int) {
	ra, rb := len(a.shape), len(b.shape)
	if ra < 2 || rb < 2 {
		fail(ErrShape, name, "shapes %v and %v: operands need rank >= 2", a.shape, b.shape)
	}
	m, k = a.shape[ra-2], a.shape[ra-1]
	if transA {
		m, k = k, m
	}
	kb, nb := b.shape[rb-2], b.shape[rb-1]
	if transB {
		kb, nb = nb, kb
	}
	if k != kb {
		fail(ErrShape, name, "shapes %v and %v (transA %v, transB %v): inner dimensions %d and %d differ", a.shape, b.shape, transA, transB, k, kb)
	}
	switch {
	case ra == rb:
		if !sameShape(a.shape[:ra-2], b.shape[:rb-2]) {
			fail(ErrShape, name, "shapes %v and %v: batch dimensions differ", a.shape, b.shape)
		}
		batch = a.shape[:ra-2]
	case rb == 2:
		batch = a.shape[:ra-2]
	case ra == 2:
		batch = b.shape[:rb-2]
	default:
		fail(ErrShape, name, "shapes %v and %v: batch ranks differ", a.shape, b.shape)
	}
	return m, nb, k, batch
}

// MatMul sets dst = op(a)·op(b), with op the transpose of the last two axes
// when transA/transB is set, and returns dst. a is (..., m, k) and b is
// (..., k, n) after op; the leading batch dimensions are equal, or one
// operand has rank 2 and is shared by every batch. dst is (..., m, n); nil
// allocates. dst must not overlap a or b. Transposed views of contiguous
// tensors are used in place, without copying.
func MatMul(dst, a, b *Tensor, transA, transB bool) *Tensor {
	return gemmOp("MatMul", dst, 1, a, b, transA, transB, 0)
}

// Gemm sets dst = alpha·op(a)·op(b) + beta·dst (see MatMul for shapes) and
// returns dst. dst may be nil only when beta == 0; when beta == 0, dst's
// previous contents are ignored. Float32 products run on the assembly
// kernels of package internal/gemm and use every core.
func Gemm(dst *Tensor, alpha float64, a, b *Tensor, transA, transB bool, beta float64) *Tensor {
	return gemmOp("Gemm", dst, alpha, a, b, transA, transB, beta)
}

// GemmBias sets dst = alpha·op(a)·op(b) + bias and returns dst: the forward
// pass of a linear layer, with bias of shape (n,) added to every row (see
// MatMul for the other shapes). dst may be nil; its previous contents are
// ignored. The result equals Copy(dst, bias) followed by Gemm with beta = 1;
// on the CPU the kernels add bias to each tile of dst while it is in cache
// instead of in a separate pass over dst.
func GemmBias(dst *Tensor, alpha float64, a, b *Tensor, transA, transB bool, bias *Tensor) *Tensor {
	const name = "GemmBias"
	be := pickBackend(name, dst, a, b, bias)
	sameDType(name, a.dtype, b, bias)
	_, n, _, _ := gemmShapes(name, a, b, transA, transB)
	if len(bias.shape) != 1 || bias.shape[0] != n {
		fail(ErrShape, name, "bias shape %v for %d output columns (operands %v and %v, transA %v, transB %v)", bias.shape, n, a.shape, b.shape, transA, transB)
	}
	dst = gemmDst(name, be, dst, a, b, transA, transB)
	if dst.Size() > 0 {
		be.GemmBias(dst, alpha, a, b, transA, transB, bias)
	}
	return dst
}

func gemmOp(name string, dst *Tensor, alpha float64, a, b *Tensor, transA, transB bool, beta float64) *Tensor {
	be := pickBackend(name, dst, a, b)
	sameDType(name, a.dtype, b)
	if dst == nil && beta != 0 {
		fail(ErrShape, name, "dst is nil with beta = %v", beta)
	}
	dst = gemmDst(name, be, dst, a, b, transA, transB)
	if dst.Size() > 0 {
		be.Gemm(dst, alpha, a, b, transA, transB, beta)
	}
	return dst
}

// gemmDst checks the shapes of a product's operands and returns dst, or a
// new tensor on be when dst is nil, after checking that it has the
// product's shape and a's dtype.
func gemmDst(name string, be Backend, dst, a, b *Tensor, transA, transB bool) *Tensor {
	m, n, _, batch := gemmShapes(name, a, b, transA, transB)
	if dst == nil {
		shape := append(cloneInts(batch), m, n)
		return EmptyOn(be, a.dtype, shape...)
	}
	ok := dst.dtype == a.dtype && len(dst.shape) == len(batch)+2 &&
		dst.shape[len(batch)] == m && dst.shape[len(batch)+1] == n && sameShape(dst.shape[:len(batch)], batch)
	if !ok {
		fail(ErrShape, name, "dst shape %v (%v) for operands %v and %v (transA %v, transB %v)", dst.shape, dst.dtype, a.shape, b.shape, transA, transB)
	}
	return dst
}
