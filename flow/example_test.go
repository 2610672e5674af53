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
