package metrics

import (
	"fmt"
	"math"
	"strings"

	"lgflow/graph"
)

// BuiltinProperties are the names of the properties GraphProperties
// computes from a graph, to build the conditions of a conditional flow
// (cond.NewSet) from data that carries none, and to measure how
// well sampled graphs meet them (PropertyMAE). A directed graph's are its undirected view's, but
// for the edge count.
//
//   - edges: the number of edges (arcs of a directed graph).
//   - triangles: the number of triangles.
//   - diameter: the longest shortest path, in edges (graph.Diameter), of
//     a connected graph; a disconnected one is an error.
//   - rings: the number of independent cycles, edges - nodes + connected
//     components (the circuit rank). For a molecule's graph (atoms
//     without their hydrogens, package mol's encodings) it is the size of
//     the smallest set of smallest rings, the number of rings RDKit's
//     CalcNumRings reports.
var BuiltinProperties = []string{"edges", "triangles", "diameter", "rings"}

// GraphProperties returns, for every graph of gs, the values of the named
// built-in properties (BuiltinProperties) in names' order. An unknown
// name, or a diameter asked of a disconnected graph, is an error that
// names the graph.
func GraphProperties(gs []*graph.Graph, names ...string) ([][]float64, error) {
	fns := make([]func(*graph.Graph) (float64, error), len(names))
	for j, name := range names {
		f, err := propertyFunc(name)
		if err != nil {
			return nil, err
		}
		fns[j] = f
	}
	out := make([][]float64, len(gs))
	for i, g := range gs {
		out[i] = make([]float64, len(names))
		for j, f := range fns {
			v, err := f(g)
			if err != nil {
				return nil, fmt.Errorf("metrics: graph %d: %s: %w", i, names[j], err)
			}
			out[i][j] = v
		}
	}
	return out, nil
}

// propertyFunc returns the function computing the built-in property
// name.
func propertyFunc(name string) (func(*graph.Graph) (float64, error), error) {
	switch name {
	case "edges":
		return func(g *graph.Graph) (float64, error) { return float64(g.M()), nil }, nil
	case "triangles":
		return func(g *graph.Graph) (float64, error) { return float64(triangles(g)), nil }, nil
	case "diameter":
		return func(g *graph.Graph) (float64, error) {
			if !graph.IsConnected(g) {
				return 0, fmt.Errorf("diameter of a disconnected graph (%d components)", len(graph.Components(g)))
			}
			return float64(graph.Diameter(g)), nil
		}, nil
	case "rings":
		return func(g *graph.Graph) (float64, error) { return float64(circuitRank(g)), nil }, nil
	}
	return nil, fmt.Errorf("metrics: unknown property %q (built in: %s)", name, strings.Join(BuiltinProperties, ", "))
}

// PropertyMAE returns the mean absolute error between target and the
// built-in property name (BuiltinProperties) of the graphs gs,
//
//	mae = (1/m) Σ |p(g) - target|,
//
// over the m graphs that have the property: a disconnected graph has no
// diameter, and is left out. It returns m too; with m = 0 the error is
// NaN. It measures how well graphs sampled under the condition
// name=target (flow.WithCondition) meet it. An unknown name is an error.
func PropertyMAE(gs []*graph.Graph, name string, target float64) (mae float64, m int, err error) {
	f, err := propertyFunc(name)
	if err != nil {
		return 0, 0, err
	}
	if math.IsNaN(target) || math.IsInf(target, 0) {
		return 0, 0, fmt.Errorf("metrics: the target of %s, %g, is not a finite number", name, target)
	}
	sum := 0.0
	for _, g := range gs {
		v, err := f(g)
		if err != nil {
			continue // undefined for this graph
		}
		sum += math.Abs(v - target)
		m++
	}
	if m == 0 {
		return math.NaN(), 0, nil
	}
	return sum / float64(m), m, nil
}

// triangles returns the number of triangles of g's undirected view.
func triangles(g *graph.Graph) int {
	u := g
	if g.Directed() {
		u = g.Undirected()
	}
	n := u.N()
	mark := make([]bool, n)
	count := 0
	// Each triangle a < b < c is counted once, from a through b.
	for a := range n {
		for _, v := range u.Neighbors(a) {
			mark[v] = true
		}
		for _, b := range u.Neighbors(a) {
			if b <= a {
				continue
			}
			for _, c := range u.Neighbors(b) {
				if c > b && mark[c] {
					count++
				}
			}
		}
		for _, v := range u.Neighbors(a) {
			mark[v] = false
		}
	}
	return count
}

// circuitRank returns the number of independent cycles of g's undirected
// view: edges - nodes + connected components.
func circuitRank(g *graph.Graph) int {
	u := g
	if g.Directed() {
		u = g.Undirected()
	}
	return u.M() - u.N() + len(graph.Components(u))
}
