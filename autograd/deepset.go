package autograd

import (
	"fmt"

	"lgflow/tensor"
)

// DeepSetScores is the LG-VAE decoder's row-wise DeepSet read-out
// (tensor.DeepSetScores), one tensor kernel forward and one backward:
//
//	y[r, j] = bo + Σ_d wo[d]·GELU(s[r, j]·ws[d] + bs[d] + ctx[r, d])
//
// with s (R, N), ctx (R, D), ws, bs and wo (D) and bo (1), all distinct
// Vars. It computes what
//
//	tp.Linear(tp.GELU(tp.Add(tp.Add(tp.Mul(s⊗1, ws), bs), ctx⊗1)), wo, bo)
//
// computes (a hidden vector of width D per score, its GELU and a linear
// read-out to one value) without the (R, N, D) tensors: the backward
// recomputes the pre-activations from the inputs. On the CPU the
// pre-activations and their GELU round as those unfused ops do; the
// read-out sums in float64.
func (tp *Tape) DeepSetScores(s, ctx, ws, bs, wo, bo *Var) *Var {
	const op = "DeepSetScores"
	ins := [...]*Var{s, ctx, ws, bs, wo, bo}
	for _, v := range ins {
		tp.checkIn(op, v)
	}
	if s.Rank() != 2 || ctx.Rank() != 2 || ctx.Dim(0) != s.Dim(0) {
		panic(fmt.Sprintf("autograd.DeepSetScores: s %v and ctx %v, want (R, N) and (R, D)", s.Shape(), ctx.Shape()))
	}
	d := ctx.Dim(1)
	for _, v := range [...]*Var{ws, bs, wo} {
		if v.Rank() != 1 || v.Dim(0) != d {
			panic(fmt.Sprintf("autograd.DeepSetScores: ws/bs/wo %v for ctx %v, want (%d)", v.Shape(), ctx.Shape(), d))
		}
	}
	if bo.Rank() != 1 || bo.Dim(0) != 1 {
		panic(fmt.Sprintf("autograd.DeepSetScores: bo %v, want (1)", bo.Shape()))
	}
	for i, a := range ins {
		for _, b := range ins[i+1:] {
			if a == b {
				panic("autograd.DeepSetScores: the inputs must be different Vars")
			}
		}
	}
	y := tensor.DeepSetScores(tp.alloc(s.Value, s.Shape()...), s.Value, ctx.Value, ws.Value, bs.Value, wo.Value, bo.Value)
	out, st := record(tp, y, tp.anyGrad(s, ctx, ws) || tp.anyGrad(bs, wo, bo), deepSetKind)
	if st != nil {
		*st = deepSetSaved{s: s, ctx: ctx, ws: ws, bs: bs, wo: wo, bo: bo}
	}
	return out
}

// deepSetSaved is DeepSetScores' backward state: the inputs, whose values
// give the pre-activations again.
type deepSetSaved struct{ s, ctx, ws, bs, wo, bo *Var }

var deepSetKind = newSavedKind[deepSetSaved]()

func (st *deepSetSaved) backward(tp *Tape, out *Var) {
	var ds, dctx *tensor.Tensor
	if st.s.requiresGrad {
		ds = tp.alloc(st.s.Value, st.s.Shape()...)
	}
	if st.ctx.requiresGrad {
		dctx = tp.alloc(st.ctx.Value, st.ctx.Shape()...)
	}
	// The parameter gradients accumulate in place (locked, for
	// parameters, in argument order until the kernel is done).
	ps := [...]*Var{st.ws, st.bs, st.wo, st.bo}
	var dp [4]*tensor.Tensor
	for i, p := range ps {
		if p.requiresGrad {
			dp[i] = tp.gradZeroDst(p)
		}
	}
	tensor.DeepSetScoresBackward(ds, dctx, dp[0], dp[1], dp[2], dp[3], out.Grad,
		st.s.Value, st.ctx.Value, st.ws.Value, st.bs.Value, st.wo.Value)
	for i, p := range ps {
		if dp[i] != nil {
			tp.doneGrad(p)
		}
	}
	if ds != nil {
		tp.addGrad(st.s, ds, true)
	}
	if dctx != nil {
		tp.addGrad(st.ctx, dctx, true)
	}
}
