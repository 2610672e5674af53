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

// TestExpert checks WithExpert: the expert's denoiser replaces the model's
// exactly at the steps starting at or after its first time, and a
// mismatched expert is refused.
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
	// The grid's steps start at 0.01 and end with the jump from 0.95: an
	// expert from 1 is never used, one from before 0.01 at every step.
	if !sameLatents(plain, latents(m, flow.WithExpert(&expert, 1))) {
		t.Error("an expert from time 1 changed the samples")
	}
	if !sameLatents(alone, latents(m, flow.WithExpert(&expert, 0.005))) {
		t.Error("an expert used at every step does not sample what it samples alone")
	}
	if !sameLatents(plain, latents(m, flow.WithExpert(m, 0.5))) {
		t.Error("the model as its own expert changed the samples")
	}
	// From 0.96 no step starts late enough; from 0.95 the final jump is
	// the expert's.
	if !sameLatents(plain, latents(m, flow.WithExpert(&expert, 0.96))) {
		t.Error("an expert from 0.96 changed samples whose last step starts at 0.95")
	}
	late := latents(m, flow.WithExpert(&expert, 0.95))
	mid := latents(m, flow.WithExpert(&expert, 0.5))
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
	// Several experts: the one with the latest first time not after a
	// step's start takes it, whatever the order they are given in.
	third, _, _ := otherDenoisers(t, m, 78)
	both := latents(m, flow.WithExpert(&expert, 0.5), flow.WithExpert(&third, 0.95))
	if !sameLatents(both, latents(m, flow.WithExpert(&third, 0.95), flow.WithExpert(&expert, 0.5))) {
		t.Error("the order of two experts changed the samples")
	}
	if sameLatents(both, mid) || sameLatents(both, latents(m, flow.WithExpert(&third, 0.95))) {
		t.Error("a second expert changed nothing")
	}
	if !sameLatents(mid, latents(m, flow.WithExpert(&expert, 0.5), flow.WithExpert(&third, 1))) {
		t.Error("an expert from time 1 beside another changed the samples")
	}
	if !sameLatents(plain, latents(m, flow.WithExpert(&expert, 0.005), flow.WithExpert(m, 0.01))) {
		t.Error("the model as an expert from the first step did not take every step")
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
		{"first time 0", []flow.SampleOption{flow.WithExpert(&expert, 0)}, "first time"},
		{"first time after 1", []flow.SampleOption{flow.WithExpert(&expert, 1.5)}, "first time"},
		{"NaN first time", []flow.SampleOption{flow.WithExpert(&expert, math.NaN())}, "first time"},
		{"other latent scale", []flow.SampleOption{flow.WithExpert(&other, 0.9)}, "latent scaling"},
		{"other denoiser shape", []flow.SampleOption{flow.WithExpert(&wide, 0.9)}, "denoiser shape"},
		{"no denoiser", []flow.SampleOption{flow.WithExpert(&flow.Model{}, 0.9)}, "denoiser shape"},
		{"nil expert", []flow.SampleOption{flow.WithExpert(nil, 0.9)}, "denoiser shape"},
		{"other latent space", []flow.SampleOption{flow.WithExpert(&otherSpace, 0.9)}, "latent space"},
		{"two experts from the same time", []flow.SampleOption{flow.WithExpert(&expert, 0.9), flow.WithExpert(m, 0.9)}, "two experts from time 0.9"},
	} {
		if _, err := flow.SampleLatents(ctx, m, 2, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}
