package dit

import (
	"testing"

	"lgflow/autograd"
	"lgflow/nn"
	"lgflow/tensor"
)

// TestPresetParamCounts checks the parameter counts the paper reports for
// DiT-T, DiT-S and DiT-B (16.2M, 32.2M, 128.4M) at latent dimension 16,
// against the exact counts derived by hand from the architecture.
func TestPresetParamCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{
		{"T", 16235152},
		{"S", 32204176},
		{"B", 128404240},
	} {
		cfg, err := Preset(tc.name, 16)
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(cfg, tensor.NewRNG(1))
		if err != nil {
			t.Fatal(err)
		}
		if got := nn.NumParams(m); got != tc.want {
			t.Errorf("DiT-%s: %d parameters, want %d", tc.name, got, tc.want)
		}
	}
}

func tinyModel(t *testing.T, dt tensor.DType) *Model {
	t.Helper()
	cfg, err := Preset("tiny", 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, tensor.NewRNG(7), nn.WithDType(dt))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEquivarianceAndMasking checks that permuting a set's real tokens
// permutes the output, that padding never changes real tokens' outputs,
// and that padded outputs are zero.
func TestEquivarianceAndMasking(t *testing.T) {
	m := tinyModel(t, tensor.Float64)
	r := tensor.NewRNG(3)
	const n, pad, d = 5, 3, 3
	x := tensor.RandN(r, tensor.Float64, 1, n, d)
	sc := tensor.RandN(r, tensor.Float64, 1, n, d)
	ts := []float64{0.37}
	tp := autograd.NoGrad()
	base := m.Forward(tp, autograd.NewConst(x), ts, nil, autograd.NewConst(sc)).Value

	perm := []int{3, 0, 4, 1, 2}
	xp := tensor.New(tensor.Float64, 1, n, d)
	scp := tensor.New(tensor.Float64, 1, n, d)
	for i, p := range perm {
		for k := range d {
			xp.Set(x.At(0, p, k), 0, i, k)
			scp.Set(sc.At(0, p, k), 0, i, k)
		}
	}
	outp := m.Forward(tp, autograd.NewConst(xp), ts, nil, autograd.NewConst(scp)).Value
	for i, p := range perm {
		for k := range d {
			if diff := outp.At(0, i, k) - base.At(0, p, k); diff > 1e-10 || diff < -1e-10 {
				t.Fatalf("not equivariant at token %d: %v vs %v", i, outp.At(0, i, k), base.At(0, p, k))
			}
		}
	}

	// Pad with junk tokens; a second set in the batch must not matter.
	xb := tensor.RandN(r, tensor.Float64, 2, n+pad, d)
	scb := tensor.RandN(r, tensor.Float64, 2, n+pad, d)
	mask := tensor.New(tensor.Float64, 2, n+pad)
	for i := range n {
		for k := range d {
			xb.Set(x.At(0, i, k), 0, i, k)
			scb.Set(sc.At(0, i, k), 0, i, k)
		}
		mask.Set(1, 0, i)
	}
	mask.Set(1, 1, 0)
	outb := m.Forward(tp, autograd.NewConst(xb), []float64{0.37, 0.9}, mask, autograd.NewConst(scb)).Value
	for i := range n + pad {
		for k := range d {
			got := outb.At(0, i, k)
			want := 0.0
			if i < n {
				want = base.At(0, i, k)
			}
			if diff := got - want; diff > 1e-10 || diff < -1e-10 {
				t.Fatalf("token %d dim %d: got %v want %v", i, k, got, want)
			}
		}
	}
}

// TestGradients checks the DiT's gradients against finite differences.
func TestGradients(t *testing.T) {
	cfg := Config{Dim: 3, Width: 8, Depth: 2, Heads: 2, MLPRatio: 2, SelfCond: true, TimeFreqDim: 8, InitStd: 0.3}
	m, err := New(cfg, tensor.NewRNG(9), nn.WithDType(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	r := tensor.NewRNG(5)
	x := tensor.RandN(r, tensor.Float64, 2, 4, 3)
	sc := tensor.RandN(r, tensor.Float64, 2, 4, 3)
	mask := tensor.FromFloat64([]float64{1, 1, 1, 0, 1, 1, 1, 1}, 2, 4)
	var params []*autograd.Var
	for _, p := range m.Params() {
		params = append(params, p.V)
	}
	err = autograd.CheckGrad(func(tp *autograd.Tape) *autograd.Var {
		return m.Forward(tp, autograd.NewConst(x), []float64{0.2, 0.8}, mask, autograd.NewConst(sc))
	}, params, 1e-6, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
}
