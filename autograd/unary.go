package autograd

import (
	"lgflow/tensor"
)

// Unary elementwise ops. Each backward is one tensor kernel where the tensor
// package has one (e.g. tensor.GELUGrad), otherwise a short loop here. The
// ops without parameters save only their input (unarySaved); the backward
// rules below receive it as x and the op's result as out.

// unary applies f to a into a fresh buffer and records the backward rule grad.
func (tp *Tape) unary(op string, a *Var, f func(dst, a *tensor.Tensor) *tensor.Tensor, grad func(tp *Tape, x, out *Var)) *Var {
	tp.checkIn(op, a)
	y := f(tp.alloc(a.Value, a.Shape()...), a.Value)
	return tp.recordUnary(y, a, grad)
}

// gradBuf returns a fresh buffer shaped like out (and its gradient).
func (tp *Tape) gradBuf(out *Var) *tensor.Tensor {
	return tp.alloc(out.Value, out.Shape()...)
}

// Neg returns −a.
func (tp *Tape) Neg(a *Var) *Var { return tp.unary("Neg", a, tensor.Neg, negBackward) }

func negBackward(tp *Tape, x, out *Var) {
	tp.addGrad(x, tensor.Neg(tp.gradBuf(out), out.Grad), true)
}

// Exp returns eᵃ.
func (tp *Tape) Exp(a *Var) *Var { return tp.unary("Exp", a, tensor.Exp, expBackward) }

func expBackward(tp *Tape, x, out *Var) {
	tp.addGrad(x, tensor.Mul(tp.gradBuf(out), out.Grad, out.Value), true)
}

// Log returns the natural logarithm of a.
func (tp *Tape) Log(a *Var) *Var { return tp.unary("Log", a, tensor.Log, logBackward) }

func logBackward(tp *Tape, x, out *Var) {
	tp.addGrad(x, tensor.Div(tp.gradBuf(out), out.Grad, x.Value), true)
}

// Sqrt returns √a.
func (tp *Tape) Sqrt(a *Var) *Var { return tp.unary("Sqrt", a, tensor.Sqrt, sqrtBackward) }

// d√x = 1/(2√x).
func sqrtBackward(tp *Tape, x, out *Var) {
	g := tensor.Div(tp.gradBuf(out), out.Grad, out.Value)
	tp.addGrad(x, tensor.MulScalar(g, g, 0.5), true)
}

// Square returns a².
func (tp *Tape) Square(a *Var) *Var { return tp.unary("Square", a, tensor.Square, squareBackward) }

func squareBackward(tp *Tape, x, out *Var) {
	g := tensor.Mul(tp.gradBuf(out), out.Grad, x.Value)
	tp.addGrad(x, tensor.MulScalar(g, g, 2), true)
}

// Abs returns |a|; its gradient at 0 is 0.
func (tp *Tape) Abs(a *Var) *Var { return tp.unary("Abs", a, tensor.Abs, absBackward) }

func absBackward(tp *Tape, x, out *Var) {
	g := tp.gradBuf(out)
	xv := tp.contig(x.Value)
	gy := tp.contig(out.Grad)
	if g.DType() == tensor.Float32 {
		absGrad(g.Data32(), xv.Data32(), gy.Data32())
	} else {
		absGrad(g.Data64(), xv.Data64(), gy.Data64())
	}
	tp.addGrad(x, g, true)
}

func absGrad[T float](g, x, gy []T) {
	for i, v := range x {
		switch {
		case v > 0:
			g[i] = gy[i]
		case v < 0:
			g[i] = -gy[i]
		default:
			g[i] = 0
		}
	}
}

// Tanh returns tanh(a).
func (tp *Tape) Tanh(a *Var) *Var { return tp.unary("Tanh", a, tensor.Tanh, tanhBackward) }

func tanhBackward(tp *Tape, x, out *Var) {
	tp.addGrad(x, tensor.TanhGradFromY(tp.gradBuf(out), out.Value, out.Grad), true)
}

// Sigmoid returns the logistic function 1/(1+e⁻ᵃ).
func (tp *Tape) Sigmoid(a *Var) *Var { return tp.unary("Sigmoid", a, tensor.Sigmoid, sigmoidBackward) }

