package flow_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"lgflow/flow"
	"lgflow/tensor"
)

// TestGuidance checks WithGuidance: weight 0, or a model guiding itself,
// changes nothing (bit for bit); another model as the guide changes the
// latents by the extrapolated difference; and a guide that does not fit is
// an error.
func TestGuidance(t *testing.T) {
	f := getFixture(t)
	m := f.model
	ctx := context.Background()
	latents := sampleLatentsOf(t, 3)
	plain := latents(m)
	weak, other, wide := otherDenoisers(t, m, 99)
	if !sameLatents(plain, latents(m, flow.WithGuidance(&weak, 0))) {
		t.Error("guidance weight 0 changed the samples")
	}
	if !sameLatents(plain, latents(m, flow.WithGuidance(m, 1.5))) {
		t.Error("a model guiding itself changed the samples")
	}
	guided := latents(m, flow.WithGuidance(&weak, 1))
	if sameLatents(plain, guided) {
		t.Error("guidance by another model changed nothing")
	}
	for i := range guided {
		if d := tensor.MaxAbs(tensor.Sub(nil, guided[i], plain[i])); math.IsNaN(d) || d == 0 {
			t.Errorf("graph %d: guided latents differ from plain ones by %v", i, d)
		}
	}

	for _, tc := range []struct {
		name string
		opts []flow.SampleOption
		want string
	}{
		{"negative weight", []flow.SampleOption{flow.WithGuidance(&weak, -1)}, "guidance weight"},
		{"NaN weight", []flow.SampleOption{flow.WithGuidance(&weak, math.NaN())}, "guidance weight"},
		{"other latent scale", []flow.SampleOption{flow.WithGuidance(&other, 1)}, "latent scaling"},
		{"other denoiser shape", []flow.SampleOption{flow.WithGuidance(&wide, 1)}, "denoiser shape"},
		{"Heun", []flow.SampleOption{flow.WithGuidance(&weak, 1), flow.WithMethod(flow.Heun)}, "Euler"},
		{"no denoiser", []flow.SampleOption{flow.WithGuidance(&flow.Model{}, 1)}, "denoiser shape"},
	} {
		if _, err := flow.SampleLatents(ctx, m, 2, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}
