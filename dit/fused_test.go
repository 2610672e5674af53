package dit

import (
	"math"
	"testing"

	"lgflow/autograd"
	"lgflow/nn"
	"lgflow/tensor"
)

// TestFusedMatchesUnfused checks that the fused block ops (adaLN-modulated
// LayerNorm, gated residual, bias + GELU, attention through
// tensor.FlashAttention) give the CPU the same output as the unfused ops,
// bit for bit, and parameter gradients within 1e-6 of the largest (they are
// identical but for the order of float64 partial sums of the LayerNorm
// parameters).
func TestFusedMatchesUnfused(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		cfg, err := Preset("small", 4)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Depth = 2
		m, err := New(cfg, tensor.NewRNG(11), nn.WithDType(dt))
		if err != nil {
			t.Fatal(err)
		}
		r := tensor.NewRNG(12)
		const b, n = 6, 24
		x := tensor.RandN(r, dt, b, n, cfg.Dim)
		sc := tensor.RandN(r, dt, b, n, cfg.Dim)
		mask := tensor.Full(dt, 1, b, n)
		for i := range b {
			for j := n - 3*i; j < n; j++ {
				mask.Set(0, i, j)
			}
		}
		gy := tensor.RandN(r, dt, b, n, cfg.Dim)
		ts := []float64{0.1, 0.3, 0.5, 0.7, 0.9, 0.99}
		run := func(fused bool) (*tensor.Tensor, []*tensor.Tensor) {
			useFused = fused
			defer func() { useFused = true }()
			for _, p := range m.Params() {
				p.V.Grad = nil
			}
			tp := autograd.NewTape()
			defer tp.Release()
			y := m.Forward(tp, autograd.NewConst(x), ts, mask, autograd.NewConst(sc))
			tp.BackwardWith(y, gy)
			var grads []*tensor.Tensor
			for _, p := range m.Params() {
				grads = append(grads, p.V.Grad.Clone())
			}
			return y.Value.Clone(), grads
		}
		y1, g1 := run(true)
		y0, g0 := run(false)
		a, w := y1.Float64s(), y0.Float64s()
		for i := range w {
			if a[i] != w[i] {
				t.Fatalf("%v: output[%d] = %.9g fused, %.9g unfused", dt, i, a[i], w[i])
			}
		}
		exact := 0
		for k, p := range m.Params() {
			a, w := g1[k].Float64s(), g0[k].Float64s()
			big, diff := 0.0, 0.0
			for i := range w {
				big = max(big, math.Abs(w[i]))
				diff = max(diff, math.Abs(a[i]-w[i]))
			}
			if diff > 1e-6*big {
				t.Errorf("%v: gradient of %s differs by %.3g (largest %.3g)", dt, p.Name, diff, big)
			}
			if diff == 0 {
				exact++
			}
		}
		t.Logf("%v: output identical; %d of %d parameter gradients identical", dt, exact, len(m.Params()))
	}
}

// TestForwardNoGradFused checks the no-grad forward (sampling) through
// the fused ops against the unfused ops, bit for bit.
func TestForwardNoGradFused(t *testing.T) {
	m := tinyModel(t, tensor.Float32)
	r := tensor.NewRNG(4)
	x := tensor.RandN(r, tensor.Float32, 40, 30, 3)
	mask := tensor.Full(tensor.Float32, 1, 40, 30)
	for j := 20; j < 30; j++ {
		mask.Set(0, 3, j)
	}
	ts := make([]float64, 40)
	for i := range ts {
		ts[i] = float64(i) / 40
	}
	eval := func(fused bool) []float64 {
		useFused = fused
		defer func() { useFused = true }()
		tp := autograd.NoGrad()
		defer tp.Release()
		return m.Forward(tp, autograd.NewConst(x), ts, mask, nil).Value.Float64s()
	}
	a, w := eval(true), eval(false)
	for i := range w {
		if a[i] != w[i] {
			t.Fatalf("output[%d] = %.9g fused, %.9g unfused", i, a[i], w[i])
		}
	}
}
