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
	out, s := record(tp, y, tp.anyGrad(a, b, nil), matMulKind)
	if s != nil {
		*s = matMulSaved{
			lhs: a, rhs: b,
			lhsMat: ae, rhsMat: be,
			lhsMatT: ta, rhsMatT: tb,
			transLHS: transA, transRHS: transB,
		}
	}
	return out
}

// matMulSaved is MatMul's backward state, for out = op(lhs)·op(rhs).
type matMulSaved struct {
	lhs, rhs *Var // the factors, for their gradients
	// lhsMat and rhsMat hold op(lhs) and op(rhs) in a form Gemm reads
	// without copying (see operand): Gemm transposes lhsMat when lhsMatT
	// and rhsMat when rhsMatT. The backward reuses them.
	lhsMat, rhsMat   *tensor.Tensor
	lhsMatT, rhsMatT bool
	// transLHS and transRHS are the caller's flags (transA, transB): which
	// factor entered the product transposed.
	transLHS, transRHS bool
}

var matMulKind = newSavedKind[matMulSaved]()

// backward: for out = op(lhs)·op(rhs),
//
//	dlhs = dout·op(rhs)ᵀ    (or op(rhs)·doutᵀ when transLHS)
//	drhs = op(lhs)ᵀ·dout    (or doutᵀ·op(lhs) when transRHS)
//
// with op(lhs), op(rhs) read from the saved lhsMat and rhsMat.
func (s *matMulSaved) backward(tp *Tape, out *Var) {
	gy, tg := operand(out.Grad, false)
	if s.lhs.requiresGrad {
		dst, beta := tp.gradDst(s.lhs)
		if s.transLHS {
			tensor.Gemm(dst, 1, s.rhsMat, gy, s.rhsMatT, !tg, beta)
		} else {
			tensor.Gemm(dst, 1, gy, s.rhsMat, tg, !s.rhsMatT, beta)
		}
		tp.doneGrad(s.lhs)
	}
	if s.rhs.requiresGrad {
		dst, beta := tp.gradDst(s.rhs)
		if s.transRHS {
			tensor.Gemm(dst, 1, gy, s.lhsMat, !tg, s.lhsMatT, beta)
		} else {
			tensor.Gemm(dst, 1, s.lhsMat, gy, !s.lhsMatT, tg, beta)
		}
		tp.doneGrad(s.rhs)
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
	we, tw := operand(w.Value, true)
	if b != nil {
		tensor.GemmBias(y2, 1, x2, we, false, tw, b.Value)
	} else {
		tensor.Gemm(y2, 1, x2, we, false, tw, 0)
	}
	res, s := record(tp, y, tp.anyGrad(x, w, b), linearKind)
	if s != nil {
		*s = linearSaved{x: x, w: w, bias: b, xRows: x2, wMat: we, wMatT: tw}
	}
	return res
}

// linearSaved is Linear's backward state, for out = x·wᵀ + bias.
type linearSaved struct {
	x, w, bias *Var           // the inputs (bias may be nil), for their gradients
	xRows      *tensor.Tensor // x's value as a contiguous (rows, in) matrix
	// wMat holds wᵀ in a form Gemm reads without copying (see operand):
	// Gemm transposes it when wMatT.
	wMat  *tensor.Tensor
	wMatT bool
}

var linearKind = newSavedKind[linearSaved]()

// backward: with out = x·wᵀ + bias on rows,
// dx = dout·w, dw += doutᵀ·x, dbias += Σ_rows dout.
func (s *linearSaved) backward(tp *Tape, out *Var) {
	x, w, bias := s.x, s.w, s.bias
	nOut, nIn := w.Dim(0), w.Dim(1)
	rows := x.Size() / nIn
	gy := tp.contig(out.Grad).Reshape(rows, nOut)
	if x.requiresGrad {
		dst, beta := tp.gradDst(x)
		// op(wMat) = wᵀ, so w = op(wMat)ᵀ: read wMat with the flag flipped.
		tensor.Gemm(dst.Reshape(rows, nIn), 1, gy, s.wMat, false, !s.wMatT, beta)
		tp.doneGrad(x)
	}
	if w.requiresGrad {
		dst, beta := tp.gradDst(w)
		tensor.Gemm(dst, 1, gy, s.xRows, true, false, beta)
		tp.doneGrad(w)
	}
	if bias != nil && bias.requiresGrad {
		db := tensor.Sum(tp.alloc(bias.Value, nOut), gy, 0, false)
		tp.addGrad(bias, db, true)
	}
}
