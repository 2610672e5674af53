package graph

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrCycle is returned (wrapped) by TopologicalOrder when the graph has a
// directed cycle.
var ErrCycle = errors.New("graph: not acyclic")

// undirectedNeighbors calls f for every neighbour of u in the undirected view of g
// (out- and in-neighbours of a directed graph; a node that is both is
// reported twice).
func (g *Graph) undirectedNeighbors(u int, f func(v int)) {
	for _, v := range g.out[u] {
		f(v)
	}
	if g.directed {
		for _, v := range g.in[u] {
			f(v)
		}
	}
}

// Components returns the connected components of g (weakly connected
// components if g is directed). Each component lists its nodes in
// ascending order; components are ordered by their smallest node. A graph
// with no nodes has no components.
func Components(g *Graph) [][]int {
	n := g.N()
	comp := make([]int, n)
	for i := range comp {
		comp[i] = -1
	}
	var comps [][]int
	stack := make([]int, 0, n)
	for s := 0; s < n; s++ {
		if comp[s] >= 0 {
			continue
		}
		id := len(comps)
		comp[s] = id
		stack = append(stack[:0], s)
		members := []int{}
		for len(stack) > 0 {
			u := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			members = append(members, u)
			g.undirectedNeighbors(u, func(v int) {
				if comp[v] < 0 {
					comp[v] = id
					stack = append(stack, v)
				}
			})
		}
		comps = append(comps, sortInts(members, n))
	}
	return comps
}

// sortInts sorts a slice of distinct ints in [0, n) (counting sort when
// dense, insertion-free otherwise via the standard library).
func sortInts(s []int, n int) []int {
	if len(s) < 2 {
		return s
	}
	if len(s)*8 >= n {
		mark := make([]bool, n)
		for _, v := range s {
			mark[v] = true
		}
		s = s[:0]
		for v, ok := range mark {
			if ok {
				s = append(s, v)
			}
		}
		return s
	}
	slices.Sort(s)
	return s
}

// IsConnected reports whether g has at least one node and a single
// (weakly) connected component.
func IsConnected(g *Graph) bool {
	if g.N() == 0 {
		return false
	}
	seen := make([]bool, g.N())
	seen[0] = true
	stack := []int{0}
	count := 1
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		g.undirectedNeighbors(u, func(v int) {
			if !seen[v] {
				seen[v] = true
				count++
				stack = append(stack, v)
			}
		})
	}
	return count == g.N()
}

// IsTree reports whether g is a tree: at least one node, (weakly)
// connected and with exactly N-1 edges. For a directed graph this is the
// test networkx's is_tree applies (the underlying undirected graph is a
// tree); pairs u -> v, v -> u count as two edges.
func IsTree(g *Graph) bool {
	return g.N() > 0 && g.M() == g.N()-1 && IsConnected(g)
}

// IsForest reports whether g has no cycle: every connected component is a
// tree. A directed graph is judged by its underlying undirected graph, in
// which pairs u -> v, v -> u form a cycle (as in IsTree). Graphs without
// edges are forests, and removing edges keeps a forest one.
func IsForest(g *Graph) bool {
	parent := make([]int, g.N())
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for _, e := range g.Edges() {
		a, b := find(e.From), find(e.To)
		if a == b {
			return false
		}
		parent[a] = b
	}
	return true
}

// IsDAG reports whether g is a directed acyclic graph. Undirected graphs
// are never DAGs (as in networkx).
func IsDAG(g *Graph) bool {
	if !g.directed {
		return false
	}
	_, err := TopologicalOrder(g)
	return err == nil
}

// TopologicalOrder returns the nodes of the directed graph g in an order
// where every edge u -> v has u before v (Kahn's algorithm, ties broken by
// node index in first-in-first-out order). If g has a cycle the error wraps
// ErrCycle and names the nodes of one cycle. Undirected graphs are an
// error.
func TopologicalOrder(g *Graph) ([]int, error) {
	if !g.directed {
		return nil, errors.New("graph: topological order of an undirected graph")
	}
	n := g.N()
	indeg := make([]int, n)
	order := make([]int, 0, n)
	for v := 0; v < n; v++ {
		indeg[v] = len(g.in[v])
		if indeg[v] == 0 {
			order = append(order, v)
		}
	}
	for head := 0; head < len(order); head++ {
		for _, v := range g.out[order[head]] {
			indeg[v]--
			if indeg[v] == 0 {
				order = append(order, v)
			}
		}
	}
	if len(order) == n {
		return order, nil
	}
	// Every node left has an in-neighbour that is also left: walk
	// backwards until a node repeats; the repeat closes a cycle.
	start := -1
	for v := 0; v < n; v++ {
		if indeg[v] > 0 {
			start = v
			break
		}
	}
	pos := make(map[int]int)
	var path []int
	u := start
	for {
		if p, ok := pos[u]; ok {
			path = path[p:]
			break
		}
		pos[u] = len(path)
		path = append(path, u)
		for _, w := range g.in[u] {
			if indeg[w] > 0 {
				u = w
				break
			}
		}
	}
	// path follows edges backwards; print it forwards, starting at its
	// smallest node.
	slices.Reverse(path)
	lo := slices.Index(path, slices.Min(path))
	path = slices.Concat(path[lo:], path[:lo])
	var b strings.Builder
	for _, v := range path {
		fmt.Fprintf(&b, "%d -> ", v)
	}
	fmt.Fprintf(&b, "%d", path[0])
	return nil, fmt.Errorf("%w: %d of %d nodes lie on or behind a cycle, e.g. node %d on cycle %s",
		ErrCycle, n-len(order), n, path[0], b.String())
}

