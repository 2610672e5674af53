package flow

import (
	"math"
	"testing"

	"lgflow/autograd"
	"lgflow/dit"
	"lgflow/nn"
	"lgflow/tensor"
)

// TestPreconditioning checks the coefficients against what they are
// meant to be for unit-variance data x1 and noise x0: c_skip·x_t is the
// regression of x0 on x_t = (1−t)x0 + t·x1 (its residual is uncorrelated
// with x_t), c_out the residual's spread, and the velocity of a zero
// output, (x_t − c_skip·x_t)/t = x_t·(2t−1)/n, stays bounded as t → 0,
// where a plain noise estimate's errors are divided by t.
func TestPreconditioning(t *testing.T) {
	for _, tm := range []float64{1e-4, 0.01, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99} {
		skip, out := preconditioning(tm)
		a, b := 1-tm, tm
		// Cov(x0 − skip·x_t, x_t) = a − skip·(a² + b²).
		if c := a - skip*(a*a+b*b); math.Abs(c) > 1e-12 {
			t.Errorf("t %g: residual correlated with x_t (%g)", tm, c)
		}
		// Var(x0 − skip·x_t) = (1 − skip·a)² + (skip·b)².
		if v := (1-skip*a)*(1-skip*a) + skip*b*skip*b; math.Abs(v-out*out) > 1e-12 {
			t.Errorf("t %g: residual variance %g, c_out² %g", tm, v, out*out)
		}
		if g := (1 - skip) / tm; math.Abs(g) > 1+1e-9 {
			t.Errorf("t %g: a zero output's velocity is %g·x_t, unbounded as t → 0", tm, g)
		}
	}
	if s, o := preconditioning(0); s != 1 || o != 0 {
		t.Errorf("t = 0: c_skip %g, c_out %g, want 1 and 0 (x̂0 = x_t)", s, o)
	}
	if s, o := preconditioning(1); s != 0 || o != 1 {
		t.Errorf("t = 1: c_skip %g, c_out %g, want 0 and 1 (x̂0 = F)", s, o)
	}
}

// TestPreconditionedEstimate checks that training and sampling read a
// preconditioned denoiser's output F the same way, as the noise estimate
// c_skip·x_t + c_out·F: the training loss is the weighted squared error
// of that estimate (and of F itself without preconditioning), and the
// sampler's prediction is that estimate.
func TestPreconditionedEstimate(t *testing.T) {
	dcfg, err := dit.Preset("tiny", 4)
	if err != nil {
		t.Fatal(err)
	}
	dcfg.SelfCond = false
	net, err := dit.New(dcfg, tensor.NewRNG(3), nn.WithDType(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	r := tensor.NewRNG(4)
	for _, p := range net.Params() { // an output that is not zero
		tensor.FillNormal(p.V.Value, r, 0, 0.3)
	}
	const B, N, d = 3, 5, 4
	x1 := tensor.RandN(r, tensor.Float64, B, N, d)
	mask := tokenMask(tensor.Float64, []int{5, 3, 4}, N)
	tensor.Mul(x1, x1, mask.Reshape(B, N, 1))
	for _, pc := range []bool{false, true} {
		cfg := Config{DiT: dcfg, Precondition: pc}
		p := prepareBatch(cfg, x1, mask, tensor.NewRNG(7))
		tp := autograd.NewTape()
		loss, err := p.loss(tp, net, cfg, tensor.NewRNG(8), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := loss.Value.Float64s()[0]
		tp.Release()
		ng := autograd.NoGrad()
		f := net.Forward(ng, autograd.NewConst(p.xt), p.t, mask, nil).Value.Float64s()
		ng.Release()
		xt, x0, w, md := p.xt.Float64s(), p.target.Float64s(), p.w.Float64s(), mask.Float64s()
		want := 0.0
		for i := range f {
			b, tok := i/(N*d), i/d
			est := f[i]
			if pc {
				skip, out := preconditioning(p.t[b])
				est = skip*xt[i] + out*f[i]
			}
			want += w[tok] * md[tok] * (est - x0[i]) * (est - x0[i])
		}
		if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
			t.Errorf("precondition %v: loss %.12g, want %.12g", pc, got, want)
		}
		// The sampler at one time for the whole batch.
		const tm = 0.37
		var g guidance
		pred, _ := g.predict(net, pc, p.xt, tm, mask, selfCond{})
		ng = autograd.NoGrad()
		f = net.Forward(ng, autograd.NewConst(p.xt), []float64{tm, tm, tm}, mask, nil).Value.Float64s()
		ng.Release()
		skip, out := preconditioning(tm)
		for i, v := range pred.Float64s() {
			e := f[i]
			if pc {
				e = skip*xt[i] + out*f[i]
			}
			if math.Abs(v-e) > 1e-12*(1+math.Abs(e)) {
				t.Fatalf("precondition %v: sampler's estimate %d is %g, want %g", pc, i, v, e)
			}
		}
	}
}
