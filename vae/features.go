package vae

import (
	"context"
	"fmt"
	"math"

	"lgflow/graph"
	"lgflow/spectral"
)

// Features is the per-graph pre-processing the encoder needs: the K lowest
// Laplacian eigenpairs (magnetic for directed models, with the model's q),
// padded to K slots with a mask, and the 1-WL orbits of the nodes (whose
// eigenvector rows are perturbed when Eta > 0). It is computed once per
// graph by spectral.Preprocess and cached.
type Features = spectral.Features

// eigenOptions returns the spectral options for a model configuration:
// for QPerGraph models the magnetic Laplacian takes each graph's own q
// (spectral.QEff), otherwise the fixed Config.Q.
func eigenOptions(c Config) spectral.Options {
	if c.Directed {
		return spectral.Options{Laplacian: spectral.Magnetic, Q: c.Q, FixedQ: !c.QPerGraph}
	}
	return spectral.Options{Laplacian: spectral.Combinatorial}
}

// QForNodes is the magnetic potential that a QPerGraph model's decoder
// uses for a graph of n nodes: 0.1 / max(1, n), which is spectral.QEff's
// 0.1 / max(1, min(m, n)) for every graph with at least n one-way edges.
func QForNodes(n int) float64 { return 0.1 / float64(max(1, n)) }

// DecoderQ returns the magnetic potential the decoder of a directed model
// with configuration c uses for a graph of n nodes: Q, or QForNodes(n)
// when QPerGraph is set.
func (c Config) DecoderQ(n int) float64 {
	if c.QPerGraph {
		return QForNodes(n)
	}
	return c.Q
}

// magneticFactor is the decoder's weight (2 - cos 2πq) / sin 2πq of the
// imaginary bilinear scores.
func magneticFactor(q float64) float64 {
	return (2 - math.Cos(2*math.Pi*q)) / math.Sin(2*math.Pi*q)
}

// checkGraph reports a graph the model cannot encode.
func checkGraph(g *graph.Graph, c Config) error {
	if g.Directed() != c.Directed {
		return fmt.Errorf("vae: graph directed=%v but model directed=%v", g.Directed(), c.Directed)
	}
	if c.NodeAttrs > 0 || c.EdgeAttrs > 0 {
		a := g.Attrs
		if a == nil || a.NodeDim != c.NodeAttrs || a.EdgeDim != c.EdgeAttrs {
			have := "none"
			if a != nil {
				have = fmt.Sprintf("%d node and %d edge features", a.NodeDim, a.EdgeDim)
			}
			return fmt.Errorf("vae: the model reads %d node and %d edge attributes; the graph has %s", c.NodeAttrs, c.EdgeAttrs, have)
		}
		if err := a.Check(g); err != nil {
			return fmt.Errorf("vae: %w", err)
		}
	}
	return checkLabels(g, c)
}

// Featurize computes the Features of g for the model configuration c.
// solver may be nil; pass one per goroutine to reuse workspaces.
func Featurize(g *graph.Graph, c Config, solver *spectral.Solver) (*Features, error) {
	if solver == nil {
		solver = spectral.NewSolver()
	}
	if err := checkGraph(g, c); err != nil {
		return nil, err
	}
	e, err := solver.Eigen(g, c.K, eigenOptions(c))
	if err != nil {
		return nil, fmt.Errorf("vae: eigenpairs of %v: %w", g, err)
	}
	f := spectral.NewFeatures(e, graph.WLOrbits(g))
	return &f, nil
}

// Dataset is a set of graphs with their cached Features.
type Dataset struct {
	Graphs   []*graph.Graph
	Features []*Features
}

// Prepare computes the Features of every graph in parallel over all cores
// (spectral.Preprocess), calling progress (if not nil) as graphs complete.
// The result does not depend on the number of workers.
func Prepare(ctx context.Context, gs []*graph.Graph, c Config, progress func(done, total int)) (*Dataset, error) {
	for i, g := range gs {
		if err := checkGraph(g, c); err != nil {
			return nil, fmt.Errorf("graph %d: %w", i, err)
		}
	}
	fs, err := spectral.Preprocess(ctx, gs, spectral.PreprocessOptions{Eigen: eigenOptions(c), K: c.K}, progress)
	if err != nil {
		return nil, err
	}
	d := &Dataset{Graphs: gs, Features: make([]*Features, len(gs))}
	for i := range fs {
		d.Features[i] = &fs[i]
	}
	return d, nil
}

// Subset returns the dataset restricted to the given indices (sharing the
// graphs and features).
func (d *Dataset) Subset(idx []int) *Dataset {
	s := &Dataset{Graphs: make([]*graph.Graph, len(idx)), Features: make([]*Features, len(idx))}
	for i, j := range idx {
		s.Graphs[i], s.Features[i] = d.Graphs[j], d.Features[j]
	}
	return s
}

// checkLabels reports node or edge labels the model cannot represent.
func checkLabels(g *graph.Graph, c Config) error {
	if g.NodeLabels != nil {
		if len(g.NodeLabels) != g.N() {
			return fmt.Errorf("vae: %d node labels for %d nodes", len(g.NodeLabels), g.N())
		}
		for i, l := range g.NodeLabels {
			if l < 0 || (c.NodeClasses > 0 && l >= c.NodeClasses) || (c.NodeClasses == 0 && l != 0) {
				return fmt.Errorf("vae: node %d has label %d; the model has %d node classes", i, l, c.NodeClasses)
			}
		}
	}
	for _, e := range g.Edges() {
		if e.Label < 0 || e.Label >= c.EdgeClasses {
			return fmt.Errorf("vae: edge %d-%d has label %d; the model has %d edge classes", e.From, e.To, e.Label, c.EdgeClasses)
		}
	}
	return nil
}
