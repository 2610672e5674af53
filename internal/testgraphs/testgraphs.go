// Package testgraphs makes small graph families for tests of the packages
// that train on graphs: quick to learn, seeded, with a known validity.
package testgraphs

import (
	"lgflow/graph"
	"lgflow/tensor"
)

// Ladders returns n ladder graphs (two paths of 3 to 6 nodes joined rung
// by rung: planar and connected) with their nodes shuffled, seeded.
func Ladders(n int, seed uint64) []*graph.Graph {
	r := tensor.NewRNG(seed)
	gs := make([]*graph.Graph, n)
	for i := range gs {
		k := 3 + i%4
		g := graph.New(2 * k)
		for j := range k {
			g.MustAddEdge(j, k+j)
			if j+1 < k {
				g.MustAddEdge(j, j+1)
				g.MustAddEdge(k+j, k+j+1)
			}
		}
		p, err := g.Permute(r.Perm(2 * k))
		if err != nil {
			panic(err) // a permutation of the graph's own nodes
		}
		gs[i] = p
	}
	return gs
}
