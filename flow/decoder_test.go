package flow

import (
	"context"
	"math"
	"testing"

	"lgflow/autograd"
	"lgflow/graph/datasets"
	"lgflow/tensor"
	"lgflow/vae"
)

// TestDataEstimate checks that the data estimate of a perfect prediction
// is the data itself, in the flow's space and, through the decoder term's
// latent map, in the LG-VAE's.
func TestDataEstimate(t *testing.T) {
	r := tensor.NewRNG(7)
	x1 := tensor.RandN(r, tensor.Float64, 5, 3, 4)
	mask := tensor.New(tensor.Float64, 5, 3)
	tensor.FillNormal(mask, r, 1, 0) // all ones
	cfg := Config{TimeMean: 2}
	p := prepareBatch(cfg, x1, mask, tensor.NewRNG(3))
	base, coef := dataEstimate(p.xt, p.t)
	got := tensor.Add(nil, base, tensor.Mul(nil, p.target, coef))
	if d := tensor.MaxAbs(tensor.Sub(nil, got, x1)); d > 1e-12 {
		t.Errorf("estimate from the true target is %g from the data", d)
	}
	const scale = 2.5
	z := tensor.MulScalar(nil, x1, 1/scale) // the LG-VAE latents of x1
	d := &decoderTerm{scale: scale}
	base, coef = d.latentMap(p.xt, p.t)
	got = tensor.Add(nil, base, tensor.Mul(nil, p.target, coef))
	if diff := tensor.MaxAbs(tensor.Sub(nil, got, z)); diff > 1e-12 {
		t.Errorf("latents from the true target are %g from the data's", diff)
	}
}

// TestDecoderWeight trains the same tiny flow with and without the decoder
// loss: with it, the frozen decoder's loss of the denoiser's one-step data
// estimates on the training graphs must end lower, the autoencoder's
// weights untouched.
func TestDecoderWeight(t *testing.T) {
	ctx := context.Background()
	// A briefly trained autoencoder, whose decoder's logits depend on the
	// latents as a trained one's do.
	gs := datasets.Planar(9, 8, 1)
	vc := vae.Config{K: 8, Latent: 8, PhiWidth: 32, Layers: 3, Width: 32, DeepSet: 8, EdgeClasses: 1,
		Norm: vae.LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true, PhiGate: true}
	data, err := vae.Prepare(ctx, gs, vc, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := vae.TrainConfig{Steps: 600, BatchSize: 8, LR: 3e-3, MinLR: 1e-3, Warmup: 20, Beta1: 0.9, Beta2: 0.95, ClipNorm: 1, Seed: 1}
	ae, err := vae.Train(ctx, vc, tc, data, data, vae.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lat, err := EncodeLatents(ctx, ae, data, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ae.Params() {
		p.V.Grad = nil // left by its training
	}
	fp := ae.EncoderFingerprint()
	// The decoder loss of the one-step estimates at times near the data.
	probe := func(m *Model) float64 {
		idx := []int{0, 1, 2, 3, 4, 5, 6, 7}
		x1, mask := lat.batchLatents(idx, m.Scale, false, nil)
		p := prepareBatch(Config{TimeMean: 2}, x1, mask, tensor.NewRNG(99))
		d, err := newDecoderTerm(Config{DecoderWeight: 1}, ae, m)
		if err != nil {
			t.Fatal(err)
		}
		d.prepare(p, data, idx)
		tp := autograd.NoGrad()
		defer tp.Release()
		pred := m.Net.Forward(tp, autograd.NewConst(p.xt), p.t, p.mask, nil)
		l, err := d.lossOf(tp, pred, p)
		if err != nil {
			t.Fatal(err)
		}
		return l.Item()
	}
	var loss [2]float64
	for i, w := range []float64{0, 10} {
		cfg, err := Preset("", "tiny", 8)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Steps, cfg.TimeMean, cfg.DecoderWeight, cfg.DiT.SelfCond = 240, 2, w, false
		m, err := Train(ctx, cfg, ae, data, lat, TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		loss[i] = probe(m)
		if math.IsNaN(loss[i]) {
			t.Fatalf("weight %v: decoder loss NaN", w)
		}
	}
	t.Logf("decoder loss of the data estimates: %.4f without the term, %.4f with it", loss[0], loss[1])
	if !(loss[1] < 0.9*loss[0]) {
		t.Errorf("the decoder term did not lower the decoder loss: %.4f without, %.4f with", loss[0], loss[1])
	}
	if ae.EncoderFingerprint() != fp {
		t.Error("training changed the autoencoder")
	}
	for _, p := range ae.Params() {
		if p.V.Grad != nil {
			t.Errorf("the autoencoder's weight %s received a gradient", p.Name)
		}
	}
}
