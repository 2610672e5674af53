package autograd

import (
	"lgflow/tensor"
)

// Unary elementwise ops. Each backward is one tensor kernel where the tensor
// package has one (e.g. tensor.GELUGrad), otherwise a short loop here.

// unary applies f to a into a fresh buffer and records bw.
func (tp *Tape) unary(op string, a *Var, f func(dst, a *tensor.Tensor) *tensor.Tensor, bw func(*Tape, *node)) *Var {
	tp.checkIn(op, a)
	y := f(tp.alloc(a.Value, a.Shape()...), a.Value)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), bw)
	if n != nil {
		n.a = a
	}
	return out
}

// gradBuf returns a fresh buffer shaped like the output gradient of n.
func (tp *Tape) gradBuf(n *node) *tensor.Tensor {
	return tp.alloc(n.out.Value, n.out.Shape()...)
}

// Neg returns −a.
func (tp *Tape) Neg(a *Var) *Var { return tp.unary("Neg", a, tensor.Neg, negBackward) }

func negBackward(tp *Tape, n *node) {
	tp.addGrad(n.a, tensor.Neg(tp.gradBuf(n), n.out.Grad), true)
}

// Exp returns eᵃ.
func (tp *Tape) Exp(a *Var) *Var { return tp.unary("Exp", a, tensor.Exp, expBackward) }

func expBackward(tp *Tape, n *node) {
	tp.addGrad(n.a, tensor.Mul(tp.gradBuf(n), n.out.Grad, n.out.Value), true)
}

// Log returns the natural logarithm of a.
func (tp *Tape) Log(a *Var) *Var { return tp.unary("Log", a, tensor.Log, logBackward) }

func logBackward(tp *Tape, n *node) {
	tp.addGrad(n.a, tensor.Div(tp.gradBuf(n), n.out.Grad, n.a.Value), true)
}

// Sqrt returns √a.
func (tp *Tape) Sqrt(a *Var) *Var { return tp.unary("Sqrt", a, tensor.Sqrt, sqrtBackward) }

// d√a = 1/(2√a).
func sqrtBackward(tp *Tape, n *node) {
	g := tensor.Div(tp.gradBuf(n), n.out.Grad, n.out.Value)
	tp.addGrad(n.a, tensor.MulScalar(g, g, 0.5), true)
}

// Square returns a².
func (tp *Tape) Square(a *Var) *Var { return tp.unary("Square", a, tensor.Square, squareBackward) }

func squareBackward(tp *Tape, n *node) {
	g := tensor.Mul(tp.gradBuf(n), n.out.Grad, n.a.Value)
	tp.addGrad(n.a, tensor.MulScalar(g, g, 2), true)
}

// Abs returns |a|; its gradient at 0 is 0.
func (tp *Tape) Abs(a *Var) *Var { return tp.unary("Abs", a, tensor.Abs, absBackward) }

func absBackward(tp *Tape, n *node) {
	g := tp.gradBuf(n)
	x := tp.contig(n.a.Value)
	gy := tp.contig(n.out.Grad)
	if g.DType() == tensor.Float32 {
		absGrad(g.Data32(), x.Data32(), gy.Data32())
	} else {
		absGrad(g.Data64(), x.Data64(), gy.Data64())
	}
	tp.addGrad(n.a, g, true)
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

func tanhBackward(tp *Tape, n *node) {
	tp.addGrad(n.a, tensor.TanhGradFromY(tp.gradBuf(n), n.out.Value, n.out.Grad), true)
}

// Sigmoid returns the logistic function 1/(1+e⁻ᵃ).
func (tp *Tape) Sigmoid(a *Var) *Var { return tp.unary("Sigmoid", a, tensor.Sigmoid, sigmoidBackward) }

func sigmoidBackward(tp *Tape, n *node) {
	tp.addGrad(n.a, tensor.SigmoidGradFromY(tp.gradBuf(n), n.out.Value, n.out.Grad), true)
}

// ReLU returns max(a, 0); its gradient at 0 is 0.
func (tp *Tape) ReLU(a *Var) *Var { return tp.unary("ReLU", a, tensor.ReLU, reluBackward) }

func reluBackward(tp *Tape, n *node) {
	tp.addGrad(n.a, tensor.ReLUGrad(tp.gradBuf(n), n.a.Value, n.out.Grad), true)
}

// GELU returns the exact (erf) Gaussian error linear unit a·Φ(a).
func (tp *Tape) GELU(a *Var) *Var { return tp.unary("GELU", a, tensor.GELU, geluBackward) }

func geluBackward(tp *Tape, n *node) {
	tp.addGrad(n.a, tensor.GELUGrad(tp.gradBuf(n), n.a.Value, n.out.Grad), true)
}

// SiLU returns a·σ(a) (swish).
func (tp *Tape) SiLU(a *Var) *Var { return tp.unary("SiLU", a, tensor.SiLU, siluBackward) }

func siluBackward(tp *Tape, n *node) {
	tp.addGrad(n.a, tensor.SiLUGrad(tp.gradBuf(n), n.a.Value, n.out.Grad), true)
}

// Clamp returns a clipped to [lo, hi]. The gradient passes where
// lo ≤ a ≤ hi and is 0 elsewhere.
func (tp *Tape) Clamp(a *Var, lo, hi float64) *Var {
	tp.checkIn("Clamp", a)
	y := tensor.Clamp(tp.alloc(a.Value, a.Shape()...), a.Value, lo, hi)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), clampBackward)
	if n != nil {
		n.a, n.f0, n.f1 = a, lo, hi
	}
	return out
}

func clampBackward(tp *Tape, n *node) {
	g := tp.gradBuf(n)
	if n.a.Value.Backend() != tensor.CPU {
		// gy·[x > lo]·[hi > x] from backend ops (the CPU path also passes
		// the gradient at x == lo or hi exactly).
		t := tp.alloc(n.a.Value, n.a.Shape()...)
		tensor.ReLUGrad(g, tensor.AddScalar(t, n.a.Value, -n.f0), n.out.Grad)
		tensor.MulScalar(t, n.a.Value, -1)
		tensor.ReLUGrad(g, tensor.AddScalar(t, t, n.f1), g)
		tp.addGrad(n.a, g, true)
		return
	}
	x := tp.contig(n.a.Value)
	gy := tp.contig(n.out.Grad)
	if g.DType() == tensor.Float32 {
		clampGrad(g.Data32(), x.Data32(), gy.Data32(), float32(n.f0), float32(n.f1))
	} else {
		clampGrad(g.Data64(), x.Data64(), gy.Data64(), n.f0, n.f1)
	}
	tp.addGrad(n.a, g, true)
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
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), powBackward)
	if n != nil {
		n.a, n.f0 = a, p
	}
	return out
}

// d aᵖ = p·aᵖ⁻¹.
func powBackward(tp *Tape, n *node) {
	g := tensor.Pow(tp.gradBuf(n), n.a.Value, n.f0-1)
	tensor.Mul(g, g, n.out.Grad)
	tp.addGrad(n.a, tensor.MulScalar(g, g, n.f0), true)
}
