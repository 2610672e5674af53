package flow_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"lgflow/flow"
	"lgflow/tensor"
	"lgflow/vae"
)

// TestExpert checks Sampler.Experts given as models (Expert.Model): the
// expert's denoiser replaces the model's exactly at the steps starting in
// its band, and a mismatched expert is refused.
func TestExpert(t *testing.T) {
	f := getFixture(t)
	m := f.model
	ctx := context.Background()
	latents := sampleLatentsOf(t, 5)
	expert, other, wide := otherDenoisers(t, m, 77)
	plain, alone := latents(m), latents(&expert)
	if sameLatents(plain, alone) {
		t.Fatal("the two denoisers sample the same latents")
	}
	experts := func(es ...flow.Expert) flow.SampleOption {
		return flow.WithSettings(func(s *flow.Sampler) { s.Experts = es })
	}
	// The grid's steps start at 0.01 and end with the jump from 0.95: an
	// expert from 1 is never used, one from before 0.01 at every step.
	if !sameLatents(plain, latents(m, withExpert(&expert, 1))) {
		t.Error("an expert from time 1 changed the samples")
	}
	if !sameLatents(alone, latents(m, withExpert(&expert, 0.005))) {
		t.Error("an expert used at every step does not sample what it samples alone")
	}
	if !sameLatents(plain, latents(m, withExpert(m, 0.5))) {
		t.Error("the model as its own expert changed the samples")
	}
	// From 0.96 no step starts late enough; from 0.95 the final jump is
	// the expert's.
	if !sameLatents(plain, latents(m, withExpert(&expert, 0.96))) {
		t.Error("an expert from 0.96 changed samples whose last step starts at 0.95")
	}
	late := latents(m, withExpert(&expert, 0.95))
	mid := latents(m, withExpert(&expert, 0.5))
	for _, z := range [][]*tensor.Tensor{late, mid} {
		if sameLatents(z, plain) || sameLatents(z, alone) {
			t.Error("an expert for part of the path gives the samples of one denoiser")
		}
	}
	for i := range mid {
		if d := tensor.MaxAbs(tensor.Sub(nil, mid[i], plain[i])); math.IsNaN(d) {
			t.Errorf("graph %d: latents with an expert are not finite", i)
		}
	}
	// Several experts, each in its band, whatever the order they are
	// given in.
	third, _, _ := otherDenoisers(t, m, 78)
	both := latents(m, experts(flow.Expert{Model: &expert, From: 0.5, Until: 0.95}, flow.Expert{Model: &third, From: 0.95}))
	if !sameLatents(both, latents(m, experts(flow.Expert{Model: &third, From: 0.95}, flow.Expert{Model: &expert, From: 0.5, Until: 0.95}))) {
		t.Error("the order of two experts changed the samples")
	}
	if sameLatents(both, mid) || sameLatents(both, latents(m, withExpert(&third, 0.95))) {
		t.Error("a second expert changed nothing")
	}
	if !sameLatents(mid, latents(m, experts(flow.Expert{Model: &expert, From: 0.5, Until: 1}, flow.Expert{Model: &third, From: 1}))) {
		t.Error("an expert from time 1 beside another changed the samples")
	}
	// A band that ends hands the steps back to the flow's own denoiser.
	if !sameLatents(plain, latents(m, experts(flow.Expert{Model: &expert, From: 0.005, Until: 0.01}))) {
		t.Error("an expert whose band ends before the first step took a step")
	}
	if !sameLatents(late, latents(m, experts(flow.Expert{Model: &expert, From: 0.95, Until: 1}))) {
		t.Error("a band until 1 is not a band to the end")
	}

	otherSpace := expert
	otherAE, err := vae.New(m.VAE.Cfg, 12345) // an encoder with other weights
	if err != nil {
		t.Fatal(err)
	}
	otherSpace.VAE = otherAE
	for _, tc := range []struct {
		name string
		opts []flow.SampleOption
		want string
	}{
		{"first time 0", []flow.SampleOption{withExpert(&expert, 0)}, "from: 0 is outside (0, 1]"},
		{"first time after 1", []flow.SampleOption{withExpert(&expert, 1.5)}, "from: 1.5 is outside"},
		{"NaN first time", []flow.SampleOption{withExpert(&expert, math.NaN())}, "from: NaN"},
		{"other latent scale", []flow.SampleOption{withExpert(&other, 0.9)}, "latent scaling"},
		{"other denoiser shape", []flow.SampleOption{withExpert(&wide, 0.9)}, "denoiser shape"},
		{"no denoiser", []flow.SampleOption{withExpert(&flow.Model{}, 0.9)}, "denoiser shape"},
		{"neither model nor file", []flow.SampleOption{withExpert(nil, 0.9)}, "not a file name in the bundle"},
		{"a file the model lacks", []flow.SampleOption{experts(flow.Expert{File: "expert.safetensors", From: 0.9})}, "not part of the model"},
		{"other latent space", []flow.SampleOption{withExpert(&otherSpace, 0.9)}, "latent space"},
		{"overlapping bands", []flow.SampleOption{experts(flow.Expert{Model: &expert, From: 0.9}, flow.Expert{Model: m, From: 0.9})}, "inside the band"},
	} {
		if _, err := m.SampleLatents(ctx, 2, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}
