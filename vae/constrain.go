package vae

import (
	"cmp"
	"slices"

	"lgflow/graph"
)

// This file holds constrained decoding: the decoding options that change
// the decoder's graphs to satisfy a property (WithEdgeConstraint,
// WithSpanningTree, WithConnected, WithEdgeFill, WithEdgeCompletion).

// constrain rebuilds the decoded graph h so that o.keep holds: h's edges are
// added back one at a time, most confident first, and each is kept only if
// o.keep still holds with it. An edge's confidence is its best edge class's
// logit minus the no-edge logit (the larger of the two directions' for the
// EitherDirection rule, the smaller for BothDirections, their mean for
// MeanLogits); lg holds the batch's logits (rows of C per ordered pair) and
// base is the row of h's first pair.
func (m *Model) constrain(h *graph.Graph, lg []float64, base, N int, o decodeOptions) *graph.Graph {
	edges := h.Edges()
	score := make([]float64, len(edges))
	for k, e := range edges {
		score[k] = m.pairConfidence(lg, base, N, e.From, e.To, o.rule)
	}
	order := make([]int, len(edges))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(score[y], score[x]) })
	var out *graph.Graph
	if m.Cfg.Directed {
		out = graph.NewDirected(h.N())
	} else {
		out = graph.New(h.N())
	}
	out.NodeLabels = h.NodeLabels
	// Adding the edges one at a time, each kept only if keep still holds,
	// costs a test per edge. As keep survives removing edges, a run of
	// edges that keeps it when added together is exactly what the one-at-a-
	// time rule keeps of it, so runs are tried whole and split only when
	// they fail: the same graph with a test per rejected edge and level.
	var add func(run []int)
	add = func(run []int) {
		for _, k := range run {
			e := edges[k]
			out.AddLabeledEdge(e.From, e.To, h.EdgeLabel(e.From, e.To))
		}
		if o.keep(out) {
			return
		}
		for _, k := range run {
			out.RemoveEdge(edges[k].From, edges[k].To)
		}
		if len(run) > 1 {
			add(run[:len(run)/2])
			add(run[len(run)/2:])
		}
	}
	add(order)
	return out
}

// fillEdges returns h with the pairs it lacks whose confidence
// (pairConfidence under rule) is at least minConf added, most confident
// first, each kept only if keep still holds with it (WithEdgeFill,
// WithEdgeCompletion); lg, base and N are as for constrain. Added edges
// are labelled by pairEdgeLabel.
func (m *Model) fillEdges(h *graph.Graph, lg []float64, base, N int, rule EdgeRule, keep func(*graph.Graph) bool, minConf float64) *graph.Graph {
	n := h.N()
	C := m.Cfg.EdgeClasses + 1
	type pair struct {
		i, j  int
		score float64
	}
	var pairs []pair
	for i := range n {
		for j := i + 1; j < n; j++ {
			if h.HasEdge(i, j) {
				continue
			}
			if s := m.pairConfidence(lg, base, N, i, j, rule); s >= minConf {
				pairs = append(pairs, pair{i, j, s})
			}
		}
	}
	if len(pairs) == 0 {
		return h
	}
	slices.SortStableFunc(pairs, func(x, y pair) int { return cmp.Compare(y.score, x.score) })
	out := h.Clone()
	for _, p := range pairs {
		out.AddLabeledEdge(p.i, p.j, pairEdgeLabel(lg, base, N, C, p.i, p.j))
		if !keep(out) {
			out.RemoveEdge(p.i, p.j)
		}
	}
	return out
}

// spanningTree returns the spanning tree of maximum total confidence
// (pairConfidence) over all pairs of h's nodes, by Kruskal's algorithm;
// lg, base and N are as for constrain. h's own edges are the pairs of
// positive confidence (under the margin and rule h was decoded with) and
// so come first. An edge's label is the edge class with the largest sum of
// the two directions' logits.
func (m *Model) spanningTree(h *graph.Graph, lg []float64, base, N int, o decodeOptions) *graph.Graph {
	out := graph.New(h.N())
	out.NodeLabels = h.NodeLabels
	m.joinComponents(out, h, lg, base, N, o)
	return out
}

// connect returns h with the fewest edges added that join its components:
// h's own edges all stay, and the missing pairs of most confidence that
// join two components are added (Kruskal's algorithm over h's components,
// so the added edges have the maximum total confidence of any such set).
func (m *Model) connect(h *graph.Graph, lg []float64, base, N int, o decodeOptions) *graph.Graph {
	out := h.Clone()
	m.joinComponents(out, h, lg, base, N, o)
	return out
}

// joinComponents runs Kruskal's algorithm over all pairs of h's nodes, h's
// own edges first, then the others most confident first (pairConfidence),
// and adds to out each pair that joins two components of the forest built
// so far (as an edge labelled by the class with the largest sum of the two
// directions' logits), unless out already has it. With out empty it builds
// a spanning tree; with out a copy of h it adds only the edges that connect
// h.
func (m *Model) joinComponents(out, h *graph.Graph, lg []float64, base, N int, o decodeOptions) {
	n := h.N()
	C := m.Cfg.EdgeClasses + 1
	type pair struct {
		i, j  int32
		own   bool // a decoded edge of h
		score float64
	}
	pairs := make([]pair, 0, n*(n-1)/2)
	for i := range n {
		for j := i + 1; j < n; j++ {
			pairs = append(pairs, pair{int32(i), int32(j), h.HasEdge(i, j), m.pairConfidence(lg, base, N, i, j, o.rule)})
		}
	}
	// The decoder's own edges ahead of every pair it left out (whatever
	// the margin), then most confident first.
	slices.SortStableFunc(pairs, func(x, y pair) int {
		if x.own != y.own {
			if x.own {
				return -1
			}
			return 1
		}
		return cmp.Compare(y.score, x.score)
	})
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	joined := 0
	for _, p := range pairs {
		if joined == n-1 {
			break
		}
		a, b := find(p.i), find(p.j)
		if a == b {
			continue
		}
		parent[a] = b
		joined++
		if out.HasEdge(int(p.i), int(p.j)) {
			continue
		}
		out.AddLabeledEdge(int(p.i), int(p.j), pairEdgeLabel(lg, base, N, C, int(p.i), int(p.j)))
	}
}
