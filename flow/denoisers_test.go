package flow_test

import (
	"context"
	"slices"
	"testing"

	"lgflow/dit"
	"lgflow/flow"
	"lgflow/tensor"
)

// sampleLatentsOf returns a function sampling the latents of 4 graphs
// with the given seed, 6 steps and further options, failing t on error.
func sampleLatentsOf(t *testing.T, seed uint64) func(m *flow.Model, opts ...flow.SampleOption) []*tensor.Tensor {
	return func(m *flow.Model, opts ...flow.SampleOption) []*tensor.Tensor {
		t.Helper()
		z, err := m.SampleLatents(context.Background(), 4, append([]flow.SampleOption{flow.WithSeed(seed), withSteps(6)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return z
	}
}

// sameLatents reports whether two samples' latents are equal bit for bit.
func sameLatents(a, b []*tensor.Tensor) bool {
	for i := range a {
		if !slices.Equal(a[i].To(tensor.Float64).Data64(), b[i].To(tensor.Float64).Data64()) {
			return false
		}
	}
	return true
}

// otherDenoisers returns m with another denoiser of the same shape (drawn
// with seed), that model with another latent scale, and one whose
// denoiser is twice as wide: a second denoiser that fits m and two that
// do not.
func otherDenoisers(t *testing.T, m *flow.Model, seed uint64) (same, otherScale, wide flow.Model) {
	t.Helper()
	same = *m
	net, err := dit.New(m.Cfg.DiT, tensor.NewRNG(seed))
	if err != nil {
		t.Fatal(err)
	}
	same.Net = net
	otherScale = same
	otherScale.Scale *= 2
	wider, err := flow.Preset("", "tiny", m.Cfg.DiT.Dim)
	if err != nil {
		t.Fatal(err)
	}
	wider.DiT.Width *= 2
	wideNet, err := dit.New(wider.DiT, tensor.NewRNG(1))
	if err != nil {
		t.Fatal(err)
	}
	wide = same
	wide.Cfg, wide.Net = wider, wideNet
	return same, otherScale, wide
}
