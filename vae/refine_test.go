package vae

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/nn"
	"lgflow/tensor"
)

func refineConfig() Config {
	c := tinyConfig(false)
	c.Refine, c.RefineWidth, c.RefineHeads = 2, 8, 2
	return c
}

// TestRefineGradients checks the refinement network's and the symmetric
// logits' gradients against finite differences. The output layer is
// randomised first: at its zero initialisation the gradients of every
// layer before it vanish and the check would be weak.
func TestRefineGradients(t *testing.T) {
	c := refineConfig()
	c.SymmetricLogits = true
	m, err := New(c, 5, nn.WithDType(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	r := tensor.NewRNG(6)
	tensor.Copy(m.refine.out.W.Value, tensor.RandN(r, tensor.Float64, m.refine.out.W.Value.Shape()...))
	gs := append(datasets.Planar(6, 2, 1), datasets.Tree(4, 1, 1)...)
	d := prepare(t, gs, c)
	b := graph.NewBatch(gs)
	var params []*autograd.Var
	for _, p := range m.Params() {
		if strings.HasPrefix(p.Name, "decoder.") {
			params = append(params, p.V)
		}
	}
	err = autograd.CheckGrad(func(tp *autograd.Tape) *autograd.Var {
		loss, _ := m.Objective(tp, b, d.Features, Eval, nil)
		return loss.Total
	}, params, 1e-6, 1e-4)
	if err != nil {
		t.Fatal(err)
	}
}

// TestRefineStartsAsIdentity: a refinement network added to a trained
// model (TrainOptions.Init) decodes exactly as the model without it until
// it is trained, and the symmetric logits are symmetric.
func TestRefineStartsAsIdentity(t *testing.T) {
	ctx := context.Background()
	base, err := New(tinyConfig(false), 2)
	if err != nil {
		t.Fatal(err)
	}
	gs := datasets.Planar(10, 4, 3)
	d := prepare(t, gs, base.Cfg)
	tc := TrainConfig{Steps: 1, BatchSize: 4, LR: 1e-12, MinLR: 1e-12, Beta1: 0.9, Beta2: 0.95, Seed: 1}
	m, err := Train(ctx, refineConfig(), tc, d, nil, TrainOptions{Init: base, FreezeEncoder: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.refine == nil {
		t.Fatal("no refinement network")
	}
	logits := func(m *Model) *tensor.Tensor {
		tp := autograd.NoGrad()
		defer tp.Release()
		b := graph.NewBatch(gs)
		mu, _ := m.Encode(tp, b, d.Features, Eval, nil)
		return m.DecodeDense(tp, Pad(tp, mu, b), sizes(b)).EdgeLogits.Value.Clone()
	}
	want, got := logits(base), logits(m)
	if diff := maxAbsDiff(want, got); diff > 1e-6 {
		t.Errorf("a fresh refinement network changed the logits by %g", diff)
	}
	sym := refineConfig()
	sym.SymmetricLogits = true
	ms, err := New(sym, 4)
	if err != nil {
		t.Fatal(err)
	}
	l := logits(ms)
	B, N, C := l.Dim(0), l.Dim(1), l.Dim(3)
	asym := 0.0
	lb := logits(base)
	for g := range B {
		for i := range N {
			for j := range N {
				for k := range C {
					if d := math.Abs(l.At(g, i, j, k) - l.At(g, j, i, k)); d > 1e-6 {
						t.Fatalf("SymmetricLogits: logit (%d, %d, %d, %d) differs from its transpose by %g", g, i, j, k, d)
					}
					asym = max(asym, math.Abs(lb.At(g, i, j, k)-lb.At(g, j, i, k)))
				}
			}
		}
	}
	if asym < 1e-4 {
		t.Error("the reference decoder's logits are symmetric too: the check above is vacuous")
	}
}

// TestRefineEquivariant: permuting the nodes of a graph permutes its
// refined latents, and padding does not change them.
func TestRefineEquivariant(t *testing.T) {
	c := refineConfig()
	m, err := New(c, 8)
	if err != nil {
		t.Fatal(err)
	}
	r := tensor.NewRNG(9)
	tensor.Copy(m.refine.out.W.Value, tensor.RandN(r, tensor.Float32, m.refine.out.W.Value.Shape()...))
	const n, d = 5, 4
	z := tensor.RandN(r, tensor.Float32, 1, n, d)
	perm := []int{3, 0, 4, 1, 2}
	zp := tensor.New(tensor.Float32, 2, n+2, d) // the permuted graph, padded, beside a smaller one
	for i, p := range perm {
		for k := range d {
			zp.Set(z.At(0, p, k), 0, i, k)
			zp.Set(z.At(0, i, k), 1, i, k)
		}
	}
	tp := autograd.NoGrad()
	defer tp.Release()
	a := m.refine.Forward(tp, autograd.NewConst(z), []int{n}).Value
	b := m.refine.Forward(tp, autograd.NewConst(zp), []int{n, 3}).Value
	moved := 0.0
	for i, p := range perm {
		for k := range d {
			if diff := math.Abs(a.At(0, p, k) - b.At(0, i, k)); diff > 1e-5 {
				t.Fatalf("node %d dim %d: %g alone, %g permuted and padded", p, k, a.At(0, p, k), b.At(0, i, k))
			}
			moved = max(moved, math.Abs(a.At(0, p, k)-z.At(0, p, k)))
		}
	}
	if moved < 1e-3 {
		t.Error("the refinement network did not change the latents: the check is vacuous")
	}
	for i := n; i < n+2; i++ {
		for k := range d {
			if b.At(0, i, k) != 0 {
				t.Fatalf("padding row %d is not zero", i)
			}
		}
	}
}

// TestLatentNoiseSpread: the decoder's training noise has RMS
// LatentNoise·s for every graph, or, with LatentNoiseSpread, a level that
// differs from graph to graph within [0, LatentNoise].
func TestLatentNoiseSpread(t *testing.T) {
	gs := datasets.Planar(12, 16, 2)
	b := graph.NewBatch(gs)
	mu := tensor.RandN(tensor.NewRNG(4), tensor.Float32, b.NumNodes(), 8)
	tensor.MulScalar(mu, mu, 3)
	s := stdAll(mu)
	for _, spread := range []bool{false, true} {
		m := &Model{Cfg: Config{LatentNoise: 0.1, LatentNoiseSpread: spread}}
		noise := m.latentNoise(mu, b, tensor.NewRNG(5))
		lo, hi := math.Inf(1), math.Inf(-1)
		for g := range b.Len() {
			sum, cnt := 0.0, 0
			for i := b.NodeOffset[g]; i < b.NodeOffset[g+1]; i++ {
				for k := range 8 {
					v := noise.At(i, k) / s
					sum += v * v
					cnt++
				}
			}
			rms := math.Sqrt(sum / float64(cnt))
			lo, hi = min(lo, rms), max(hi, rms)
		}
		switch {
		case !spread && (lo < 0.09 || hi > 0.11):
			t.Errorf("fixed level: per-graph noise RMS from %.4f to %.4f, want 0.1", lo, hi)
		case spread && (hi > 0.11 || hi-lo < 0.04):
			t.Errorf("spread levels: per-graph noise RMS from %.4f to %.4f, want levels spread over [0, 0.1]", lo, hi)
		}
	}
}

func maxAbsDiff(a, b *tensor.Tensor) float64 {
	x, y := a.To(tensor.Float64).Data64(), b.To(tensor.Float64).Data64()
	m := 0.0
	for i := range x {
		m = max(m, math.Abs(x[i]-y[i]))
	}
	return m
}

// TestRegisterPresetConcurrent registers presets while others read them;
// run with -race it catches an unguarded map.
func TestRegisterPresetConcurrent(t *testing.T) {
	base, err := PresetFor("planar", "cpu")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	for i := range 4 {
		go func() {
			for j := range 50 {
				RegisterPreset("race-test", fmt.Sprint(i, "-", j), base)
				if _, err := PresetFor("planar", "cpu"); err != nil {
					t.Error(err)
				}
				_ = PresetNames()
			}
			done <- true
		}()
	}
	for range 4 {
		<-done
	}
	if p, err := PresetFor("race-test", "3-49"); err != nil || p != base {
		t.Errorf("a registered preset reads back as %v, %v", p, err)
	}
}
