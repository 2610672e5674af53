package flow_test

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"lgflow/flow"
	"lgflow/tensor"
	"lgflow/vae"
)

// TestEndpointPerturbation: latents noised to a time near the data end come
// back close to where they started, latents noised early come back far
// from it, padding stays zero, the draws follow the generator, and a vae
// training run takes the function.
func TestEndpointPerturbation(t *testing.T) {
	f := getFixture(t)
	m := f.model
	sizes := []int{3, 5}
	z := tensor.RandN(tensor.NewRNG(1), tensor.Float32, 2, 5, 4)
	for j := 3; j < 5; j++ {
		for k := range 4 {
			z.Set(0, 0, j, k)
		}
	}
	dist := func(tMin, tMax float64, seed uint64) float64 {
		p, err := m.EndpointPerturbation(tMin, tMax, 3, flow.Sampler{FinalJump: 0.995})
		if err != nil {
			t.Fatal(err)
		}
		out, err := p(z, sizes, tensor.NewRNG(seed))
		if err != nil {
			t.Fatal(err)
		}
		if out.Dim(0) != 2 || out.Dim(1) != 5 || out.Dim(2) != 4 {
			t.Fatalf("shape %v", out.Shape())
		}
		sum := 0.0
		for g, s := range sizes {
			for j := range 5 {
				for k := range 4 {
					d := out.At(g, j, k) - z.At(g, j, k)
					if j >= s {
						if out.At(g, j, k) != 0 {
							t.Fatalf("padding (%d, %d) is %g", g, j, out.At(g, j, k))
						}
						continue
					}
					sum += d * d
				}
			}
		}
		return math.Sqrt(sum)
	}
	near, far := dist(0.99, 0.99, 2), dist(0.05, 0.05, 2)
	if !(near < 0.2*far) {
		t.Errorf("distance from the start: %g from t = 0.99, %g from t = 0.05", near, far)
	}
	if a, b := dist(0.5, 0.9, 3), dist(0.5, 0.9, 3); a != b {
		t.Errorf("same generator, different perturbations: %g, %g", a, b)
	}
	for _, tc := range []struct {
		tMin, tMax float64
		steps      int
		want       string
	}{
		{0, 0.5, 3, "tMin"}, {0.6, 0.5, 3, "tMin"}, {0.5, 1, 3, "tMin"}, {0.5, 0.6, 0, "step"},
	} {
		if _, err := m.EndpointPerturbation(tc.tMin, tc.tMax, tc.steps, flow.Sampler{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("EndpointPerturbation(%g, %g, %d): error %v, want one mentioning %q", tc.tMin, tc.tMax, tc.steps, err, tc.want)
		}
	}
	if _, err := m.EndpointPerturbation(0.5, 0.9, 2, flow.Sampler{Experts: []flow.Expert{{Model: &flow.Model{}, From: 0.9}}}); err == nil || !strings.Contains(err.Error(), "denoiser shape") {
		t.Errorf("EndpointPerturbation with a denoiser of another shape: error %v", err)
	}
	if _, err := m.EndpointPerturbation(0.5, 0.9, 2, flow.Sampler{Temperature: -1}); err == nil || !strings.Contains(err.Error(), "temperature") {
		t.Errorf("EndpointPerturbation with invalid settings: error %v", err)
	}
	p, err := m.EndpointPerturbation(0.5, 0.9, 2, flow.Sampler{FinalJump: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p(tensor.New(tensor.Float32, 2, 5, 3), sizes, tensor.NewRNG(1)); err == nil {
		t.Error("latents of the wrong width: no error")
	}

	// A decoder-only fine-tune on the flow's endpoints runs and leaves the
	// encoder alone.
	tc := vae.TrainConfig{Steps: 3, BatchSize: 4, LR: 1e-3, MinLR: 1e-3, Beta1: 0.9, Beta2: 0.95, Seed: 1}
	ft, err := vae.Train(context.Background(), f.ae.Cfg, tc, f.data, nil, vae.TrainOptions{Init: f.ae, FreezeEncoder: true, Perturb: p})
	if err != nil {
		t.Fatal(err)
	}
	if ft.EncoderFingerprint() != f.ae.EncoderFingerprint() {
		t.Error("the encoder moved")
	}
	// The same with a refinement network added to the decoder: the flow
	// still loads with the fine-tuned autoencoder, and with one whose
	// encoder moved it does not.
	refined := f.ae.Cfg
	refined.Refine, refined.RefineWidth, refined.RefineHeads, refined.SymmetricLogits = 1, 8, 2, true
	ftr, err := vae.Train(context.Background(), refined, tc, f.data, nil, vae.TrainOptions{Init: f.ae, FreezeEncoder: true, Perturb: p})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flow.safetensors")
	if err := m.Save(path, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Load(path, ftr); err != nil {
		t.Errorf("the flow does not load with its autoencoder's refined decoder: %v", err)
	}
	moved, err := vae.Train(context.Background(), refined, tc, f.data, nil, vae.TrainOptions{Init: f.ae})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Load(path, moved); err == nil {
		t.Error("the flow loads with an autoencoder whose encoder was retrained")
	}
	if _, err := vae.Train(context.Background(), f.ae.Cfg, tc, f.data, nil, vae.TrainOptions{Init: f.ae, Perturb: p}); err == nil {
		t.Error("Perturb without FreezeEncoder: no error")
	}
	bad := func(z *tensor.Tensor, sizes []int, r *tensor.RNG) (*tensor.Tensor, error) {
		return z.Slice(1, 0, 1), nil
	}
	if _, err := vae.Train(context.Background(), f.ae.Cfg, tc, f.data, nil, vae.TrainOptions{Init: f.ae, FreezeEncoder: true, Perturb: bad}); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("a perturbation of the wrong shape: error %v", err)
	}
}
