package flow_test

import (
	"context"
	"fmt"

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
	cfg, err := flow.Preset("tiny", ae.Cfg.Latent)
	if err != nil {
		panic(err)
	}
	net, err := dit.New(cfg.DiT, tensor.NewRNG(1))
	if err != nil {
		panic(err)
	}
	// Sizes are drawn from the node counts of the training graphs.
	train := []*graph.Graph{graph.New(5), graph.New(5), graph.New(8)}
	m := &flow.Model{Cfg: cfg, VAE: ae, Net: net, Scale: 1, NodeCounts: flow.NodeCountHistogram(train)}

	gs, err := flow.Sample(context.Background(), m, 4, flow.WithSeed(7), flow.WithSteps(20))
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

// ExampleWithDecodeOptions samples graphs under a decoding constraint: an
// untrained model decodes dense graphs (16 to 20 of 28 possible edges: none
// of these four is a forest), and vae.WithEdgeConstraint keeps
// each one a forest (no cycles) by dropping its least confident edges.
// Constrained decoding is not the paper's sampler.
func ExampleWithDecodeOptions() {
	ae, err := vae.New(vae.Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4,
		EdgeClasses: 1, Norm: vae.LayerNorm, KLWeight: 1e-6}, 1)
	if err != nil {
		panic(err)
	}
	cfg, err := flow.Preset("tiny", ae.Cfg.Latent)
	if err != nil {
		panic(err)
	}
	net, err := dit.New(cfg.DiT, tensor.NewRNG(1))
	if err != nil {
		panic(err)
	}
	m := &flow.Model{Cfg: cfg, VAE: ae, Net: net, Scale: 1, NodeCounts: []int{0, 0, 0, 0, 0, 0, 0, 0, 4}}

	forests := 0
	gs, err := flow.Sample(context.Background(), m, 4, flow.WithSeed(7), flow.WithSteps(10),
		flow.WithDecodeOptions(vae.WithEdgeConstraint(graph.IsForest)))
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