func sigmoidBackward(tp *Tape, x, out *Var) {
	tp.addGrad(x, tensor.SigmoidGradFromY(tp.gradBuf(out), out.Value, out.Grad), true)
}

// ReLU returns max(a, 0); its gradient at 0 is 0.
func (tp *Tape) ReLU(a *Var) *Var { return tp.unary("ReLU", a, tensor.ReLU, reluBackward) }

func reluBackward(tp *Tape, x, out *Var) {
	tp.addGrad(x, tensor.ReLUGrad(tp.gradBuf(out), x.Value, out.Grad), true)
}

// GELU returns the exact (erf) Gaussian error linear unit a·Φ(a).
func (tp *Tape) GELU(a *Var) *Var { return tp.unary("GELU", a, tensor.GELU, geluBackward) }

func geluBackward(tp *Tape, x, out *Var) {
	tp.addGrad(x, tensor.GELUGrad(tp.gradBuf(out), x.Value, out.Grad), true)
}

// SiLU returns a·σ(a) (swish).
func (tp *Tape) SiLU(a *Var) *Var { return tp.unary("SiLU", a, tensor.SiLU, siluBackward) }

func siluBackward(tp *Tape, x, out *Var) {
	tp.addGrad(x, tensor.SiLUGrad(tp.gradBuf(out), x.Value, out.Grad), true)
}

// Clamp returns a clipped to [lo, hi]. The gradient passes where
// lo ≤ a ≤ hi and is 0 elsewhere.
func (tp *Tape) Clamp(a *Var, lo, hi float64) *Var {
	tp.checkIn("Clamp", a)
	y := tensor.Clamp(tp.alloc(a.Value, a.Shape()...), a.Value, lo, hi)
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), clampKind)
	if s != nil {
		*s = clampSaved{x: a, lo: lo, hi: hi}
	}
	return out
}

// clampSaved is Clamp's backward state: the input and the bounds, outside
// which the gradient is 0.
type clampSaved struct {
	x      *Var
	lo, hi float64
}

var clampKind = newSavedKind[clampSaved]()

func (s *clampSaved) backward(tp *Tape, out *Var) {
	x := s.x
	g := tp.gradBuf(out)
	if x.Value.Backend() != tensor.CPU {
		// gy·[x > lo]·[hi > x] from backend ops (the CPU path also passes
		// the gradient at x == lo or hi exactly).
		t := tp.alloc(x.Value, x.Shape()...)
		tensor.ReLUGrad(g, tensor.AddScalar(t, x.Value, -s.lo), out.Grad)
		tensor.MulScalar(t, x.Value, -1)
		tensor.ReLUGrad(g, tensor.AddScalar(t, t, s.hi), g)
		tp.addGrad(x, g, true)
		return
	}
	xv := tp.contig(x.Value)
	gy := tp.contig(out.Grad)
	if g.DType() == tensor.Float32 {
		clampGrad(g.Data32(), xv.Data32(), gy.Data32(), float32(s.lo), float32(s.hi))
	} else {
		clampGrad(g.Data64(), xv.Data64(), gy.Data64(), s.lo, s.hi)
	}
	tp.addGrad(x, g, true)
}

func clampGrad[T float](g, x, gy []T, lo, hi T) {
	for i, v := range x {
		if v >= lo && v <= hi {
			g[i] = gy[i]
		} else {
			g[i] = 0
		}
	}
}

// Pow returns aᵖ elementwise.
func (tp *Tape) Pow(a *Var, p float64) *Var {
	tp.checkIn("Pow", a)
	y := tensor.Pow(tp.alloc(a.Value, a.Shape()...), a.Value, p)
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), powKind)
	if s != nil {
		*s = powSaved{x: a, exponent: p}
	}
	return out
}

// powSaved is Pow's backward state: out = x^exponent.
type powSaved struct {
	x        *Var
	exponent float64
}

var powKind = newSavedKind[powSaved]()

// d xᵖ = p·xᵖ⁻¹.
func (s *powSaved) backward(tp *Tape, out *Var) {
	g := tensor.Pow(tp.gradBuf(out), s.x.Value, s.exponent-1)
	tensor.Mul(g, g, out.Grad)
	tp.addGrad(s.x, tensor.MulScalar(g, g, s.exponent), true)
}
