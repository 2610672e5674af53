package autograd

import (
	"fmt"

	"lgflow/tensor"
)

// Binary elementwise ops with numpy broadcasting. The gradient with respect
// to a broadcast input is summed back down to its shape (tensor.SumTo).

// broadcastShape returns the numpy broadcast of two shapes, panicking with the
// op name if they do not broadcast.
func broadcastShape(op string, a, b []int) []int {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := 0; i < n; i++ {
		da, db := 1, 1
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			panic(fmt.Sprintf("autograd.%s: shapes %v and %v do not broadcast", op, a, b))
		}
	}
	return out
}

// checkDType panics if a and b have different dtypes.
func checkDType(op string, a, b *tensor.Tensor) {
	if a.DType() != b.DType() {
		panic(fmt.Sprintf("autograd.%s: dtypes %v and %v differ", op, a.DType(), b.DType()))
	}
}

// binaryOut validates two inputs and allocates their broadcast result.
func (tp *Tape) binaryOut(op string, a, b *Var) *tensor.Tensor {
	tp.checkIn(op, a)
	tp.checkIn(op, b)
	checkDType(op, a.Value, b.Value)
	if sameShape(a.Shape(), b.Shape()) {
		return tp.alloc(a.Value, a.Shape()...)
	}
	return tp.alloc(a.Value, broadcastShape(op, a.Shape(), b.Shape())...)
}

// reduceGrad adds g (the output's shape) to v's gradient, summing over the
// axes along which v was broadcast.
func (tp *Tape) reduceGrad(v *Var, g *tensor.Tensor, owned bool) {
	if !v.requiresGrad {
		return
	}
	if sameShape(v.Shape(), g.Shape()) {
		tp.addGrad(v, g, owned)
		return
	}
	r := tp.alloc(v.Value, v.Shape()...)
	tensor.SumTo(r, g)
	tp.addGrad(v, r, true)
}

// Add returns a + b (broadcasting).
func (tp *Tape) Add(a, b *Var) *Var {
	y := tensor.Add(tp.binaryOut("Add", a, b), a.Value, b.Value)
	return tp.recordBinary(y, a, b, addBackward)
}

func addBackward(tp *Tape, lhs, rhs, out *Var) {
	gy := out.Grad
	tp.reduceGrad(lhs, gy, false)
	tp.reduceGrad(rhs, gy, false)
}

// Sub returns a − b (broadcasting).
func (tp *Tape) Sub(a, b *Var) *Var {
	y := tensor.Sub(tp.binaryOut("Sub", a, b), a.Value, b.Value)
	return tp.recordBinary(y, a, b, subBackward)
}

func subBackward(tp *Tape, lhs, rhs, out *Var) {
	gy := out.Grad
	tp.reduceGrad(lhs, gy, false)
	if rhs.requiresGrad {
		g := tensor.Neg(tp.alloc(gy, gy.Shape()...), gy)
		tp.reduceGrad(rhs, g, true)
	}
}

// Mul returns the elementwise product a ⊙ b (broadcasting).
func (tp *Tape) Mul(a, b *Var) *Var {
	y := tensor.Mul(tp.binaryOut("Mul", a, b), a.Value, b.Value)
	return tp.recordBinary(y, a, b, mulBackward)
}

func mulBackward(tp *Tape, lhs, rhs, out *Var) {
	gy := out.Grad
	if lhs.requiresGrad {
		g := tensor.Mul(tp.alloc(gy, gy.Shape()...), gy, rhs.Value)
		tp.reduceGrad(lhs, g, true)
	}
	if rhs.requiresGrad {
		g := tensor.Mul(tp.alloc(gy, gy.Shape()...), gy, lhs.Value)
		tp.reduceGrad(rhs, g, true)
	}
}

// Div returns the elementwise quotient a / b (broadcasting).
func (tp *Tape) Div(a, b *Var) *Var {
	y := tensor.Div(tp.binaryOut("Div", a, b), a.Value, b.Value)
	return tp.recordBinary(y, a, b, divBackward)
}

// d(num/den)/dnum = 1/den, d(num/den)/dden = −(num/den)/den.
func divBackward(tp *Tape, num, den, out *Var) {
	gy := out.Grad
	if num.requiresGrad {
		g := tensor.Div(tp.alloc(gy, gy.Shape()...), gy, den.Value)
		tp.reduceGrad(num, g, true)
	}
	if den.requiresGrad {
		g := tp.alloc(gy, gy.Shape()...)
		tensor.Mul(g, gy, out.Value)
		tensor.Div(g, g, den.Value)
		tensor.Neg(g, g)
		tp.reduceGrad(den, g, true)
	}
}

// AddScalar returns a + s.
func (tp *Tape) AddScalar(a *Var, s float64) *Var {
	tp.checkIn("AddScalar", a)
	y := tensor.AddScalar(tp.alloc(a.Value, a.Shape()...), a.Value, s)
	return tp.recordUnary(y, a, addScalarBackward)
}

// addScalarBackward passes the gradient through unchanged (shared).
func addScalarBackward(tp *Tape, x, out *Var) { tp.addGrad(x, out.Grad, false) }

// MulScalar returns s·a.
func (tp *Tape) MulScalar(a *Var, s float64) *Var {
	tp.checkIn("MulScalar", a)
	y := tensor.MulScalar(tp.alloc(a.Value, a.Shape()...), a.Value, s)
	out, st := record(tp, y, tp.anyGrad(a, nil, nil), mulScalarKind)
	if st != nil {
		*st = mulScalarSaved{x: a, factor: s}
	}
	return out
}

// mulScalarSaved is MulScalar's backward state: out = factor·x.
type mulScalarSaved struct {
	x      *Var
	factor float64
}

var mulScalarKind = newSavedKind[mulScalarSaved]()

func (s *mulScalarSaved) backward(tp *Tape, out *Var) {
	gy := out.Grad
	tp.addGrad(s.x, tensor.MulScalar(tp.alloc(gy, gy.Shape()...), gy, s.factor), true)
}
