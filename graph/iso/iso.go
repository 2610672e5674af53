// Package iso decides graph isomorphism for undirected and directed
// graphs, optionally respecting node and edge labels, and provides an
// Index for membership queries "is a graph isomorphic to this one already
// in the set?" as used by the uniqueness and novelty metrics (V.U.N.).
//
// Isomorphic runs cheap invariant checks (sizes, degree sequences, label
// multisets, 1-WL colour classes) and then a VF2++-style backtracking
// search (A. Jüttner and P. Madarasi, "VF2++ — An improved subgraph
// isomorphism algorithm", 2018; modelled on networkx's vf2pp): nodes of
// the first graph are matched in a BFS order that prefers rare colours and
// nodes with many already-ordered neighbours, candidates come from the
// neighbourhood of an already matched node, and each candidate pair must
// agree on its matched neighbourhood and on the colour counts of its
// unmatched neighbours inside and outside the search frontier.
package iso

import (
	"context"
	"slices"

	"lgflow/graph"
)

// Options selects what an isomorphism must preserve besides adjacency.
type Options struct {
	// NodeLabels requires equal Graph.NodeLabels on matched nodes. A graph
	// whose NodeLabels is nil counts as having label 0 everywhere.
	NodeLabels bool
	// EdgeLabels requires equal edge labels on matched edges.
	EdgeLabels bool
}

// ctxEvery is how many search states pass between context checks.
const ctxEvery = 4096

// Isomorphic reports whether there is a bijection φ from the nodes of g to
// those of h with u -> v an edge of g iff φ(u) -> φ(v) is an edge of h
// (u — v for undirected graphs), preserving node and edge labels as opt
// asks. A directed and an undirected graph are never isomorphic.
//
// The search checks ctx every few thousand states and returns ctx.Err()
// when it is done, so a deadline bounds the time spent on hard instances.
// It also returns an error if a graph's NodeLabels has the wrong length.
// Neither graph is modified.
func Isomorphic(ctx context.Context, g, h *graph.Graph, opt Options) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if g.Directed() != h.Directed() || g.N() != h.N() || g.M() != h.M() {
		return false, nil
	}
	if !sameDegrees(g, h) {
		return false, nil
	}
	if opt.NodeLabels && !sameNodeLabels(g, h) {
		return false, nil
	}
	if opt.EdgeLabels && !sameEdgeLabels(g, h) {
		return false, nil
	}
	p, err := prepare(g, opt)
	if err != nil {
		return false, err
	}
	q, err := prepare(h, opt)
	if err != nil {
		return false, err
	}
	return match(ctx, p, q)
}

func sameDegrees(g, h *graph.Graph) bool {
	n := g.N()
	a, b := make([]int, n), make([]int, n)
	for u := range n {
		a[u] = g.OutDegree(u)<<32 | g.InDegree(u)
		b[u] = h.OutDegree(u)<<32 | h.InDegree(u)
	}
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func sameNodeLabels(g, h *graph.Graph) bool {
	la, lb := g.NodeLabels, h.NodeLabels
	if la == nil && lb == nil {
		return true
	}
	if len(la) != len(lb) && la != nil && lb != nil {
		return true // a length error; prepare reports it
	}
	a := make([]int, g.N())
	b := make([]int, h.N())
	copy(a, la)
	copy(b, lb)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func sameEdgeLabels(g, h *graph.Graph) bool {
	var a, b []int
	for _, e := range g.Edges() {
		a = append(a, e.Label)
	}
	for _, e := range h.Edges() {
		b = append(b, e.Label)
	}
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// CouldBeIsomorphic is a fast necessary condition for isomorphism, as
// networkx's fast_could_be_isomorphic: equal directedness, node and edge
// counts, and equal sorted sequences of per-node (degree, triangle count)
// pairs. For directed graphs the degree is the (out, in) pair and
// triangles are counted in the undirected view. Labels are ignored. If it
// returns false the graphs are not isomorphic; true proves nothing.
func CouldBeIsomorphic(g, h *graph.Graph) bool {
	if g.Directed() != h.Directed() || g.N() != h.N() || g.M() != h.M() {
		return false
	}
	if !sameDegrees(g, h) {
		return false
	}
	a, b := nodeInvariants(g), nodeInvariants(h)
	return slices.Equal(a, b)
}

// nodeInvariants returns the per-node (out-degree, in-degree, triangles)
// triples in sorted order.
func nodeInvariants(g *graph.Graph) [][3]int {
	u := g
	if g.Directed() {
		u = g.Undirected()
	}
	n := g.N()
	mark := make([]bool, n)
	inv := make([][3]int, n)
	for x := range n {
		nb := u.Neighbors(x)
		for _, y := range nb {
			mark[y] = true
		}
		t := 0
		for _, y := range nb {
			for _, z := range u.Neighbors(y) {
				if z > y && mark[z] {
					t++
				}
			}
		}
		for _, y := range nb {
			mark[y] = false
		}
		inv[x] = [3]int{g.OutDegree(x), g.InDegree(x), t}
	}
	slices.SortFunc(inv, func(a, b [3]int) int {
		for i := range a {
			if a[i] != b[i] {
				return a[i] - b[i]
			}
		}
		return 0
	})
	return inv
}
