package nn

import (
	"math"
	"testing"

	"lgflow/autograd"
	"lgflow/tensor"
)

// naiveMHSA evaluates multi-head self-attention with loops; allowed(b, i, j)
// says whether query i may attend to key j.
func naiveMHSA(a *MultiHeadSelfAttention, x *tensor.Tensor, allowed func(b, i, j int) bool) []float64 {
	bsz, n, e := x.Dim(0), x.Dim(1), x.Dim(2)
	h, dh := a.Heads, e/a.Heads
	xd := x.Float64s()
	var out []float64
	for b := 0; b < bsz; b++ {
		qkv := make([][]float64, n)
		for i := 0; i < n; i++ {
			qkv[i] = naiveLinear(a.QKV, xd[(b*n+i)*e:(b*n+i+1)*e])
		}
		for i := 0; i < n; i++ {
			o := make([]float64, e)
			for hh := 0; hh < h; hh++ {
				scores := make([]float64, n)
				mx := math.Inf(-1)
				for j := 0; j < n; j++ {
					if !allowed(b, i, j) {
						continue
					}
					s := 0.0
					for d := 0; d < dh; d++ {
						s += qkv[i][hh*dh+d] * qkv[j][e+hh*dh+d]
					}
					scores[j] = s / math.Sqrt(float64(dh))
					mx = math.Max(mx, scores[j])
				}
				z := 0.0
				for j := 0; j < n; j++ {
					if allowed(b, i, j) {
						scores[j] = math.Exp(scores[j] - mx)
						z += scores[j]
					}
				}
				for j := 0; j < n; j++ {
					if allowed(b, i, j) {
						for d := 0; d < dh; d++ {
							o[hh*dh+d] += scores[j] / z * qkv[j][2*e+hh*dh+d]
						}
					}
				}
			}
			out = append(out, naiveLinear(a.Out, o)...)
		}
	}
	return out
}

func TestMultiHeadSelfAttentionMatchesNaive(t *testing.T) {
	r := tensor.NewRNG(21)
	a := NewMultiHeadSelfAttention(r, 6, 2, f64)
	x := tensor.RandN(r, tensor.Float64, 2, 4, 6)
	maskData := []float64{1, 1, 1, 0, 1, 0, 0, 0}
	mask := tensor.FromFloat64(maskData, 2, 4)
	m := func(b, i int) bool { return maskData[b*4+i] != 0 }
	cases := []struct {
		name    string
		mode    autograd.MaskMode
		mask    *tensor.Tensor
		allowed func(b, i, j int) bool
	}{
		{"NoMask", autograd.KeyPadding, nil, func(b, i, j int) bool { return true }},
		{"KeyPadding", autograd.KeyPadding, mask, func(b, i, j int) bool { return m(b, j) }},
		{"SameGroup", autograd.SameGroup, mask, func(b, i, j int) bool { return m(b, i) == m(b, j) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a.Mode = c.mode
			tp := autograd.NoGrad()
			defer tp.Release()
			got := values(a.Forward(tp, autograd.NewConst(x), c.mask))
			assertClose(t, c.name, got, naiveMHSA(a, x, c.allowed), 1e-12)
		})
	}
	// A full (B, N, N) mask: causal.
	full := tensor.New(tensor.Float64, 2, 4, 4)
	for b := 0; b < 2; b++ {
		for i := 0; i < 4; i++ {
			for j := 0; j <= i; j++ {
				full.Set(1, b, i, j)
			}
		}
	}
	tp := autograd.NoGrad()
	defer tp.Release()
	got := values(a.Forward(tp, autograd.NewConst(x), full))
	assertClose(t, "causal", got, naiveMHSA(a, x, func(b, i, j int) bool { return j <= i }), 1e-12)
}

