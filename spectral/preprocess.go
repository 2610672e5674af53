package spectral

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"lgflow/graph"
)

// Features are the pre-computed inputs of the LG-VAE encoder for one graph
// (docs/design.md, "Pre-processing", with the slot mask of "Departures from
// the reference code"), stored as float32 so they can be batched into
// tensors without conversion.
type Features struct {
	// N is the number of nodes and K the number of eigen-slots.
	N, K int
	// Values holds the K lowest eigenvalues, ascending, clamped ≥ 0
	// (0 in padded slots).
	Values []float32
	// Vectors is N x K row-major: Vectors[i*K+j] is entry i of eigenvector
	// j (its real part for the magnetic Laplacian; 0 in padded slots).
	Vectors []float32
	// Imag is N x K row-major with the imaginary parts of the magnetic
	// eigenvectors, nil for the real Laplacians.
	Imag []float32
	// Mask[j] is false for the padded slots j ≥ N.
	Mask []bool
	// Orbits holds graph.WLOrbits(g): 0 for nodes alone in their 1-WL
	// colour class, ids 1, 2, ... for the non-singleton classes.
	Orbits []int32
	// Q is the magnetic potential used (0 for the other Laplacians).
	Q float64
}

// NewFeatures converts an Eig and orbit ids into Features (new slices).
func NewFeatures(e *Eig, orbits []int) Features {
	f := Features{N: e.N, K: e.K, Q: e.Q,
		Values:  make([]float32, e.K),
		Vectors: make([]float32, len(e.Vectors)),
		Mask:    append([]bool(nil), e.Mask...),
		Orbits:  make([]int32, len(orbits)),
	}
	for i, v := range e.Values {
		f.Values[i] = float32(v)
	}
	for i, v := range e.Vectors {
		f.Vectors[i] = float32(v)
	}
	if e.Imag != nil {
		f.Imag = make([]float32, len(e.Imag))
		for i, v := range e.Imag {
			f.Imag[i] = float32(v)
		}
	}
	for i, o := range orbits {
		f.Orbits[i] = int32(o)
	}
	return f
}

// PreprocessOptions configures Preprocess.
type PreprocessOptions struct {
	// Eigen selects the Laplacian and solver.
	Eigen Options
	// K is the number of eigen-slots per graph.
	K int
	// Workers is the number of goroutines (0 means GOMAXPROCS).
	Workers int
}

// Preprocess computes, for every graph, its K lowest eigenpairs (Eigen
// with opt.Eigen) and its 1-WL orbits (graph.WLOrbits), in parallel over
// opt.Workers goroutines each with its own Solver. The result is in input
// order and does not depend on the number of workers. progress, if not
// nil, is called with the number of graphs done so far after each graph,
// from one goroutine at a time, with done increasing. It stops early with
// ctx's error when ctx is cancelled, and returns the first eigensolver
// error, naming the graph's index.
func Preprocess(ctx context.Context, graphs []*graph.Graph, opt PreprocessOptions,
	progress func(done, total int)) ([]Features, error) {
	if opt.K < 0 {
		panic(fmt.Sprintf("spectral: negative K %d", opt.K))
	}
	out := make([]Features, len(graphs))
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(graphs)))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		mu       sync.Mutex
		done     int
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := NewSolver()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(graphs) || ctx.Err() != nil {
					return
				}
				e, err := s.Eigen(graphs[i], opt.K, opt.Eigen)
				if err != nil {
					fail(fmt.Errorf("spectral: graph %d: %w", i, err))
					return
				}
				out[i] = NewFeatures(e, graph.WLOrbits(graphs[i]))
				if progress != nil {
					mu.Lock()
					done++
					progress(done, len(graphs))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
