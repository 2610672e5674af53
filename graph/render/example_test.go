package render_test

import (
	"bytes"
	"fmt"
	"strings"

	"lgflow/graph"
	"lgflow/graph/render"
)

func ExampleSVG() {
	g := graph.NewDirected(3)
	g.MustAddEdge(0, 1)
	g.MustAddEdge(1, 2)
	g.NodeLabels = []int{0, 1, 1}
	var buf bytes.Buffer
	if err := render.SVG(&buf, g, render.Options{Title: "a path", ShowIDs: true}); err != nil {
		fmt.Println(err)
		return
	}
	s := buf.String()
	fmt.Println(strings.Count(s, "<circle"), strings.Count(s, "marker-end"))
	// Output:
	// 3 2
}

func ExamplePositions() {
	g := graph.NewDirected(3) // 0 -> 1 -> 2: layered top to bottom
	g.MustAddEdge(0, 1)
	g.MustAddEdge(1, 2)
	for _, p := range render.Positions(g, render.Options{}) {
		fmt.Printf("(%.1f, %.1f)\n", p[0], p[1])
	}
	// Output:
	// (0.5, 0.0)
	// (0.5, 0.5)
	// (0.5, 1.0)
}
