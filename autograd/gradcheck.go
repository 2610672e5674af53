package autograd

import (
	"fmt"
	"math"

	"lgflow/tensor"
)

// CheckGrad checks the backward pass of f against central finite
// differences. It builds the scalar L = Σ f(tp) ⊙ R with a fixed
// pseudo-random R (so every output element matters), runs Backward, and for
// every element x of every parameter compares ∂L/∂x with
// (L(x+eps) − L(x−eps)) / (2·eps). It returns an error naming the first
// parameter and element where |analytic − numeric| > tol·(1 + |numeric|),
// or nil.
//
// The parameters must be contiguous Float64 CPU tensors created with
// NewParam; their values are perturbed and restored, and their Grad is
// replaced by the analytic gradient. f must be deterministic (re-seed any RNG
// inside f) and is called 1 + 2·(number of parameter elements) times.
func CheckGrad(f func(tp *Tape) *Var, params []*Var, eps, tol float64) error {
	for i, p := range params {
		if p.DType() != tensor.Float64 {
			return fmt.Errorf("autograd.CheckGrad: param %d is %v, want float64", i, p.DType())
		}
		if !p.leaf || !p.requiresGrad {
			return fmt.Errorf("autograd.CheckGrad: param %d is not a parameter (NewParam)", i)
		}
		p.Grad = nil
	}
	tp := NewTape()
	y := f(tp)
	r := tensor.New(tensor.Float64, y.Shape()...)
	tensor.FillNormal(r, tensor.NewRNG(12345), 0, 1)
	loss := tp.SumAll(tp.Mul(y, NewConst(r)))
	tp.Backward(loss)
	tp.Release()
	eval := func() float64 {
		tp := NoGrad()
		defer tp.Release()
		y := f(tp)
		return tensor.SumAll(tensor.Mul(nil, y.Value, r))
	}
	for pi, p := range params {
		x := p.Value.Data64()
		var g []float64
		if p.Grad != nil {
			g = p.Grad.Contiguous().Data64()
		}
		for i := range x {
			orig := x[i]
			x[i] = orig + eps
			lp := eval()
			x[i] = orig - eps
			lm := eval()
			x[i] = orig
			num := (lp - lm) / (2 * eps)
			ana := 0.0
			if g != nil {
				ana = g[i]
			}
			if d := math.Abs(ana - num); d > tol*(1+math.Abs(num)) || math.IsNaN(d) {
				return fmt.Errorf("autograd.CheckGrad: param %d %v element %d: analytic %.8g, numeric %.8g (diff %.3g)",
					pi, p.Shape(), i, ana, num, d)
			}
		}
	}
	return nil
}
