// Package graph provides simple graphs (undirected graphs and directed
// graphs such as DAGs) with optional categorical node and edge labels, the
// graph algorithms lgflow needs, and readers and writers for the common
// exchange formats.
//
// A Graph has nodes 0..N-1. It holds no self-loops and no parallel edges:
// adding an edge twice keeps one edge (with the last label). For an
// undirected graph an edge {u, v} is stored once and reported with u < v.
package graph

import (
	"errors"
	"fmt"
	"slices"
)

// ErrNode is returned (wrapped) when a node index is out of range.
var ErrNode = errors.New("graph: node index out of range")

// Edge is an edge From -> To with a categorical Label (0 when unlabelled).
// For undirected graphs From < To.
type Edge struct {
	From, To int
	Label    int
}

// Graph is a simple undirected or directed graph with optional categorical
// node and edge labels. The zero value is an empty undirected graph.
type Graph struct {
	directed bool
	out      [][]int // sorted out-neighbours (all neighbours if undirected)
	in       [][]int // sorted in-neighbours (directed only)
	// NodeLabels holds one categorical label per node, or is nil for an
	// unlabelled graph.
	NodeLabels []int
	// Attrs, when not nil, holds integer node and edge features that
	// encoders read (a molecule's charges and ring memberships). Adding or
	// removing an edge drops the edge features, whose order follows Edges.
	Attrs      *Attrs
	edgeLabels map[[2]int]int // only non-zero labels; key normalised
	m          int
}

// New returns an undirected graph with n isolated nodes.
func New(n int) *Graph {
	return &Graph{out: make([][]int, n)}
}

// NewDirected returns a directed graph with n isolated nodes.
func NewDirected(n int) *Graph {
	return &Graph{directed: true, out: make([][]int, n), in: make([][]int, n)}
}

// Directed reports whether g is directed.
func (g *Graph) Directed() bool { return g.directed }

// N returns the number of nodes.
func (g *Graph) N() int { return len(g.out) }

// M returns the number of edges (each undirected edge counted once).
func (g *Graph) M() int { return g.m }

func (g *Graph) key(u, v int) [2]int {
	if !g.directed && u > v {
		u, v = v, u
	}
	return [2]int{u, v}
}

func (g *Graph) check(u int) error {
	if u < 0 || u >= len(g.out) {
		return fmt.Errorf("%w: %d not in [0, %d)", ErrNode, u, len(g.out))
	}
	return nil
}

func insertSorted(s []int, v int) ([]int, bool) {
	i, found := slices.BinarySearch(s, v)
	if found {
		return s, false
	}
	return slices.Insert(s, i, v), true
}

func removeSorted(s []int, v int) ([]int, bool) {
	i, found := slices.BinarySearch(s, v)
	if !found {
		return s, false
	}
	return slices.Delete(s, i, i+1), true
}

// AddEdge adds the edge u -> v (u — v if undirected) with label 0.
// Self-loops and out-of-range nodes are errors; adding an existing edge is
// a no-op.
func (g *Graph) AddEdge(u, v int) error { return g.AddLabeledEdge(u, v, 0) }

// AddLabeledEdge adds the edge u -> v with the given label, replacing the
// label if the edge exists.
func (g *Graph) AddLabeledEdge(u, v, label int) error {
	if err := g.check(u); err != nil {
		return err
	}
	if err := g.check(v); err != nil {
		return err
	}
	if u == v {
		return fmt.Errorf("graph: self-loop at node %d", u)
	}
	var added bool
	g.out[u], added = insertSorted(g.out[u], v)
	if g.directed {
		g.in[v], _ = insertSorted(g.in[v], u)
	} else {
		g.out[v], _ = insertSorted(g.out[v], u)
	}
	if added {
		g.m++
		g.Attrs.dropEdges()
	}
	k := g.key(u, v)
	if label != 0 {
		if g.edgeLabels == nil {
			g.edgeLabels = make(map[[2]int]int)
		}
		g.edgeLabels[k] = label
	} else if g.edgeLabels != nil {
		delete(g.edgeLabels, k)
	}
	return nil
}

// MustAddEdge is AddEdge for graphs built by code that knows its indices
// are valid (tests, generators); it panics on error.
func (g *Graph) MustAddEdge(u, v int) {
	if err := g.AddEdge(u, v); err != nil {
		panic(err)
	}
}

// RemoveEdge removes u -> v if present and reports whether it was.
func (g *Graph) RemoveEdge(u, v int) bool {
	if g.check(u) != nil || g.check(v) != nil {
		return false
	}
	var removed bool
	g.out[u], removed = removeSorted(g.out[u], v)
	if !removed {
		return false
	}
	if g.directed {
		g.in[v], _ = removeSorted(g.in[v], u)
	} else {
		g.out[v], _ = removeSorted(g.out[v], u)
	}
	g.m--
	g.Attrs.dropEdges()
	if g.edgeLabels != nil {
		delete(g.edgeLabels, g.key(u, v))
	}
	return true
}

// HasEdge reports whether u -> v is an edge (u — v if undirected).
func (g *Graph) HasEdge(u, v int) bool {
	if u < 0 || u >= len(g.out) {
		return false
	}
	_, ok := slices.BinarySearch(g.out[u], v)
	return ok
}

