package main

import (
	"reflect"
	"testing"

	"lgflow/flow"
)

// TestSampler checks the settings the example samples with: the shipped
// bundle's recipe, with each flag given in its place; flow.Sample's
// defaults and the flags when decoding is constrained or the models are
// not the shipped ones.
func TestSampler(t *testing.T) {
	band := []flow.Expert{{File: "flow-expert.safetensors", From: 0.4, Until: 0.75}}
	fm := &flow.Model{Recipe: &flow.Recipe{Format: flow.RecipeFormat,
		Sampler: flow.Sampler{Steps: 100, Temperature: 0.8, BatchSize: 256, Experts: band}}}
	defaults := options{steps: 100, batch: 256, temperature: 1, expertFrom: 0.4, expertUntil: 0.75}
	with := func(f func(o *options)) options {
		o := defaults
		o.set = map[string]bool{}
		f(&o)
		return o
	}
	for _, c := range []struct {
		name    string
		o       options
		shipped bool
		want    flow.Sampler
	}{
		{"shipped: the recipe", with(func(o *options) {}), true, fm.Recipe.Sampler},
		{"no expert", with(func(o *options) { o.expertPath = "none" }), true, flow.Sampler{Steps: 100, Temperature: 0.8, BatchSize: 256}},
		{"temperature given", with(func(o *options) { o.temperature, o.set["temperature"] = 1, true }), true,
			flow.Sampler{Steps: 100, Temperature: 1, BatchSize: 256, Experts: band}},
		{"steps and band given", with(func(o *options) {
			o.steps, o.expertUntil, o.set["steps"], o.set["expert-until"] = 20, 0.7, true, true
		}), true, flow.Sampler{Steps: 20, Temperature: 0.8, BatchSize: 256, Experts: []flow.Expert{{File: "flow-expert.safetensors", From: 0.4, Until: 0.7}}}},
		{"constrained", with(func(o *options) { o.constrained = true }), true, flow.Sampler{Steps: 100, Temperature: 1, BatchSize: 256}},
		{"models of one's own", with(func(o *options) {}), false, flow.Sampler{Steps: 100, Temperature: 1, BatchSize: 256}},
	} {
		s, _, err := sampler(c.o, fm, c.shipped)
		if err != nil || !reflect.DeepEqual(s, c.want) {
			t.Errorf("%s: %+v, %v; want %+v", c.name, s, err, c.want)
		}
	}
	if fm.Recipe.Sampler.Experts[0].Until != 0.75 {
		t.Error("-expert-until changed the model's recipe")
	}
}
