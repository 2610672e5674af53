package vae

import (
	"math"
	"testing"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/tensor"
)

// labelledFixture returns three small labelled trees, their features and
// batch, and a float64 model for them.
func labelledFixture(t *testing.T) (*Model, *Dataset, *graph.Batch) {
	t.Helper()
	c := tinyConfig(false)
	c.NodeClasses = 3
	gs := append(datasets.Tree(5, 2, 1), datasets.Tree(4, 1, 2)...)
	setLabels(gs, 3)
	return newFloat64(t, c), prepare(t, gs, c), graph.NewBatch(gs)
}

// TestDecoderLoss checks that DecoderLoss of the encoder's padded means is
// the objective's edge and node terms in evaluation mode, that its
// gradient with respect to the latents matches finite differences, and
// that it refuses latents of the wrong shape.
func TestDecoderLoss(t *testing.T) {
	m, d, b := labelledFixture(t)
	tp := autograd.NewTape()
	loss, _ := m.Objective(tp, b, d.Features, Eval, nil)
	want := loss.Edge + loss.Node
	mu, _ := m.Encode(tp, b, d.Features, Eval, nil)
	z := padConst(mu.Value, b)
	got, err := m.DecoderLoss(tp, autograd.NewConst(z), b)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Item()-want) > 1e-12*(1+want) {
		t.Errorf("DecoderLoss = %.15g, want edge + node = %.15g", got.Item(), want)
	}
	tp.Release()

	zp := autograd.NewParam(z.Clone())
	err = autograd.CheckGrad(func(tp *autograd.Tape) *autograd.Var {
		l, err := m.DecoderLoss(tp, zp, b)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}, []*autograd.Var{zp}, 1e-6, 1e-5)
	if err != nil {
		t.Error(err)
	}

	tp = autograd.NewTape()
	defer tp.Release()
	bad := autograd.NewConst(tensor.New(tensor.Float64, b.Len(), b.MaxN+1, m.Cfg.Latent))
	if _, err := m.DecoderLoss(tp, bad, b); err == nil {
		t.Error("DecoderLoss accepted latents wider than the batch")
	}
}

// TestFrozen checks that a frozen copy decodes exactly as the model does,
// passes gradients to its input, and neither computes nor accumulates a
// gradient for any weight, the original's included.
func TestFrozen(t *testing.T) {
	m, d, b := labelledFixture(t)
	f, err := m.Frozen()
	if err != nil {
		t.Fatal(err)
	}
	if f.EncoderFingerprint() != m.EncoderFingerprint() {
		t.Error("the frozen copy has another encoder")
	}
	ng := autograd.NoGrad()
	mu, _ := m.Encode(ng, b, d.Features, Eval, nil)
	z := padConst(mu.Value, b)
	ng.Release()
	zp := autograd.NewParam(z)
	for _, p := range m.Params() {
		p.V.Grad = nil
	}
	tp := autograd.NewTape()
	lm, err := m.DecoderLoss(tp, zp, b)
	if err != nil {
		t.Fatal(err)
	}
	lf, err := f.DecoderLoss(tp, zp, b)
	if err != nil {
		t.Fatal(err)
	}
	if lm.Item() != lf.Item() {
		t.Errorf("frozen copy's loss %v, the model's %v", lf.Item(), lm.Item())
	}
	tp.Backward(lf)
	tp.Release()
	if zp.Grad == nil || tensor.MaxAbs(zp.Grad) == 0 {
		t.Error("no gradient reached the latents through the frozen decoder")
	}
	for _, p := range f.Params() {
		if p.V.Grad != nil || p.V.RequiresGrad() {
			t.Errorf("frozen weight %s: gradient %v, RequiresGrad %v", p.Name, p.V.Grad != nil, p.V.RequiresGrad())
		}
	}
	for _, p := range m.Params() {
		if p.V.Grad != nil || !p.V.RequiresGrad() {
			t.Errorf("the model's weight %s: gradient %v, RequiresGrad %v", p.Name, p.V.Grad != nil, p.V.RequiresGrad())
		}
	}
}
