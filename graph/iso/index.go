package iso

import (
	"context"

	"lgflow/graph"
)

// Index is a multiset of graphs that answers "does it hold a graph
// isomorphic to g?" quickly. Graphs are bucketed by an isomorphism-
// invariant hash (stable 1-WL colour refinement, see wlRefine); a query
// runs the exact test of Isomorphic only against graphs in its bucket.
//
// Add must not run concurrently with anything else. Once the index is
// built, Contains, Find and Len may be called from many goroutines at
// once: they only read the index.
type Index struct {
	opt     Options
	buckets map[uint64][]*entry
	n       int
}

type entry struct {
	p  *prepared
	id int
}

// NewIndex returns an empty index comparing graphs under opt.
func NewIndex(opt Options) *Index {
	return &Index{opt: opt, buckets: make(map[uint64][]*entry)}
}

// Add inserts g. It does not check whether an isomorphic graph is already
// present (use Contains first for set semantics). The index keeps its own
// compact copy of g, so g may be modified afterwards. Add returns an error
// if g's NodeLabels has the wrong length.
func (x *Index) Add(g *graph.Graph) error {
	p, err := prepare(g, x.opt)
	if err != nil {
		return err
	}
	x.buckets[p.hash] = append(x.buckets[p.hash], &entry{p: p, id: x.n})
	x.n++
	return nil
}

// Len returns the number of graphs added.
func (x *Index) Len() int { return x.n }

// Contains reports whether the index holds a graph isomorphic to g. It
// returns ctx.Err() if ctx is done before the answer is known.
func (x *Index) Contains(ctx context.Context, g *graph.Graph) (bool, error) {
	i, err := x.Find(ctx, g)
	return i >= 0, err
}

// Find returns the position (0-based order of Add calls) of a graph in
// the index isomorphic to g, or -1 if there is none. It returns ctx.Err()
// if ctx is done before the answer is known.
func (x *Index) Find(ctx context.Context, g *graph.Graph) (int, error) {
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	p, err := prepare(g, x.opt)
	if err != nil {
		return -1, err
	}
	for _, e := range x.buckets[p.hash] {
		ok, err := match(ctx, p, e.p)
		if err != nil {
			return -1, err
		}
		if ok {
			return e.id, nil
		}
	}
	return -1, nil
}
