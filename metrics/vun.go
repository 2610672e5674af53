package metrics

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"lgflow/graph"
	"lgflow/graph/iso"
	"lgflow/graph/planar"
)

// IsValidPlanar reports whether g is connected and planar (SPECTRE's
// is_planar_graph).
func IsValidPlanar(g *graph.Graph) bool {
	return graph.IsConnected(g) && planar.IsPlanar(g)
}

// IsValidTree reports whether g is a tree (networkx is_tree: connected
// with n - 1 edges, and at least one node).
func IsValidTree(g *graph.Graph) bool { return graph.IsTree(g) }

// IsValidDAG reports whether g is a directed acyclic graph.
func IsValidDAG(g *graph.Graph) bool { return g.Directed() && graph.IsDAG(g) }

// VUNOptions configures VUN.
type VUNOptions struct {
	// Iso selects label matching for the isomorphism tests (TPU Tile
	// matches node labels).
	Iso iso.Options
	// Timeout bounds each isomorphism look-up (0: no limit). A look-up that
	// times out counts as "no isomorphic graph found", as in Directo's
	// code (which uses 5 s per check).
	Timeout time.Duration
	// Workers is the number of goroutines for the novelty look-ups (0:
	// GOMAXPROCS).
	Workers int
}

// VUNResult holds the validity, uniqueness and novelty fractions of a
// generated set (docs/design.md, "Evaluation"), each in [0, 1].
type VUNResult struct {
	// Valid is the fraction of generated graphs passing the validity test.
	Valid float64
	// Unique is 1 - (#graphs isomorphic to an earlier unique one)/N.
	Unique float64
	// Novel is 1 - (#graphs isomorphic to some training graph)/N, over all
	// generated graphs (duplicates included); NaN without training graphs.
	Novel float64
	// UniqueNovel is (N - #non-unique - #unique-but-not-novel)/N.
	UniqueNovel float64
	// VUN is #(unique ∧ novel ∧ valid)/N.
	VUN float64
	// Timeouts counts isomorphism look-ups that hit the time limit.
	Timeouts int
}

// VUN walks the generated graphs in order as SPECTRE/DeFoG do: a graph is
// unique if it is not isomorphic to an earlier graph accepted as unique;
// a unique graph is novel if it is isomorphic to no training graph; and a
// unique novel graph counts towards V.U.N. if valid(g). Generated graphs
// with no nodes are never valid, unique-counted or novel-counted, as in
// the reference. Isomorphism look-ups go through iso.Index buckets, so the
// cost is close to linear in the number of graphs. valid may be nil (every
// graph valid); train may be empty (then Novel is NaN and every unique
// graph counts as novel for VUN). The inputs are not modified.
func VUN(ctx context.Context, gen, train []*graph.Graph, valid func(*graph.Graph) bool, opt VUNOptions) (VUNResult, error) {
	var r VUNResult
	N := len(gen)
	if N == 0 {
		return r, ErrEmptySet
	}
	if valid == nil {
		valid = func(*graph.Graph) bool { return true }
	}
	trainIdx := iso.NewIndex(opt.Iso)
	for _, g := range train {
		if err := trainIdx.Add(g); err != nil {
			return r, err
		}
	}
	lk := &isoLookup{ctx: ctx, timeout: opt.Timeout}
	lookup := lk.contains
	inTrain, isValid, err := checkEach(ctx, gen, valid, len(train) > 0, trainIdx, lk, opt.Workers)
	if err != nil {
		return r, err
	}

	seen := iso.NewIndex(opt.Iso)
	var nValid, nonUnique, isoTrain, nInTrain, vun int
	for i, g := range gen {
		if inTrain[i] {
			nInTrain++
		}
		if g.N() == 0 {
			continue
		}
		if isValid[i] {
			nValid++
		}
		dup, err := lookup(seen, g)
		if err != nil {
			return r, err
		}
		if dup {
			nonUnique++
			continue
		}
		if err := seen.Add(g); err != nil {
			return r, err
		}
		if inTrain[i] {
			isoTrain++
			continue
		}
		if isValid[i] {
			vun++
		}
	}
	n := float64(N)
	r.Valid = float64(nValid) / n
	r.Unique = float64(N-nonUnique) / n
	r.UniqueNovel = float64(N-nonUnique-isoTrain) / n
	r.VUN = float64(vun) / n
	r.Novel = 1 - float64(nInTrain)/n
	if len(train) == 0 {
		r.Novel = nanValue()
	}
	r.Timeouts = lk.timeouts
	return r, nil
}

// isoLookup looks graphs up in isomorphism indexes, each look-up within
// timeout (0: none); a look-up that times out counts as not found and in
// timeouts.
type isoLookup struct {
	ctx      context.Context
	timeout  time.Duration
	mu       sync.Mutex
	timeouts int
}

// contains reports whether x holds a graph isomorphic to g.
func (l *isoLookup) contains(x *iso.Index, g *graph.Graph) (bool, error) {
	c := l.ctx
	if l.timeout > 0 {
		var cancel context.CancelFunc
		c, cancel = context.WithTimeout(l.ctx, l.timeout)
		defer cancel()
	}
	ok, err := x.Contains(c, g)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && l.ctx.Err() == nil {
		l.mu.Lock()
		l.timeouts++
		l.mu.Unlock()
		return false, nil
	}
	return ok, err
}

// checkEach tests every generated graph for validity and, with novelty,
// looks it up in the training index: independent look-ups, run by
// workers goroutines in parallel (0: GOMAXPROCS).
func checkEach(ctx context.Context, gen []*graph.Graph, valid func(*graph.Graph) bool, novelty bool, trainIdx *iso.Index, lk *isoLookup, workers int) (inTrain, isValid []bool, err error) {
	N := len(gen)
	inTrain, isValid = make([]bool, N), make([]bool, N)
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	jobs := make(chan int, N)
	for i := range gen {
		jobs <- i
	}
	close(jobs)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := range jobs {
				if errs[w] != nil || ctx.Err() != nil {
					continue
				}
				g := gen[i]
				if g.N() == 0 {
					continue
				}
				isValid[i] = valid(g)
				if novelty {
					ok, err := lk.contains(trainIdx, g)
					if err != nil {
						errs[w] = err
						continue
					}
					inTrain[i] = ok
				}
			}
		}(w)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return inTrain, isValid, nil
}
