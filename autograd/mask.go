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
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), maskedFillKind)
	if s != nil {
		*s = maskedFillSaved{x: a, mask: mask}
	}
	return out
}

// maskedFillSaved is MaskedFill's backward state: no gradient flows where
// mask != 0.
type maskedFillSaved struct {
	x    *Var
	mask *tensor.Tensor
}

var maskedFillKind = newSavedKind[maskedFillSaved]()

func (s *maskedFillSaved) backward(tp *Tape, out *Var) {
	g := tensor.MaskedFill(tp.gradBuf(out), out.Grad, s.mask, 0)
	tp.addGrad(s.x, g, true)
}

// Where returns cond != 0 ? a : b elementwise, with numpy broadcasting of all
// three; cond is a constant.
func (tp *Tape) Where(cond *tensor.Tensor, a, b *Var) *Var {
	tp.checkIn("Where", a)
	tp.checkIn("Where", b)
	checkDType("Where", a.Value, b.Value)
	shape := broadcastShape("Where", broadcastShape("Where", cond.Shape(), a.Shape()), b.Shape())
	y := tensor.Where(tp.alloc(a.Value, shape...), cond, a.Value, b.Value)
	out, s := record(tp, y, tp.anyGrad(a, b, nil), whereKind)
	if s != nil {
		*s = whereSaved{cond: cond, ifTrue: a, ifFalse: b}
	}
	return out
}

// whereSaved is Where's backward state: out = cond != 0 ? ifTrue : ifFalse.
type whereSaved struct {
	cond            *tensor.Tensor
	ifTrue, ifFalse *Var
}

var whereKind = newSavedKind[whereSaved]()

func (s *whereSaved) backward(tp *Tape, out *Var) {
	gy := out.Grad
	if s.ifTrue.requiresGrad {
		// cond == 0 -> 0: MaskedFill with the inverted condition.
		g := tensor.Where(tp.gradBuf(out), s.cond, gy, tensor.Scalar(gy.DType(), 0))
		tp.reduceGrad(s.ifTrue, g, true)
	}
	if s.ifFalse.requiresGrad {
		g := tensor.MaskedFill(tp.gradBuf(out), gy, s.cond, 0)
		tp.reduceGrad(s.ifFalse, g, true)
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
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), dropoutKind)
	if s != nil {
		*s = dropoutSaved{x: a, keep: m}
	}
	return out
}

// dropoutSaved is Dropout's backward state: out = x ⊙ keep, where keep
// holds 0 for a dropped entry and 1/(1−p) for a kept one.
type dropoutSaved struct {
	x    *Var
	keep *tensor.Tensor
}

var dropoutKind = newSavedKind[dropoutSaved]()

func (s *dropoutSaved) backward(tp *Tape, out *Var) {
	tp.addGrad(s.x, tensor.Mul(tp.gradBuf(out), out.Grad, s.keep), true)
}
