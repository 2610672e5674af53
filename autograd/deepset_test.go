package autograd

import (
	"math"
	"testing"

	"lgflow/tensor"
)

// Gradient checks of the fused DeepSet read-out, with every input a
// parameter, with the vectors as reshaped (D, 1) and (1, D) weights as the
// LG-VAE passes them, and with only some inputs needing gradients.
func TestCheckGradDeepSetScores(t *testing.T) {
	cases := []struct {
		name  string
		build func(r *tensor.RNG) ([]*Var, func(*Tape) *Var)
	}{
		{"all inputs", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
			s, ctx := randParam(r, 4, 5), randParam(r, 4, 3)
			ws, bs, wo, bo := randParam(r, 3), randParam(r, 3), randParam(r, 3), randParam(r, 1)
			return []*Var{s, ctx, ws, bs, wo, bo}, func(tp *Tape) *Var { return tp.DeepSetScores(s, ctx, ws, bs, wo, bo) }
		}},
		{"one row, one column", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
			s, ctx := randParam(r, 1, 1), randParam(r, 1, 2)
			ws, bs, wo, bo := randParam(r, 2), randParam(r, 2), randParam(r, 2), randParam(r, 1)
			return []*Var{s, ctx, ws, bs, wo, bo}, func(tp *Tape) *Var { return tp.DeepSetScores(s, ctx, ws, bs, wo, bo) }
		}},
		// As vae.DecodeDense uses it: s and ctx computed on the tape, the
		// weights of Linear layers reshaped to vectors.
		{"reshaped linear weights", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
			x, c := randParam(r, 2, 3, 4), randParam(r, 6, 5)
			wSelf, bSelf, wOut, bOut := randParam(r, 5, 1), randParam(r, 5), randParam(r, 1, 5), randParam(r, 1)
			return []*Var{x, c, wSelf, bSelf, wOut, bOut}, func(tp *Tape) *Var {
				s := tp.Reshape(tp.Mul(x, x), 6, 4)
				ctx := tp.GELU(c)
				y := tp.DeepSetScores(s, ctx, tp.Reshape(wSelf, 5), bSelf, tp.Reshape(wOut, 5), bOut)
				return tp.Reshape(y, 2, 3, 4)
			}
		}},
		// Constant context and read-out bias: no gradient asked for them.
		{"some constants", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
			s := randParam(r, 3, 4)
			ctx := NewConst(tensor.RandN(r, tensor.Float64, 3, 6))
			ws, bs, wo := randParam(r, 6), randParam(r, 6), randParam(r, 6)
			bo := NewConst(tensor.FromFloat64([]float64{0.3}, 1))
			return []*Var{s, ws, bs, wo}, func(tp *Tape) *Var { return tp.DeepSetScores(s, ctx, ws, bs, wo, bo) }
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			params, f := c.build(tensor.NewRNG(47))
			if err := CheckGrad(f, params, 1e-6, 1e-6); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// DeepSetScores computes what the unfused ops it replaces compute, values
// and gradients (up to the order of the float64 sums).
func TestDeepSetScoresMatchesUnfused(t *testing.T) {
	r := tensor.NewRNG(48)
	R, N, D := 6, 7, 5
	mk := func(shape ...int) *Var { return randParam(r, shape...) }
	s, ctx, wSelf, bSelf, wOut, bOut := mk(R, N), mk(R, D), mk(D, 1), mk(D), mk(1, D), mk(1)
	gy := tensor.RandN(r, tensor.Float64, R, N)
	run := func(fused bool) []*tensor.Tensor {
		ps := []*Var{s, ctx, wSelf, bSelf, wOut, bOut}
		for _, p := range ps {
			p.Grad = nil
		}
		tp := NewTape()
		defer tp.Release()
		var y *Var
		if fused {
			y = tp.DeepSetScores(s, ctx, tp.Reshape(wSelf, D), bSelf, tp.Reshape(wOut, D), bOut)
		} else {
			self := tp.Add(tp.Mul(tp.Unsqueeze(s, 2), tp.Reshape(wSelf, D)), bSelf)
			hid := tp.GELU(tp.Add(self, tp.Unsqueeze(ctx, 1)))
			y = tp.Reshape(tp.Linear(hid, wOut, bOut), R, N)
		}
		tp.BackwardWith(y, gy)
		out := []*tensor.Tensor{y.Value.Clone()}
		for _, p := range ps {
			out = append(out, p.Grad.Clone())
		}
		return out
	}
	got, want := run(true), run(false)
	names := []string{"y", "ds", "dctx", "dwSelf", "dbSelf", "dwOut", "dbOut"}
	for i := range got {
		g, w := got[i].Float64s(), want[i].Float64s()
		if !sameShape(got[i].Shape(), want[i].Shape()) {
			t.Fatalf("%s: shape %v, want %v", names[i], got[i].Shape(), want[i].Shape())
		}
		for k := range w {
			if math.Abs(g[k]-w[k]) > 1e-12*(1+math.Abs(w[k])) {
				t.Fatalf("%s[%d] = %.17g, unfused %.17g", names[i], k, g[k], w[k])
			}
		}
	}
}
