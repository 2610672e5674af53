package flow_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lgflow/dit"
	"lgflow/flow"
	"lgflow/graph"
	"lgflow/tensor"
	"lgflow/vae"
)

// ExampleSample assembles a flow model by hand from an (untrained) LG-VAE
// and DiT and samples graphs from it. A real model comes from flow.Train or
// flow.Load; everything else is the same.
func ExampleSample() {
	ae, err := vae.New(vae.Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4,
		EdgeClasses: 1, Norm: vae.LayerNorm, KLWeight: 1e-6}, 1)
	if err != nil {
		panic(err)
	}
	cfg, err := flow.Preset("", "tiny", ae.Cfg.Latent)
	if err != nil {
		panic(err)
	}
	net, err := dit.New(cfg.DiT, tensor.NewRNG(1))
	if err != nil {
		panic(err)
	}
	// Sizes are drawn from the node counts of the training graphs: two of
	// 5 nodes and one of 8.
	m := &flow.Model{Cfg: cfg, VAE: ae, Net: net, Scale: 1, NodeCounts: []int{0, 0, 0, 0, 0, 2, 0, 0, 1}}

	gs, err := flow.Sample(context.Background(), m, 4, flow.WithSeed(7),
		flow.WithSettings(func(s *flow.Sampler) { s.Steps = 20 }))
	if err != nil {
		panic(err)
	}
	fmt.Println("sampled", len(gs), "graphs")
	for i, g := range gs {
		fmt.Printf("graph %d: %d nodes\n", i, g.N())
	}
	// Output:
	// sampled 4 graphs
	// graph 0: 5 nodes
	// graph 1: 5 nodes
	// graph 2: 5 nodes
	// graph 3: 8 nodes
}

// ExampleWithSettings samples graphs in 10 steps under a decoding
// constraint of one's own: an untrained model decodes dense graphs (16 to
// 20 of 28 possible edges: none of these four is a forest), and
// vae.WithEdgeConstraint keeps each one a forest (no cycles) by dropping
// its least confident edges. Constrained decoding is not the paper's
// sampler.
func ExampleWithSettings() {
	ae, err := vae.New(vae.Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4,
		EdgeClasses: 1, Norm: vae.LayerNorm, KLWeight: 1e-6}, 1)
	if err != nil {
		panic(err)
	}
	cfg, err := flow.Preset("", "tiny", ae.Cfg.Latent)
	if err != nil {
		panic(err)
	}
	net, err := dit.New(cfg.DiT, tensor.NewRNG(1))
	if err != nil {
		panic(err)
	}
	m := &flow.Model{Cfg: cfg, VAE: ae, Net: net, Scale: 1, NodeCounts: []int{0, 0, 0, 0, 0, 0, 0, 0, 4}}

	forests := 0
	gs, err := flow.Sample(context.Background(), m, 4, flow.WithSeed(7), flow.WithSettings(func(s *flow.Sampler) {
		s.Steps = 10
		s.Decode = append(s.Decode, vae.WithEdgeConstraint(graph.IsForest))
	}))
	if err != nil {
		panic(err)
	}
	for _, g := range gs {
		if graph.IsForest(g) {
			forests++
		}
	}
	fmt.Printf("%d of %d sampled graphs are forests\n", forests, len(gs))
	// Output:
	// 4 of 4 sampled graphs are forests
}

// ExampleOpen writes a model bundle (an LG-VAE, a flow bound to it and the
// sampling recipe, sampler.json) and opens it: flow.Sample without options
// then samples with the recipe's settings, flow.WithSettings changes some
// of them, and flow.WithRecipe selects a named alternative. The shipped models are
// bundles too: flow.Open("pretrained/planar").
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "bundle")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	// A bundle of untrained models; flow.Train and vae.Train write real ones.
	ae, err := vae.New(vae.Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4,
		EdgeClasses: 1, Norm: vae.LayerNorm, KLWeight: 1e-6}, 1)
	if err != nil {
		panic(err)
	}
	cfg, err := flow.Preset("", "tiny", ae.Cfg.Latent)
	if err != nil {
		panic(err)
	}
	net, err := dit.New(cfg.DiT, tensor.NewRNG(1))
	if err != nil {
		panic(err)
	}
	m := &flow.Model{Cfg: cfg, VAE: ae, Net: net, Scale: 1, NodeCounts: []int{0, 0, 0, 0, 0, 0, 0, 0, 4}}
	if err := ae.Save(filepath.Join(dir, vae.ModelFile), nil); err != nil {
		panic(err)
	}
	if err := m.Save(filepath.Join(dir, flow.ModelFile), nil); err != nil {
		panic(err)
	}
	recipe := &flow.Recipe{Format: flow.RecipeFormat,
		Sampler: flow.Sampler{Steps: 20, TimeShift: 1.5, EdgeRule: "and"},
		Alternatives: map[string]flow.Sampler{
			"constrained": {Steps: 20, Constraints: []string{"forest"}},
		},
		Card: flow.Card{Dataset: "example", Training: "untrained"}}
	if err := recipe.Save(filepath.Join(dir, flow.RecipeFile)); err != nil {
		panic(err)
	}

	model, err := flow.Open(dir)
	if err != nil {
		panic(err)
	}
	fmt.Println("recipe:", strings.Join(model.Recipe.Sampler.Describe(), ", "))
	ctx := context.Background()
	gs, err := flow.Sample(ctx, model, 4, flow.WithSeed(7)) // the recipe's settings
	if err != nil {
		panic(err)
	}
	fmt.Println("sampled", len(gs), "graphs")
	// 10 steps, the rest as the recipe.
	gs, err = flow.Sample(ctx, model, 4, flow.WithSeed(7), flow.WithSettings(func(s *flow.Sampler) { s.Steps = 10 }))
	if err != nil {
		panic(err)
	}
	gs, err = flow.Sample(ctx, model, 4, flow.WithSeed(7), flow.WithRecipe("constrained"))
	if err != nil {
		panic(err)
	}
	forests := 0
	for _, g := range gs {
		if graph.IsForest(g) {
			forests++
		}
	}
	fmt.Printf("constrained: %d of %d are forests\n", forests, len(gs))
	// Output:
	// recipe: 20 steps, time shift 1.5, edge rule and
	// sampled 4 graphs
	// constrained: 4 of 4 are forests
}
