package autograd

import (
	"fmt"

	"lgflow/tensor"
)

// The diffusion transformer's fused ops (tensor/fused_dit.go): adaLN
// modulation of a layer norm, the gated residual and bias + GELU, one tensor
// kernel forward and one backward each.

// setVec returns the (G, D) view of a per-set Var of shape (G, 1, D) or
// (G, D) for sets of x (G, R, D), or panics.
func setVec(op string, x, m *Var) *tensor.Tensor {
	g, d := x.Dim(0), x.Dim(2)
	switch s := m.Shape(); {
	case len(s) == 3 && s[0] == g && s[1] == 1 && s[2] == d:
		return m.Value.Squeeze(1)
	case len(s) == 2 && s[0] == g && s[1] == d:
		return m.Value
	}
	panic(fmt.Sprintf("autograd.%s: per-set tensor %v for x %v: want (G, 1, D) or (G, D)", op, m.Shape(), x.Shape()))
}

// LayerNormModulate is the adaLN-modulated layer norm of a DiT block:
//
//	u = LayerNorm(x; gamma, beta, eps),  y = u·(1 + scale) + shift
//
// computed as u + u·scale + shift, with x (G, R, D) and shift, scale of
// shape (G, 1, D) or (G, D) (one vector per set, broadcast over its R
// tokens); gamma and beta are (D) or nil. On the CPU the result is the same,
// bit for bit, as tp.Add(tp.Add(u, tp.Mul(u, scale)), shift).
func (tp *Tape) LayerNormModulate(x, gamma, beta, shift, scale *Var, eps float64) *Var {
	const op = "LayerNormModulate"
	tp.checkIn(op, x)
	tp.checkIn(op, shift)
	tp.checkIn(op, scale)
	if x.Rank() != 3 {
		panic(fmt.Sprintf("autograd.LayerNormModulate: x %v, want (G, R, D)", x.Shape()))
	}
	d := x.Dim(2)
	var gv, bv *tensor.Tensor
	for _, p := range [...]*Var{gamma, beta} {
		if p != nil {
			tp.checkIn(op, p)
			if p.Rank() != 1 || p.Dim(0) != d {
				panic(fmt.Sprintf("autograd.LayerNormModulate: gamma/beta %v for input %v", p.Shape(), x.Shape()))
			}
		}
	}
	if gamma != nil {
		gv = gamma.Value
	}
	if beta != nil {
		bv = beta.Value
	}
	if gamma != nil && gamma == beta {
		panic("autograd.LayerNormModulate: gamma and beta must be different Vars")
	}
	shv, scv := setVec(op, x, shift), setVec(op, x, scale)
	xs := x.Shape()
	xv := tp.contig(x.Value)
	y := tp.alloc(x.Value, xs...)
	mean := tp.alloc(x.Value, xs[0], xs[1])
	rstd := tp.alloc(x.Value, xs[0], xs[1])
	tensor.LayerNormModulate(y, mean, rstd, xv, gv, bv, shv, scv, eps)
	grad := tp.anyGrad(x, gamma, beta) || tp.anyGrad(shift, scale, nil)
	out, s := record(tp, y, grad, layerNormModKind)
	if s != nil {
		*s = layerNormModSaved{x: x, gamma: gamma, beta: beta, shift: shift, scale: scale,
			xv: xv, scv: scv, mean: mean, rstd: rstd}
	}
	return out
}

// layerNormModSaved is LayerNormModulate's backward state.
type layerNormModSaved struct {
	x, gamma, beta, shift, scale *Var           // the inputs (gamma, beta may be nil), for their gradients
	xv, scv                      *tensor.Tensor // x's value (contiguous) and scale's (G, D) view
	mean, rstd                   *tensor.Tensor // per-row statistics (G, R)
}

var layerNormModKind = newSavedKind[layerNormModSaved]()

