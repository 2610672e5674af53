package flow

import (
	"fmt"
	"strings"

	"lgflow/graph"
)

// BuiltinProperties are the names of the properties GraphProperties
// computes from a graph, to build conditions (NewConditions) from data
// that carries none. A directed graph's are its undirected view's, but
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
		switch name {
		case "edges":
			fns[j] = func(g *graph.Graph) (float64, error) { return float64(g.M()), nil }
		case "triangles":
			fns[j] = func(g *graph.Graph) (float64, error) { return float64(Triangles(g)), nil }
		case "diameter":
			fns[j] = func(g *graph.Graph) (float64, error) {
				if !graph.IsConnected(g) {
					return 0, fmt.Errorf("diameter of a disconnected graph (%d components)", len(graph.Components(g)))
				}
				return float64(graph.Diameter(g)), nil
			}
		case "rings":
			fns[j] = func(g *graph.Graph) (float64, error) { return float64(CircuitRank(g)), nil }
		default:
			return nil, fmt.Errorf("flow: unknown property %q (built in: %s)", name, strings.Join(BuiltinProperties, ", "))
		}
	}
	out := make([][]float64, len(gs))
	for i, g := range gs {
		out[i] = make([]float64, len(names))
		for j, f := range fns {
			v, err := f(g)
			if err != nil {
				return nil, fmt.Errorf("flow: graph %d: %s: %w", i, names[j], err)
			}
			out[i][j] = v
		}
	}
	return out, nil
}

// Triangles returns the number of triangles of g's undirected view.
func Triangles(g *graph.Graph) int {
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

// CircuitRank returns the number of independent cycles of g's undirected
// view: edges - nodes + connected components.
func CircuitRank(g *graph.Graph) int {
	u := g
	if g.Directed() {
		u = g.Undirected()
	}
	return u.M() - u.N() + len(graph.Components(u))
}
