package datasets_test

import (
	"context"
	"fmt"

	"lgflow/graph"
	"lgflow/graph/datasets"
)

func ExamplePlanar() {
	gs := datasets.Planar(64, 3, 0)
	for _, g := range gs {
		fmt.Println(g, graph.IsConnected(g))
	}
	// Output:
	// undirected graph: 64 nodes, 178 edges true
	// undirected graph: 64 nodes, 181 edges true
	// undirected graph: 64 nodes, 179 edges true
}

func ExampleLoad() {
	ctx := context.Background()
	val, err := datasets.Load(ctx, "tree", "val", datasets.Options{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(val), val[0], graph.IsTree(val[0]))
	_, err = datasets.Load(ctx, "trees", "val", datasets.Options{})
	fmt.Println(err)
	// Output:
	// 256 undirected graph: 64 nodes, 63 edges true
	// datasets: unknown dataset "trees" (valid: ego, planar, planar-128, planar-256, planar-512, price, tpu, tree)
}

func ExampleDelaunay() {
	// A unit square with its centre: four triangles around the centre.
	pts := [][2]float64{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0.5, 0.5}}
	tris, err := datasets.Delaunay(pts)
	fmt.Println(len(tris), err)
	// Output:
	// 4 <nil>
}

func ExamplePrice() {
	g := datasets.Price(64, 1, 0)[0]
	fmt.Println(g.Directed(), graph.IsDAG(g), g.N())
	// Output:
	// true true 64
}
