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
	return tp.recordUnary(y, a, reshapeBackward)
}

// reshapeBackward reshapes the gradient back to x's shape (Reshape,
// Unsqueeze, Squeeze).
func reshapeBackward(tp *Tape, x, out *Var) {
	g := out.Grad
	owned := false
	if !g.IsContiguous() {
		g, owned = tp.contig(g), true
	}
	tp.addGrad(x, g.Reshape(x.Shape()...), owned)
}

// Transpose returns a view of a with axes i and j swapped.
func (tp *Tape) Transpose(a *Var, i, j int) *Var {
	tp.checkIn("Transpose", a)
	out, s := record(tp, a.Value.Transpose(i, j), tp.anyGrad(a, nil, nil), transposeKind)
	if s != nil {
		*s = transposeSaved{x: a, axis1: i, axis2: j}
	}
	return out
}

// transposeSaved is Transpose's backward state: out swaps axis1 and axis2
// of x (as the caller gave them, possibly negative).
type transposeSaved struct {
	x            *Var
	axis1, axis2 int
}

var transposeKind = newSavedKind[transposeSaved]()

func (s *transposeSaved) backward(tp *Tape, out *Var) {
	tp.addGrad(s.x, out.Grad.Transpose(s.axis1, s.axis2), false)
}

// Permute returns a view of a with axes reordered: axis k of the result is
// axis axes[k] of a.
func (tp *Tape) Permute(a *Var, axes ...int) *Var {
	tp.checkIn("Permute", a)
	if len(axes) != a.Rank() {
		panic(fmt.Sprintf("autograd.Permute: %d axes for a tensor of shape %v", len(axes), a.Shape()))
	}
	out, s := record(tp, a.Value.Permute(axes...), tp.anyGrad(a, nil, nil), permuteKind)
	if s != nil {
		inv := make([]int, len(axes))
		for k, ax := range axes {
			inv[normAxis("Permute", ax, len(axes))] = k
		}
		*s = permuteSaved{x: a, inverse: inv}
	}
	return out
}

// permuteSaved is Permute's backward state: inverse is the permutation that
// undoes the forward's (axis axes[k] of x is axis k of out).
type permuteSaved struct {
	x       *Var
	inverse []int
}

var permuteKind = newSavedKind[permuteSaved]()

func (s *permuteSaved) backward(tp *Tape, out *Var) {
	tp.addGrad(s.x, out.Grad.Permute(s.inverse...), false)
}

// Slice returns the view a[..., start:end, ...] along axis.
func (tp *Tape) Slice(a *Var, axis, start, end int) *Var {
	tp.checkIn("Slice", a)
	ax := normAxis("Slice", axis, a.Rank())
	out, s := record(tp, a.Value.Slice(ax, start, end), tp.anyGrad(a, nil, nil), sliceKind)
	if s != nil {
		*s = sliceSaved{x: a, axis: ax, start: start, end: end}
	}
	return out
}

// sliceSaved is Slice's backward state: out = x[start:end] along axis.
type sliceSaved struct {
	x                *Var
	axis, start, end int
}

var sliceKind = newSavedKind[sliceSaved]()

// backward places the output gradient in a zero tensor.
func (s *sliceSaved) backward(tp *Tape, out *Var) {
	if !s.x.requiresGrad {
		return
	}
	dst := tp.gradZeroDst(s.x)
	part := dst.Slice(s.axis, s.start, s.end)
	tensor.Add(part, part, out.Grad)
	tp.doneGrad(s.x)
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
	out, s := record(tp, y, grad && !tp.noGrad, concatKind)
	if s != nil {
		*s = concatSaved{inputs: append([]*Var(nil), vs...), axis: ax}
	}
	return out
}

// concatSaved is Concat's backward state: out joins inputs along axis.
type concatSaved struct {
	inputs []*Var
	axis   int
}

var concatKind = newSavedKind[concatSaved]()

// backward hands each input its slice of the output gradient (a view).
func (s *concatSaved) backward(tp *Tape, out *Var) {
	off := 0
	for _, v := range s.inputs {
		size := v.Dim(s.axis)
		if v.requiresGrad {
			tp.addGrad(v, out.Grad.Slice(s.axis, off, off+size), false)
		}
		off += size
	}
}

// Expand returns a broadcast view of a with the given shape (numpy rules;
// new axes in front, size-1 axes stretched).
func (tp *Tape) Expand(a *Var, shape ...int) *Var {
	tp.checkIn("Expand", a)
	return tp.recordUnary(a.Value.Expand(shape...), a, expandBackward)
}

// expandBackward sums the gradient back down to x's shape.
func expandBackward(tp *Tape, x, out *Var) { tp.reduceGrad(x, out.Grad, false) }

// Unsqueeze returns a view of a with a size-1 axis inserted at axis.
func (tp *Tape) Unsqueeze(a *Var, axis int) *Var {
	tp.checkIn("Unsqueeze", a)
	return tp.recordUnary(a.Value.Unsqueeze(axis), a, reshapeBackward)
}

// Squeeze returns a view of a with the size-1 axis removed.
func (tp *Tape) Squeeze(a *Var, axis int) *Var {
	tp.checkIn("Squeeze", a)
	return tp.recordUnary(a.Value.Squeeze(axis), a, reshapeBackward)
}

// Contiguous returns a itself if its value is contiguous, otherwise a
// contiguous copy.
func (tp *Tape) Contiguous(a *Var) *Var {
	tp.checkIn("Contiguous", a)
	if a.Value.IsContiguous() {
		return a
	}
	y := tensor.Copy(tp.alloc(a.Value, a.Shape()...), a.Value)
	return tp.recordUnary(y, a, addScalarBackward)
}
