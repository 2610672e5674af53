package vae

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"lgflow/graph"
	"lgflow/spectral"
)

// Features is the per-graph pre-processing the encoder needs: the K lowest
// Laplacian eigenpairs (magnetic for directed models) and the 1-WL orbit
// membership of every node. It is computed once per graph and cached.
type Features struct {
	N, K int
	// KEff = min(N, K) slots hold real eigenpairs; the rest are masked out.
	KEff int
	// Values holds the K eigenvalues (0 in masked slots).
	Values []float32
	// Re is N x K row-major: entry i of eigenvector j (real part).
	Re []float32
	// Im holds the imaginary parts for directed models, else nil.
	Im []float32
	// InOrbit[i] reports whether node i shares its 1-WL colour with
	// another node (its eigenvector row is then perturbed when Eta > 0).
	InOrbit []bool
}

// Featurize computes the Features of g for the model configuration c.
// solver may be nil; pass one per goroutine to reuse workspaces.
func Featurize(g *graph.Graph, c Config, solver *spectral.Solver) (*Features, error) {
	if solver == nil {
		solver = spectral.NewSolver()
	}
	if g.Directed() != c.Directed {
		return nil, fmt.Errorf("vae: graph directed=%v but model directed=%v", g.Directed(), c.Directed)
	}
	if err := checkLabels(g, c); err != nil {
		return nil, err
	}
	opt := spectral.Options{Laplacian: spectral.Combinatorial}
	if c.Directed {
		opt = spectral.Options{Laplacian: spectral.Magnetic, Q: c.Q, FixedQ: true}
	}
	e, err := solver.Eigen(g, c.K, opt)
	if err != nil {
		return nil, fmt.Errorf("vae: eigenpairs of %v: %w", g, err)
	}
	n := g.N()
	f := &Features{N: n, K: c.K, KEff: min(n, c.K), Values: make([]float32, c.K), Re: make([]float32, n*c.K), InOrbit: make([]bool, n)}
	for j, v := range e.Values {
		f.Values[j] = float32(v)
	}
	for i, v := range e.Vectors {
		f.Re[i] = float32(v)
	}
	if c.Directed {
		f.Im = make([]float32, n*c.K)
		for i, v := range e.Imag {
			f.Im[i] = float32(v)
		}
	}
	if c.Eta > 0 {
		for i, o := range graph.WLOrbits(g) {
			f.InOrbit[i] = o != 0
		}
	}
	return f, nil
}

// Dataset is a set of graphs with their cached Features.
type Dataset struct {
	Graphs   []*graph.Graph
	Features []*Features
}

// Prepare computes the Features of every graph in parallel over all cores,
// calling progress (if not nil) as graphs complete. The result does not
// depend on the number of workers.
func Prepare(ctx context.Context, gs []*graph.Graph, c Config, progress func(done, total int)) (*Dataset, error) {
	d := &Dataset{Graphs: gs, Features: make([]*Features, len(gs))}
	var next, done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := spectral.NewSolver()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(gs) || ctx.Err() != nil {
					return
				}
				f, err := Featurize(gs[i], c, s)
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("graph %d: %w", i, err) })
					return
				}
				d.Features[i] = f
				n := done.Add(1)
				if progress != nil && (n%256 == 0 || int(n) == len(gs)) {
					progress(int(n), len(gs))
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, firstErr
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
