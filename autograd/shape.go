package autograd

import (
	"fmt"

	"lgflow/tensor"
)

// Shape ops. Forward results are views of the input wherever the tensor
// package gives views; backward passes hand the output gradient back as a
// view too (shared, copied only if accumulated into).

// Reshape returns a with a new shape (one axis may be −1). It is a view when
// a is contiguous, otherwise a copy.
func (tp *Tape) Reshape(a *Var, shape ...int) *Var {
	tp.checkIn("Reshape", a)
	y := tp.contig(a.Value).Reshape(shape...)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), reshapeBackward)
	if n != nil {
		n.a = a
	}
	return out
}

func reshapeBackward(tp *Tape, n *node) {
	g := n.out.Grad
	owned := false
	if !g.IsContiguous() {
		g, owned = tp.contig(g), true
	}
	tp.addGrad(n.a, g.Reshape(n.a.Shape()...), owned)
}

// Transpose returns a view of a with axes i and j swapped.
func (tp *Tape) Transpose(a *Var, i, j int) *Var {
	tp.checkIn("Transpose", a)
	out, n := tp.out(a.Value.Transpose(i, j), tp.anyGrad(a, nil, nil), transposeBackward)
	if n != nil {
		n.a, n.i0, n.i1 = a, i, j
	}
	return out
}

func transposeBackward(tp *Tape, n *node) {
	tp.addGrad(n.a, n.out.Grad.Transpose(n.i0, n.i1), false)
}

// Permute returns a view of a with axes reordered: axis k of the result is
// axis axes[k] of a.
func (tp *Tape) Permute(a *Var, axes ...int) *Var {
	tp.checkIn("Permute", a)
	if len(axes) != a.Rank() {
		panic(fmt.Sprintf("autograd.Permute: %d axes for a tensor of shape %v", len(axes), a.Shape()))
	}
	out, n := tp.out(a.Value.Permute(axes...), tp.anyGrad(a, nil, nil), permuteBackward)
	if n != nil {
		n.a = a
		inv := make([]int, len(axes))
		for k, ax := range axes {
			inv[normAxis("Permute", ax, len(axes))] = k
		}
		n.shape = inv
	}
	return out
}

func permuteBackward(tp *Tape, n *node) {
	tp.addGrad(n.a, n.out.Grad.Permute(n.shape...), false)
}

// Slice returns the view a[..., start:end, ...] along axis.
func (tp *Tape) Slice(a *Var, axis, start, end int) *Var {
	tp.checkIn("Slice", a)
	ax := normAxis("Slice", axis, a.Rank())
	out, n := tp.out(a.Value.Slice(ax, start, end), tp.anyGrad(a, nil, nil), sliceBackward)
	if n != nil {
		n.a, n.i0, n.i1, n.i2 = a, ax, start, end
	}
	return out
}

// The gradient of a slice is the output gradient placed in a zero tensor.
func sliceBackward(tp *Tape, n *node) {
	if !n.a.requiresGrad {
		return
	}
	dst := tp.gradZeroDst(n.a)
	part := dst.Slice(n.i0, n.i1, n.i2)
	tensor.Add(part, part, n.out.Grad)
	tp.doneGrad(n.a)
}

// Split cuts a along axis into consecutive views of the given sizes, which
// must sum to a's size along axis.
func (tp *Tape) Split(a *Var, axis int, sizes ...int) []*Var {
	ax := normAxis("Split", axis, a.Rank())
	total := 0
	for _, s := range sizes {
		total += s
	}
	if total != a.Dim(ax) {
		panic(fmt.Sprintf("autograd.Split: sizes %v do not sum to dimension %d of %v", sizes, ax, a.Shape()))
	}
	outs := make([]*Var, len(sizes))
	off := 0
	for i, s := range sizes {
		outs[i] = tp.Slice(a, ax, off, off+s)
		off += s
	}
	return outs
}

// Concat joins vs along axis; all other axes must agree.
func (tp *Tape) Concat(axis int, vs ...*Var) *Var {
	if len(vs) == 0 {
		panic("autograd.Concat: no inputs")
	}
	ax := normAxis("Concat", axis, vs[0].Rank())
	shape := append([]int(nil), vs[0].Shape()...)
	shape[ax] = 0
	ts := make([]*tensor.Tensor, len(vs))
	grad := false
	for i, v := range vs {
		tp.checkIn("Concat", v)
		checkDType("Concat", vs[0].Value, v.Value)
		s := v.Shape()
		if len(s) != len(shape) {
			panic(fmt.Sprintf("autograd.Concat: shapes %v and %v differ in rank", vs[0].Shape(), s))
		}
		for j := range s {
			if j != ax && s[j] != shape[j] {
				panic(fmt.Sprintf("autograd.Concat: shapes %v and %v differ off axis %d", vs[0].Shape(), s, ax))
			}
		}
		shape[ax] += s[ax]
		ts[i] = v.Value
		grad = grad || v.requiresGrad
	}
	y := tensor.Concat(tp.alloc(vs[0].Value, shape...), ax, ts...)
	out, n := tp.out(y, grad && !tp.noGrad, concatBackward)
	if n != nil {
		n.vs = append([]*Var(nil), vs...)
		n.i0 = ax
	}
	return out
}

func concatBackward(tp *Tape, n *node) {
	off := 0
	for _, v := range n.vs {
		s := v.Dim(n.i0)
		if v.requiresGrad {
			tp.addGrad(v, n.out.Grad.Slice(n.i0, off, off+s), false)
		}
		off += s
	}
}

// Expand returns a broadcast view of a with the given shape (numpy rules;
// new axes in front, size-1 axes stretched).
func (tp *Tape) Expand(a *Var, shape ...int) *Var {
	tp.checkIn("Expand", a)
	out, n := tp.out(a.Value.Expand(shape...), tp.anyGrad(a, nil, nil), expandBackward)
	if n != nil {
		n.a = a
	}
	return out
}

func expandBackward(tp *Tape, n *node) { tp.reduceGrad(n.a, n.out.Grad, false) }

// Unsqueeze returns a view of a with a size-1 axis inserted at axis.
func (tp *Tape) Unsqueeze(a *Var, axis int) *Var {
	tp.checkIn("Unsqueeze", a)
	out, n := tp.out(a.Value.Unsqueeze(axis), tp.anyGrad(a, nil, nil), reshapeBackward)
	if n != nil {
		n.a = a
	}
	return out
}

// Squeeze returns a view of a with the size-1 axis removed.
func (tp *Tape) Squeeze(a *Var, axis int) *Var {
	tp.checkIn("Squeeze", a)
	out, n := tp.out(a.Value.Squeeze(axis), tp.anyGrad(a, nil, nil), reshapeBackward)
	if n != nil {
		n.a = a
	}
	return out
}

// Contiguous returns a itself if its value is contiguous, otherwise a
// contiguous copy.
func (tp *Tape) Contiguous(a *Var) *Var {
	tp.checkIn("Contiguous", a)
	if a.Value.IsContiguous() {
		return a
	}
	y := tensor.Copy(tp.alloc(a.Value, a.Shape()...), a.Value)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), addScalarBackward)
	if n != nil {
		n.a = a
	}
	return out
}