// Diameter returns the diameter (longest shortest-path length, in edges) of
// the largest connected component of the undirected view of g; ties
// between equally large components go to the one with the smallest node.
// A graph with no edges has diameter 0.
func Diameter(g *Graph) int {
	comps := Components(g)
	if len(comps) == 0 {
		return 0
	}
	best := comps[0]
	for _, c := range comps[1:] {
		if len(c) > len(best) {
			best = c
		}
	}
	n := g.N()
	dist := make([]int, n)
	for i := range dist {
		dist[i] = -1
	}
	queue := make([]int, 0, len(best))
	diam := 0
	for _, s := range best {
		for _, v := range best {
			dist[v] = -1
		}
		dist[s] = 0
		queue = append(queue[:0], s)
		for head := 0; head < len(queue); head++ {
			u := queue[head]
			du := dist[u]
			if du > diam {
				diam = du
			}
			g.undirectedNeighbors(u, func(v int) {
				if dist[v] < 0 {
					dist[v] = du + 1
					queue = append(queue, v)
				}
			})
		}
	}
	return diam
}

// Clustering returns the local clustering coefficient of every node, as
// networkx's clustering computes it.
//
// Undirected: c_u = 2 T(u) / (deg(u) (deg(u) - 1)), where T(u) is the
// number of triangles through u, and c_u = 0 when deg(u) < 2.
//
// Directed (Fagiolo 2007): c_u = T_u / (2 [d_tot(d_tot - 1) - 2 d_bi]),
// where d_tot = in-degree + out-degree, d_bi is the number of reciprocated
// pairs u <-> v, and T_u counts the directed triangles through u, i.e.
// T_u = sum over j in pred(u) ⊎ succ(u) of |(pred(u) ⊎ succ(u)) ∩ (pred(j) ⊎
// succ(j))| with multiset (chain) semantics. c_u = 0 when T_u = 0.
func Clustering(g *Graph) []float64 {
	n := g.N()
	c := make([]float64, n)
	if !g.directed {
		mark := make([]bool, n)
		for u := 0; u < n; u++ {
			d := len(g.out[u])
			if d < 2 {
				continue
			}
			for _, v := range g.out[u] {
				mark[v] = true
			}
			t := 0
			for _, v := range g.out[u] {
				for _, w := range g.out[v] {
					if mark[w] {
						t++
					}
				}
			}
			for _, v := range g.out[u] {
				mark[v] = false
			}
			// each triangle counted twice (v->w and w->v)
			c[u] = float64(t) / float64(d*(d-1))
		}
		return c
	}
	isPred := make([]bool, n)
	isSucc := make([]bool, n)
	for u := 0; u < n; u++ {
		preds, succs := g.in[u], g.out[u]
		for _, v := range preds {
			isPred[v] = true
		}
		bi := 0
		for _, v := range succs {
			isSucc[v] = true
			if isPred[v] {
				bi++
			}
		}
		count := func(k int) int {
			r := 0
			if isPred[k] {
				r++
			}
			if isSucc[k] {
				r++
			}
			return r
		}
		t := 0
		visit := func(j int) {
			for _, k := range g.in[j] {
				t += count(k)
			}
			for _, k := range g.out[j] {
				t += count(k)
			}
		}
		for _, j := range preds {
			visit(j)
		}
		for _, j := range succs {
			visit(j)
		}
		for _, v := range preds {
			isPred[v] = false
		}
		for _, v := range succs {
			isSucc[v] = false
		}
		dt := len(preds) + len(succs)
		if t > 0 {
			c[u] = float64(t) / float64(2*(dt*(dt-1)-2*bi))
		}
	}
	return c
}
