package graph

import (
	"fmt"
	"slices"
)

// FromEdges builds a graph with n nodes and the given edges in one pass
// (much faster than repeated AddEdge for large edge lists). For an
// undirected graph an edge may be given in either orientation. Repeated
// edges merge, the last occurrence's label winning, as with
// AddLabeledEdge. Self-loops and out-of-range nodes are errors naming the
// edge's position. The edges slice is not retained.
func FromEdges(n int, directed bool, edges []Edge) (*Graph, error) {
	outDeg := make([]int, n)
	var inDeg []int
	if directed {
		inDeg = make([]int, n)
	}
	labelled := false
	for i, e := range edges {
		if e.From < 0 || e.From >= n || e.To < 0 || e.To >= n {
			return nil, fmt.Errorf("%w: edge %d is %d -> %d, nodes are [0, %d)", ErrNode, i, e.From, e.To, n)
		}
		if e.From == e.To {
			return nil, fmt.Errorf("graph: edge %d is a self-loop at node %d", i, e.From)
		}
		outDeg[e.From]++
		if directed {
			inDeg[e.To]++
		} else {
			outDeg[e.To]++
		}
		if e.Label != 0 {
			labelled = true
		}
	}
	g := &Graph{directed: directed, out: allocLists(outDeg)}
	if directed {
		g.in = allocLists(inDeg)
	}
	for _, e := range edges {
		g.out[e.From] = append(g.out[e.From], e.To)
		if directed {
			g.in[e.To] = append(g.in[e.To], e.From)
		} else {
			g.out[e.To] = append(g.out[e.To], e.From)
		}
	}
	total := 0
	for u := range g.out {
		slices.Sort(g.out[u])
		g.out[u] = slices.Compact(g.out[u])
		total += len(g.out[u])
		if directed {
			slices.Sort(g.in[u])
			g.in[u] = slices.Compact(g.in[u])
		}
	}
	g.m = total
	if !directed {
		g.m = total / 2
	}
	if labelled {
		g.edgeLabels = make(map[[2]int]int)
		for _, e := range edges {
			k := g.key(e.From, e.To)
			if e.Label != 0 {
				g.edgeLabels[k] = e.Label
			} else {
				delete(g.edgeLabels, k)
			}
		}
	}
	return g, nil
}
