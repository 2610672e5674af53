package graph_test

import (
	"fmt"
	"os"
	"strings"

	"lgflow/graph"
)

func ExampleFormatGraph6() {
	g := graph.New(4) // the path 0-1-2-3
	g.MustAddEdge(0, 1)
	g.MustAddEdge(1, 2)
	g.MustAddEdge(2, 3)
	fmt.Println(graph.FormatGraph6(g))
	h, _ := graph.ParseGraph6("C~") // K4
	fmt.Println(h)
	// Output:
	// Ch
	// undirected graph: 4 nodes, 6 edges
}

func ExampleReadGraphs() {
	in := ">>graph6<<Bg\n&BP_\n"
	gs, err := graph.ReadGraphs(strings.NewReader(in))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range gs {
		fmt.Println(g)
	}
	_, err = graph.ReadGraphs(strings.NewReader("Bg\nC~~\n"))
	fmt.Println(err)
	// Output:
	// undirected graph: 3 nodes, 2 edges
	// directed graph: 3 nodes, 3 edges
	// line 2: graph6: 4 nodes need 1 data bytes (6 bits), got 2
}

func ExampleWLOrbits() {
	g := graph.New(5) // path 0-1-2-3-4: the ends and the inner pairs are symmetric
	for i := 0; i < 4; i++ {
		g.MustAddEdge(i, i+1)
	}
	fmt.Println(graph.WLOrbits(g))
	fmt.Println(graph.WLColors(g, 0), graph.WLColors(g, -1))
	// Output:
	// [1 2 0 2 1]
	// [0 1 1 1 0] [0 1 2 1 0]
}

func ExampleTopologicalOrder() {
	g := graph.NewDirected(3)
	g.MustAddEdge(2, 0)
	g.MustAddEdge(0, 1)
	fmt.Println(graph.TopologicalOrder(g))
	g.MustAddEdge(1, 2)
	_, err := graph.TopologicalOrder(g)
	fmt.Println(err)
	// Output:
	// [2 0 1] <nil>
	// graph: not acyclic: 3 of 3 nodes lie on or behind a cycle, e.g. node 0 on cycle 0 -> 1 -> 2 -> 0
}

func ExampleNewBatch() {
	a := graph.New(2)
	a.MustAddEdge(0, 1)
	b := graph.New(3)
	b.MustAddEdge(0, 2)
	bt := graph.NewBatch([]*graph.Graph{a, b})
	fmt.Println(bt.NodeOffset, bt.Src, bt.Dst)
	fmt.Println(bt.MaxN, bt.Mask(nil))
	// Output:
	// [0 2 5] [0 1 2 4] [1 0 4 2]
	// 3 [1 1 0 1 1 1]
}

func ExampleWriteNodeLink() {
	g := graph.NewDirected(2)
	g.MustAddEdge(1, 0)
	graph.WriteNodeLink(os.Stdout, g)
	// Output:
	// {"directed": true, "multigraph": false, "graph": {}, "nodes": [{"id": 0}, {"id": 1}], "edges": [{"source": 1, "target": 0}]}
}