func (s *layerNormModSaved) backward(tp *Tape, out *Var) {
	x := s.x
	g, d := x.Dim(0), x.Dim(2)
	var dg, db, dsh, dsc, gv, bv *tensor.Tensor
	dx := tp.alloc(x.Value, x.Shape()...)
	if s.gamma != nil {
		gv = s.gamma.Value
		if s.gamma.requiresGrad {
			dg = tp.gradZeroDst(s.gamma)
		}
	}
	if s.beta != nil {
		bv = s.beta.Value
		if s.beta.requiresGrad {
			db = tp.gradZeroDst(s.beta)
		}
	}
	if s.shift.requiresGrad {
		dsh = tp.alloc(x.Value, g, d)
	}
	if s.scale.requiresGrad {
		dsc = tp.alloc(x.Value, g, d)
	}
	tensor.LayerNormModulateBackward(dx, dg, db, dsh, dsc, out.Grad, s.xv, s.mean, s.rstd, gv, bv, s.scv)
	if dg != nil {
		tp.doneGrad(s.gamma)
	}
	if db != nil {
		tp.doneGrad(s.beta)
	}
	if dsh != nil {
		tp.addGrad(s.shift, dsh.Reshape(s.shift.Shape()...), true)
	}
	if dsc != nil {
		tp.addGrad(s.scale, dsc.Reshape(s.scale.Shape()...), true)
	}
	tp.addGrad(x, dx, true)
}

// GateResidual returns x + gate·h, the gated residual of a DiT block: x and
// h are (G, R, D) and gate is (G, 1, D) or (G, D), one vector per set. On
// the CPU the result is the same, bit for bit, as tp.Add(x, tp.Mul(gate, h)).
func (tp *Tape) GateResidual(x, gate, h *Var) *Var {
	const op = "GateResidual"
	tp.checkIn(op, x)
	tp.checkIn(op, gate)
	tp.checkIn(op, h)
	if x.Rank() != 3 || !sameShape(x.Shape(), h.Shape()) {
		panic(fmt.Sprintf("autograd.GateResidual: x %v and h %v, want both (G, R, D)", x.Shape(), h.Shape()))
	}
	gv := setVec(op, x, gate)
	y := tensor.GateResidual(tp.alloc(x.Value, x.Shape()...), x.Value, gv, h.Value)
	out, s := record(tp, y, tp.anyGrad(x, gate, h), gateResKind)
	if s != nil {
		*s = gateResSaved{x: x, gate: gate, h: h, gv: gv}
	}
	return out
}

// gateResSaved is GateResidual's backward state.
type gateResSaved struct {
	x, gate, h *Var           // the inputs
	gv         *tensor.Tensor // gate's (G, D) view
}

var gateResKind = newSavedKind[gateResSaved]()

func (s *gateResSaved) backward(tp *Tape, out *Var) {
	gy := out.Grad
	tp.addGrad(s.x, gy, false)
	var dh, dgate *tensor.Tensor
	if s.h.requiresGrad {
		dh = tp.alloc(gy, s.h.Shape()...)
	}
	if s.gate.requiresGrad {
		dgate = tp.alloc(gy, s.x.Dim(0), s.x.Dim(2))
	}
	if dh == nil && dgate == nil {
		return
	}
	tensor.GateResidualBackward(dh, dgate, gy, s.h.Value, s.gv)
	if dgate != nil {
		tp.addGrad(s.gate, dgate.Reshape(s.gate.Shape()...), true)
	}
	if dh != nil {
		tp.addGrad(s.h, dh, true)
	}
}

// BiasGELU returns GELU(x + bias) (the exact, erf GELU) with x (..., D) and
// bias (D): a Linear layer's bias and activation in one pass over its
// output, when the GEMM runs without the bias.
func (tp *Tape) BiasGELU(x, bias *Var) *Var {
	tp.checkIn("BiasGELU", x)
	tp.checkIn("BiasGELU", bias)
	if x.Rank() < 1 || bias.Rank() != 1 || bias.Dim(0) != x.Dim(-1) {
		panic(fmt.Sprintf("autograd.BiasGELU: bias %v for x %v", bias.Shape(), x.Shape()))
	}
	y := tensor.BiasGELU(tp.alloc(x.Value, x.Shape()...), x.Value, bias.Value)
	out, s := record(tp, y, tp.anyGrad(x, bias, nil), biasGELUKind)
	if s != nil {
		*s = biasGELUSaved{x: x, bias: bias}
	}
	return out
}

// biasGELUSaved is BiasGELU's backward state: the inputs, whose values give
// the pre-activation again.
type biasGELUSaved struct{ x, bias *Var }

var biasGELUKind = newSavedKind[biasGELUSaved]()

func (s *biasGELUSaved) backward(tp *Tape, out *Var) {
	var db *tensor.Tensor
	if s.bias.requiresGrad {
		db = tp.gradZeroDst(s.bias)
	}
	dx := tensor.BiasGELUBackward(tp.alloc(s.x.Value, s.x.Shape()...), db, out.Grad, s.x.Value, s.bias.Value)
	if db != nil {
		tp.doneGrad(s.bias)
	}
	tp.addGrad(s.x, dx, true)
}
