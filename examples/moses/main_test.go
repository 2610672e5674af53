package main

import (
	"flag"
	"io"
	"reflect"
	"testing"

	"lgflow/flow"
	"lgflow/internal/cli"
)

// TestSampler checks the settings the example samples with: the shipped
// bundle's recipe, with each -sampler setting given in its place;
// flow.Sample's defaults and the settings when decoding is constrained,
// the models are not the shipped ones, or -recipe none.
func TestSampler(t *testing.T) {
	band := []flow.Expert{{File: "flow-expert.safetensors", From: 0.4, Until: 0.75}}
	fm := &flow.Model{Recipe: &flow.Recipe{Format: flow.RecipeFormat,
		Sampler: flow.Sampler{Steps: 100, Temperature: 0.8, BatchSize: 256, Experts: band}}}
	with := func(args ...string) options {
		fs := flag.NewFlagSet("moses", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o := options{sampler: cli.AddSampler(fs, true)}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return o
	}
	constrained := with()
	constrained.constrained = true
	for _, c := range []struct {
		name    string
		o       options
		shipped bool
		want    flow.Sampler
	}{
		{"shipped: the recipe", with(), true, fm.Recipe.Sampler},
		{"no expert", with("-sampler", "experts=null"), true, flow.Sampler{Steps: 100, Temperature: 0.8, BatchSize: 256}},
		{"no recipe", with("-recipe", "none"), true, flow.Sampler{}},
		{"temperature given", with("-sampler", "temperature=1"), true, flow.Sampler{Steps: 100, Temperature: 1, BatchSize: 256, Experts: band}},
		{"steps and band given", with("-sampler", `steps=20,experts=[{"file":"flow-expert.safetensors","from":0.4,"until":0.7}]`), true,
			flow.Sampler{Steps: 20, Temperature: 0.8, BatchSize: 256, Experts: []flow.Expert{{File: "flow-expert.safetensors", From: 0.4, Until: 0.7}}}},
		{"constrained", constrained, true, flow.Sampler{}},
		{"models of one's own", with(), false, flow.Sampler{}},
	} {
		s, _, err := sampler(c.o, fm, c.shipped)
		if err != nil || !reflect.DeepEqual(s, c.want) {
			t.Errorf("%s: %+v, %v; want %+v", c.name, s, err, c.want)
		}
	}
	if fm.Recipe.Sampler.Experts[0].Until != 0.75 {
		t.Error("the settings changed the model's recipe")
	}
}
