package autograd

import (
	"fmt"

	"lgflow/tensor"
)

// MaskedFill returns a with the entries where mask != 0 replaced by v. mask
// is a constant that broadcasts to a's shape; no gradient flows to the
// filled entries.
func (tp *Tape) MaskedFill(a *Var, mask *tensor.Tensor, v float64) *Var {
	tp.checkIn("MaskedFill", a)
	y := tensor.MaskedFill(tp.alloc(a.Value, a.Shape()...), a.Value, mask, v)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), maskedFillBackward)
	if n != nil {
		n.a, n.t0 = a, mask
	}
	return out
}

func maskedFillBackward(tp *Tape, n *node) {
	g := tensor.MaskedFill(tp.gradBuf(n), n.out.Grad, n.t0, 0)
	tp.addGrad(n.a, g, true)
}

// Where returns cond != 0 ? a : b elementwise, with numpy broadcasting of all
// three; cond is a constant.
func (tp *Tape) Where(cond *tensor.Tensor, a, b *Var) *Var {
	tp.checkIn("Where", a)
	tp.checkIn("Where", b)
	checkDType("Where", a.Value, b.Value)
	shape := broadcastShape("Where", broadcastShape("Where", cond.Shape(), a.Shape()), b.Shape())
	y := tensor.Where(tp.alloc(a.Value, shape...), cond, a.Value, b.Value)
	out, n := tp.out(y, tp.anyGrad(a, b, nil), whereBackward)
	if n != nil {
		n.a, n.b, n.t0 = a, b, cond
	}
	return out
}

func whereBackward(tp *Tape, n *node) {
	gy := n.out.Grad
	if n.a.requiresGrad {
		// cond == 0 -> 0: MaskedFill with the inverted condition.
		g := tensor.Where(tp.gradBuf(n), n.t0, gy, tensor.Scalar(gy.DType(), 0))
		tp.reduceGrad(n.a, g, true)
	}
	if n.b.requiresGrad {
		g := tensor.MaskedFill(tp.gradBuf(n), gy, n.t0, 0)
		tp.reduceGrad(n.b, g, true)
	}
}

// Dropout zeroes each entry of a with probability p, drawn from r, and scales
// the kept ones by 1/(1−p) (inverted dropout). p = 0 returns a itself. The
// same seed gives the same mask. r must not be used concurrently.
func (tp *Tape) Dropout(a *Var, p float64, r *tensor.RNG) *Var {
	tp.checkIn("Dropout", a)
	if p < 0 || p >= 1 {
		panic(fmt.Sprintf("autograd.Dropout: p = %v outside [0, 1)", p))
	}
	if p == 0 {
		return a
	}
	if r == nil {
		panic("autograd.Dropout: nil RNG")
	}
	m := tp.allocDT(a.DType(), tensor.CPU, a.Shape()...)
	keep := 1 / (1 - p)
	if m.DType() == tensor.Float32 {
		d := m.Data32()
		for i := range d {
			if r.Uniform() < p {
				d[i] = 0
			} else {
				d[i] = float32(keep)
			}
		}
	} else {
		d := m.Data64()
		for i := range d {
			if r.Uniform() < p {
				d[i] = 0
			} else {
				d[i] = keep
			}
		}
	}
	if a.Value.Backend() != tensor.CPU {
		m = m.ToBackend(a.Value.Backend())
	}
	y := tensor.Mul(tp.alloc(a.Value, a.Shape()...), a.Value, m)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), dropoutBackward)
	if n != nil {
		n.a, n.t0 = a, m
	}
	return out
}

func dropoutBackward(tp *Tape, n *node) {
	tp.addGrad(n.a, tensor.Mul(tp.gradBuf(n), n.out.Grad, n.t0), true)
}
