package mol

import "lgflow/graph"

// datasetAromatic is the edge label of an aromatic bond in a dataset graph
// (ToDatasetGraph: 0 single, 1 double, 2 triple, 3 aromatic).
const datasetAromatic = 3

// RepairAromaticity reads the aromatic bonds of the dataset graph g
// (ToDatasetGraph's labels) that keep it from being a molecule as single
// bonds, and reports whether the result decodes (DecodeDatasetGraph with
// opts). g is
// returned unchanged when it decodes as it is. Otherwise, first every
// aromatic bond on no ring (a bridge: aromaticity needs a ring) becomes
// single; then, while the graph does not decode, one aromatic system (a
// connected set of aromatic bonds) at a time becomes single bonds: the
// first, in order of its lowest atom, whose demotion alone makes the graph
// decode, or else the first system, and the search goes on. Systems that
// can be kekulised stay aromatic where that suffices.
//
// This repairs what a generative model's decoder got wrong (aromatic
// chains, odd all-carbon aromatic rings); it is not part of the paper's
// evaluation, and figures measured with it must say so. Failures other
// than aromaticity (valence, charges) are not repaired: the result then
// does not decode and ok is false. g is never modified.
func (e *Encoding) RepairAromaticity(g *graph.Graph, opts ...DecodeOption) (repaired *graph.Graph, ok bool) {
	if _, err := e.DecodeDatasetGraph(g, opts...); err == nil {
		return g, true
	}
	if g.Directed() {
		return g, false
	}
	ring := onRing(g)
	h := relabelEdges(g, func(ed graph.Edge) int {
		if ed.Label == datasetAromatic && !ring[[2]int{min(ed.From, ed.To), max(ed.From, ed.To)}] {
			return 0
		}
		return ed.Label
	})
	if _, err := e.DecodeDatasetGraph(h, opts...); err == nil {
		return h, true
	}
	system, n := aromaticSystems(h)
	demoted := make([]bool, n)
	demote := func(extra int) *graph.Graph {
		return relabelEdges(h, func(ed graph.Edge) int {
			if s := system[ed.From]; ed.Label == datasetAromatic && (demoted[s] || s == extra) {
				return 0
			}
			return ed.Label
		})
	}
	for range n {
		first := -1
		for s := range n {
			if demoted[s] {
				continue
			}
			if first < 0 {
				first = s
			}
			if try := demote(s); e.decodes(try, opts) {
				return try, true
			}
		}
		demoted[first] = true
	}
	return demote(-1), false
}

func (e *Encoding) decodes(g *graph.Graph, opts []DecodeOption) bool {
	_, err := e.DecodeDatasetGraph(g, opts...)
	return err == nil
}

// relabelEdges returns a copy of the undirected graph g with each edge's
// label replaced by label(edge) (node labels shared with g).
func relabelEdges(g *graph.Graph, label func(graph.Edge) int) *graph.Graph {
	h := graph.New(g.N())
	h.NodeLabels = g.NodeLabels
	for _, ed := range g.Edges() {
		if err := h.AddLabeledEdge(ed.From, ed.To, label(ed)); err != nil {
			panic("mol: relabelEdges: " + err.Error()) // g's edges are valid
		}
	}
	return h
}

// onRing returns the edges {u, v} (u < v) of the undirected graph g that
// lie on a cycle, that is every edge but the bridges (Tarjan's low-link
// depth-first search).
func onRing(g *graph.Graph) map[[2]int]bool {
	n := g.N()
	order := make([]int, n) // discovery time + 1; 0: unvisited
	low := make([]int, n)
	bridges := map[[2]int]bool{}
	t := 0
	var visit func(v, parent int)
	visit = func(v, parent int) {
		t++
		order[v], low[v] = t, t
		for _, u := range g.Neighbors(v) {
			switch {
			case u == parent:
			case order[u] == 0:
				visit(u, v)
				low[v] = min(low[v], low[u])
				if low[u] > order[v] {
					bridges[[2]int{min(u, v), max(u, v)}] = true
				}
			default:
				low[v] = min(low[v], order[u])
			}
		}
	}
	for v := range n {
		if order[v] == 0 {
			visit(v, -1)
		}
	}
	ring := map[[2]int]bool{}
	for _, ed := range g.Edges() {
		k := [2]int{min(ed.From, ed.To), max(ed.From, ed.To)}
		if !bridges[k] {
			ring[k] = true
		}
	}
	return ring
}

// aromaticSystems numbers the connected sets of aromatic bonds of g:
// system[v] is the system of atom v (-1: no aromatic bond), n their count,
// in order of their lowest atom.
func aromaticSystems(g *graph.Graph) (system []int, n int) {
	system = make([]int, g.N())
	for i := range system {
		system[i] = -1
	}
	for s := range g.N() {
		if system[s] >= 0 || !hasAromaticBond(g, s) {
			continue
		}
		stack := []int{s}
		system[s] = n
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, u := range g.Neighbors(v) {
				if system[u] < 0 && g.EdgeLabel(v, u) == datasetAromatic {
					system[u] = n
					stack = append(stack, u)
				}
			}
		}
		n++
	}
	return system, n
}

func hasAromaticBond(g *graph.Graph, v int) bool {
	for _, u := range g.Neighbors(v) {
		if g.EdgeLabel(v, u) == datasetAromatic {
			return true
		}
	}
	return false
}
