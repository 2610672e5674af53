package autograd

import (
	"fmt"

	"lgflow/tensor"
)

// Matrix products through tensor.Gemm. Backward passes write or accumulate
// (beta = 1) straight into the gradient buffers, so no temporary is needed.

// operand returns a tensor equal to op(t) (t transposed if trans) that Gemm
// can read without a copy: t itself if contiguous, the storage of a
// transposed view with the flag flipped, or a contiguous copy.
func operand(t *tensor.Tensor, trans bool) (*tensor.Tensor, bool) {
	if t.IsContiguous() {
		return t, trans
	}
	if t.Rank() >= 2 {
		if u := t.Transpose(-2, -1); u.IsContiguous() {
			return u, !trans
		}
	}
	return t.Contiguous(), trans
}

// opDims returns (rows, cols) of op(t) for the last two axes.
func opDims(t *tensor.Tensor, trans bool) (int, int) {
	r, c := t.Dim(-2), t.Dim(-1)
	if trans {
		return c, r
	}
	return r, c
}

// MatMul returns op(a)·op(b), where op transposes the last two axes when the
// flag is set. a is (..., m, k) and b (..., k, n) with equal batch axes, or a
// is batched and b rank 2 (shared by every batch element). Transposed views
// are read without copying.
func (tp *Tape) MatMul(a, b *Var, transA, transB bool) *Var {
	tp.checkIn("MatMul", a)
	tp.checkIn("MatMul", b)
	checkDType("MatMul", a.Value, b.Value)
	if a.Rank() < 2 || b.Rank() < 2 {
		panic(fmt.Sprintf("autograd.MatMul: operands must have rank >= 2, got %v and %v", a.Shape(), b.Shape()))
	}
	if b.Rank() == 2 && a.Rank() > 2 && !transA {
		// Shared right operand: fold the batch into the rows (one big GEMM).
		shape := a.Shape()
		a2 := tp.Reshape(a, -1, shape[len(shape)-1])
		y := tp.MatMul(a2, b, false, transB)
		outShape := append(append([]int(nil), shape[:len(shape)-1]...), y.Dim(1))
		return tp.Reshape(y, outShape...)
	}
	if b.Rank() != 2 && b.Rank() != a.Rank() {
		panic(fmt.Sprintf("autograd.MatMul: shapes %v and %v: b must be rank 2 or have a's batch axes", a.Shape(), b.Shape()))
	}
	if b.Rank() == 2 && a.Rank() > 2 {
		panic(fmt.Sprintf("autograd.MatMul: shapes %v and %v: a shared rank-2 b needs transA=false", a.Shape(), b.Shape()))
	}
	m, k := opDims(a.Value, transA)
	k2, nn := opDims(b.Value, transB)
	if k != k2 {
		panic(fmt.Sprintf("autograd.MatMul: shapes %v (transA=%v) and %v (transB=%v): inner dimensions %d and %d differ", a.Shape(), transA, b.Shape(), transB, k, k2))
	}
	shape := make([]int, a.Rank())
	copy(shape, a.Shape())
	for i := 0; i < a.Rank()-2; i++ {
		if b.Dim(i) != shape[i] {
			panic(fmt.Sprintf("autograd.MatMul: batch axes of %v and %v differ", a.Shape(), b.Shape()))
		}
	}
	shape[len(shape)-2], shape[len(shape)-1] = m, nn
	ae, ta := operand(a.Value, transA)
	be, tb := operand(b.Value, transB)
	y := tensor.Gemm(tp.alloc(a.Value, shape...), 1, ae, be, ta, tb, 0)
	out, n := tp.out(y, tp.anyGrad(a, b, nil), matmulBackward)
	if n != nil {
		n.a, n.b = a, b
		n.t0, n.t1 = ae, be
		n.i0, n.i1 = b2i(ta), b2i(tb)
		n.i2 = b2i(transA) | b2i(transB)<<1
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// matmulBackward: for C = op(A)·op(B),
//
//	dA = dC·op(B)ᵀ        (or op(B)·dCᵀ when A was transposed)
//	dB = op(A)ᵀ·dC        (or dCᵀ·op(A) when B was transposed)
//
// with op(A), op(B) read from the saved operands (t0, i0) and (t1, i1).
func matmulBackward(tp *Tape, n *node) {
	gy, tg := operand(n.out.Grad, false)
	transA, transB := n.i2&1 != 0, n.i2&2 != 0
	ae, ta := n.t0, n.i0 != 0
	be, tb := n.t1, n.i1 != 0
	if n.a.requiresGrad {
		dst, beta := tp.gradDst(n.a)
		if transA {
			tensor.Gemm(dst, 1, be, gy, tb, !tg, beta)
		} else {
			tensor.Gemm(dst, 1, gy, be, tg, !tb, beta)
		}
		tp.doneGrad(n.a)
	}
	if n.b.requiresGrad {
		dst, beta := tp.gradDst(n.b)
		if transB {
			tensor.Gemm(dst, 1, gy, ae, !tg, ta, beta)
		} else {
			tensor.Gemm(dst, 1, ae, gy, !ta, tg, beta)
		}
		tp.doneGrad(n.b)
	}
}

// Linear returns x·wᵀ + b, the affine map of a linear layer. x is (..., in),
// w is (out, in) (PyTorch layout) and b is (out) or nil; the result is
// (..., out). The bias is written first and the GEMM accumulates onto it.
func (tp *Tape) Linear(x, w, b *Var) *Var {
	tp.checkIn("Linear", x)
	tp.checkIn("Linear", w)
	checkDType("Linear", x.Value, w.Value)
	if w.Rank() != 2 || x.Rank() < 1 || x.Dim(-1) != w.Dim(1) {
		panic(fmt.Sprintf("autograd.Linear: input %v and weight %v: want x (..., in), w (out, in)", x.Shape(), w.Shape()))
	}
	out, in := w.Dim(0), w.Dim(1)
	if b != nil {
		tp.checkIn("Linear", b)
		checkDType("Linear", x.Value, b.Value)
		if b.Rank() != 1 || b.Dim(0) != out {
			panic(fmt.Sprintf("autograd.Linear: bias %v does not match weight %v", b.Shape(), w.Shape()))
		}
	}
	xs := x.Shape()
	rows := x.Size() / in
	x2 := tp.contig(x.Value).Reshape(rows, in)
	yShape := append(append(make([]int, 0, len(xs)), xs[:len(xs)-1]...), out)
	y := tp.alloc(x.Value, yShape...)
	y2 := y.Reshape(rows, out)
	beta := 0.0
	if b != nil {
		tensor.Copy(y2, b.Value)
		beta = 1
	}
	we, tw := operand(w.Value, true)
	tensor.Gemm(y2, 1, x2, we, false, tw, beta)
	res, n := tp.out(y, tp.anyGrad(x, w, b), linearBackward)
	if n != nil {
		n.a, n.b, n.c = x, w, b
		n.t0, n.t1 = x2, we
		n.i0 = b2i(tw)
	}
	return res
}

// linearBackward: with y = x·wᵀ + b on rows,
// dx = dy·w, dw += dyᵀ·x, db += Σ_rows dy.
func linearBackward(tp *Tape, n *node) {
	x, w, b := n.a, n.b, n.c
	out, in := w.Dim(0), w.Dim(1)
	rows := x.Size() / in
	gy := tp.contig(n.out.Grad).Reshape(rows, out)
	if x.requiresGrad {
		dst, beta := tp.gradDst(x)
		// op(we) = wᵀ, so w = op(we)ᵀ: read we with the flag flipped.
		tensor.Gemm(dst.Reshape(rows, in), 1, gy, n.t1, false, n.i0 == 0, beta)
		tp.doneGrad(x)
	}
	if w.requiresGrad {
		dst, beta := tp.gradDst(w)
		tensor.Gemm(dst, 1, gy, n.t0, true, false, beta)
		tp.doneGrad(w)
	}
	if b != nil && b.requiresGrad {
		db := tensor.Sum(tp.alloc(b.Value, out), gy, 0, false)
		tp.addGrad(b, db, true)
	}
}