// EdgeLabel returns the label of u -> v (0 if unlabelled or absent).
func (g *Graph) EdgeLabel(u, v int) int {
	if g.edgeLabels == nil {
		return 0
	}
	return g.edgeLabels[g.key(u, v)]
}

// Neighbors returns the sorted out-neighbours of u (all neighbours if g is
// undirected). The slice is owned by g and must not be modified.
func (g *Graph) Neighbors(u int) []int { return g.out[u] }

// InNeighbors returns the sorted in-neighbours of u (all neighbours if g
// is undirected). The slice is owned by g and must not be modified.
func (g *Graph) InNeighbors(u int) []int {
	if !g.directed {
		return g.out[u]
	}
	return g.in[u]
}

// Degree returns the number of neighbours of u (out-degree plus in-degree
// for a directed graph).
func (g *Graph) Degree(u int) int {
	if g.directed {
		return len(g.out[u]) + len(g.in[u])
	}
	return len(g.out[u])
}

// OutDegree returns the number of out-neighbours of u.
func (g *Graph) OutDegree(u int) int { return len(g.out[u]) }

// InDegree returns the number of in-neighbours of u.
func (g *Graph) InDegree(u int) int { return len(g.InNeighbors(u)) }

// Edges returns all edges in lexicographic (From, To) order; undirected
// edges are reported once with From < To.
func (g *Graph) Edges() []Edge {
	es := make([]Edge, 0, g.m)
	for u, nb := range g.out {
		for _, v := range nb {
			if !g.directed && v < u {
				continue
			}
			es = append(es, Edge{From: u, To: v, Label: g.EdgeLabel(u, v)})
		}
	}
	return es
}

// EdgeIndex returns the edge list in message-passing form: for every edge
// u -> v the pair (src=u, dst=v), and for undirected graphs both (u, v)
// and (v, u). Pairs are in lexicographic order of (src, dst).
func (g *Graph) EdgeIndex() (src, dst []int32) {
	k := g.m
	if !g.directed {
		k *= 2
	}
	src = make([]int32, 0, k)
	dst = make([]int32, 0, k)
	for u, nb := range g.out {
		for _, v := range nb {
			src = append(src, int32(u))
			dst = append(dst, int32(v))
		}
	}
	return src, dst
}

// Adjacency returns the dense n x n adjacency matrix, row-major, with
// A[u*n+v] = 1 for every edge u -> v (both directions if undirected).
func (g *Graph) Adjacency() []float64 {
	n := g.N()
	a := make([]float64, n*n)
	for u, nb := range g.out {
		for _, v := range nb {
			a[u*n+v] = 1
		}
	}
	return a
}

// Clone returns a deep copy of g.
func (g *Graph) Clone() *Graph {
	c := &Graph{directed: g.directed, m: g.m}
	c.out = make([][]int, len(g.out))
	for i, nb := range g.out {
		c.out[i] = slices.Clone(nb)
	}
	if g.directed {
		c.in = make([][]int, len(g.in))
		for i, nb := range g.in {
			c.in[i] = slices.Clone(nb)
		}
	}
	if g.NodeLabels != nil {
		c.NodeLabels = slices.Clone(g.NodeLabels)
	}
	if g.Attrs != nil {
		c.Attrs = g.Attrs.clone()
	}
	if g.edgeLabels != nil {
		c.edgeLabels = make(map[[2]int]int, len(g.edgeLabels))
		for k, v := range g.edgeLabels {
			c.edgeLabels[k] = v
		}
	}
	return c
}

// Undirected returns the undirected graph with an edge {u, v} wherever g
// has u -> v or v -> u. Edge labels are dropped; node labels are copied.
func (g *Graph) Undirected() *Graph {
	u := New(g.N())
	for a, nb := range g.out {
		for _, b := range nb {
			u.out[a], _ = insertSorted(u.out[a], b)
			u.out[b], _ = insertSorted(u.out[b], a)
		}
	}
	for a, nb := range u.out {
		for _, b := range nb {
			if a < b {
				u.m++
			}
		}
	}
	if g.NodeLabels != nil {
		u.NodeLabels = slices.Clone(g.NodeLabels)
	}
	return u
}

// Permute returns the graph with node i renamed perm[i]. perm must be a
// permutation of 0..N-1.
func (g *Graph) Permute(perm []int) (*Graph, error) {
	n := g.N()
	if len(perm) != n {
		return nil, fmt.Errorf("graph: permutation has length %d, graph has %d nodes", len(perm), n)
	}
	seen := make([]bool, n)
	for _, p := range perm {
		if p < 0 || p >= n || seen[p] {
			return nil, fmt.Errorf("graph: not a permutation of 0..%d", n-1)
		}
		seen[p] = true
	}
	var h *Graph
	if g.directed {
		h = NewDirected(n)
	} else {
		h = New(n)
	}
	for _, e := range g.Edges() {
		if err := h.AddLabeledEdge(perm[e.From], perm[e.To], e.Label); err != nil {
			return nil, err
		}
	}
	if g.NodeLabels != nil {
		h.NodeLabels = make([]int, n)
		for i, l := range g.NodeLabels {
			h.NodeLabels[perm[i]] = l
		}
	}
	return h, nil
}

// String returns a short description such as "undirected graph: 64 nodes, 177 edges".
func (g *Graph) String() string {
	kind := "undirected"
	if g.directed {
		kind = "directed"
	}
	return fmt.Sprintf("%s graph: %d nodes, %d edges", kind, g.N(), g.m)
}
