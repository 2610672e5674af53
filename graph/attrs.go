package graph

import (
	"fmt"
	"slices"
)

// Attrs are small non-negative integer features of a graph's nodes and
// edges that an encoder reads but a generative model does not produce: a
// molecule's atom degrees, charges, hydrogen counts and ring memberships,
// its bonds' conjugation and ring sizes. They are stored compactly (one
// byte a feature) because datasets of millions of molecules carry them.
type Attrs struct {
	// NodeDim features per node: Node[i*NodeDim+f] is feature f of node i.
	NodeDim int
	Node    []uint8
	// EdgeDim features per edge: Edge[k*EdgeDim+f] is feature f of edge k
	// in the order of Graph.Edges (sorted by From, then To).
	EdgeDim int
	Edge    []uint8
}

// Check reports whether a holds the right number of features for g.
func (a *Attrs) Check(g *Graph) error {
	if a.NodeDim < 0 || a.EdgeDim < 0 {
		return fmt.Errorf("graph: attribute widths %d, %d", a.NodeDim, a.EdgeDim)
	}
	if len(a.Node) != g.N()*a.NodeDim {
		return fmt.Errorf("graph: %d node attribute values for %d nodes of %d features", len(a.Node), g.N(), a.NodeDim)
	}
	if len(a.Edge) != g.M()*a.EdgeDim {
		return fmt.Errorf("graph: %d edge attribute values for %d edges of %d features", len(a.Edge), g.M(), a.EdgeDim)
	}
	return nil
}

// clone returns a deep copy of a.
func (a *Attrs) clone() *Attrs {
	return &Attrs{NodeDim: a.NodeDim, Node: slices.Clone(a.Node), EdgeDim: a.EdgeDim, Edge: slices.Clone(a.Edge)}
}

// dropEdges forgets the edge attributes (their order no longer matches the
// edges once an edge is added or removed).
func (a *Attrs) dropEdges() {
	if a != nil {
		a.Edge, a.EdgeDim = nil, 0
	}
}

// edgeRanks returns, for every ordered pair that NewBatch lists for g (u
// ascending, then its sorted out-neighbours), the index of its edge in
// Edges order.
func edgeRanks(g *Graph) []int {
	ranks := make([]int, 0, 2*g.m)
	if g.directed {
		for u := range g.out {
			for range g.out[u] {
				ranks = append(ranks, len(ranks))
			}
		}
		return ranks
	}
	// Edge {u, v}, u < v, is number start[u] + (its place among u's
	// neighbours above u).
	start := make([]int, len(g.out)+1)
	above := make([]int, len(g.out)) // index in out[u] of the first neighbour > u
	for u, nb := range g.out {
		above[u], _ = slices.BinarySearch(nb, u)
		start[u+1] = start[u] + len(nb) - above[u]
	}
	for u, nb := range g.out {
		for i, v := range nb {
			if v > u {
				ranks = append(ranks, start[u]+i-above[u])
			} else {
				j, _ := slices.BinarySearch(g.out[v], u)
				ranks = append(ranks, start[v]+j-above[v])
			}
		}
	}
	return ranks
}