// Padding tokens, whatever they hold, do not change the real tokens' outputs.
func TestAttentionPaddingInvariance(t *testing.T) {
	r := tensor.NewRNG(22)
	for _, mode := range []autograd.MaskMode{autograd.KeyPadding, autograd.SameGroup} {
		a := NewMultiHeadSelfAttention(r, 8, 2, f64, WithMaskMode(mode))
		real := tensor.RandN(r, tensor.Float64, 1, 3, 8)
		padded := tensor.RandN(r, tensor.Float64, 1, 5, 8) // tokens 3, 4 are padding with random content
		tensor.Copy(padded.Slice(1, 0, 3), real)
		mask := tensor.FromFloat64([]float64{1, 1, 1, 0, 0}, 1, 5)
		tp := autograd.NoGrad()
		want := values(a.Forward(tp, autograd.NewConst(real), nil))
		got := values(a.Forward(tp, autograd.NewConst(padded), mask))[:3*8]
		assertClose(t, mode.String(), got, want, 1e-12)
		tp.Release()
	}
}

func TestAttentionPermutationEquivariance(t *testing.T) {
	r := tensor.NewRNG(23)
	a := NewMultiHeadSelfAttention(r, 8, 4, f64, WithMaskMode(autograd.SameGroup))
	x := tensor.RandN(r, tensor.Float64, 1, 5, 8)
	maskData := []float64{1, 0, 1, 1, 0}
	perm := []int{4, 2, 0, 1, 3}
	xp := tensor.New(tensor.Float64, 1, 5, 8)
	mp := make([]float64, 5)
	for p, o := range perm {
		tensor.Copy(xp.Slice(1, p, p+1), x.Slice(1, o, o+1))
		mp[p] = maskData[o]
	}
	tp := autograd.NoGrad()
	defer tp.Release()
	y := values(a.Forward(tp, autograd.NewConst(x), tensor.FromFloat64(maskData, 1, 5)))
	yp := values(a.Forward(tp, autograd.NewConst(xp), tensor.FromFloat64(mp, 1, 5)))
	for p, o := range perm {
		assertClose(t, "equivariance", yp[p*8:(p+1)*8], y[o*8:(o+1)*8], 1e-12)
	}
}

func TestLayerGradients(t *testing.T) {
	r := tensor.NewRNG(24)
	mask := tensor.FromFloat64([]float64{1, 1, 0, 1, 1, 1}, 2, 3)
	type layerCase struct {
		name  string
		m     Module
		shape []int
		fwd   func(tp *autograd.Tape, x *autograd.Var) *autograd.Var
	}
	lin := NewLinear(r, 4, 3, f64)
	mlp := NewMLP(r, []int{4, 5, 2}, f64, WithActivation(SiLU))
	ln := NewLayerNorm(4, 1e-5, f64)
	bn := NewBatchNorm1d(4, f64)
	bnEval := NewBatchNorm1d(4, f64)
	tensor.FillUniform(bnEval.RunningVar, r, 0.5, 2)
	tensor.FillNormal(bnEval.RunningMean, r, 0, 1)
	bnEval.Train(false)
	attKP := NewMultiHeadSelfAttention(r, 4, 2, f64)
	attSG := NewMultiHeadSelfAttention(r, 4, 2, f64, WithMaskMode(autograd.SameGroup))
	emb := NewEmbedding(r, 5, 4, f64)
	cases := []layerCase{
		{"Linear", lin, []int{2, 3, 4}, lin.Forward},
		{"MLP", mlp, []int{3, 4}, mlp.Forward},
		{"LayerNorm", ln, []int{3, 4}, ln.Forward},
		{"BatchNormTrain", bn, []int{5, 4}, bn.Forward},
		{"BatchNormEval", bnEval, []int{5, 4}, bnEval.Forward},
		{"AttentionKeyPadding", attKP, []int{2, 3, 4}, func(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
			return attKP.Forward(tp, x, mask)
		}},
		{"AttentionSameGroup", attSG, []int{2, 3, 4}, func(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
			return attSG.Forward(tp, x, mask)
		}},
		{"Embedding", emb, []int{1}, func(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
			return tp.Mul(emb.Forward(tp, []int32{4, 0, 4}), x)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := autograd.NewParam(tensor.RandN(r, tensor.Float64, c.shape...))
			params := []*autograd.Var{x}
			for _, p := range c.m.Params() {
				params = append(params, p.V)
			}
			f := func(tp *autograd.Tape) *autograd.Var { return c.fwd(tp, x) }
			if err := autograd.CheckGrad(f, params, 1e-6, 1e-5); err != nil {
				t.Fatal(err)
			}
		})
	}
}
