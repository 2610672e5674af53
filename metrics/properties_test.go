package metrics_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"lgflow/graph"
	"lgflow/metrics"
)

func TestGraphProperties(t *testing.T) {
	tri := graph.New(4) // a triangle with a pendant node: 4 edges, 1 triangle, diameter 2, 1 ring
	for _, e := range [][2]int{{0, 1}, {1, 2}, {0, 2}, {2, 3}} {
		tri.MustAddEdge(e[0], e[1])
	}
	k4 := graph.New(4)
	for u := range 4 {
		for v := u + 1; v < 4; v++ {
			k4.MustAddEdge(u, v)
		}
	}
	path := graph.New(5)
	for u := range 4 {
		path.MustAddEdge(u, u+1)
	}
	dag := graph.NewDirected(3) // a directed triangle's undirected view
	for _, e := range [][2]int{{0, 1}, {1, 2}, {0, 2}} {
		dag.MustAddEdge(e[0], e[1])
	}
	got, err := metrics.GraphProperties([]*graph.Graph{tri, k4, path, dag}, "edges", "triangles", "diameter", "rings")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{4, 1, 2, 1}, {6, 4, 1, 3}, {4, 0, 4, 0}, {3, 1, 1, 1}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("graph %d: %v, want %v", i, got[i], want[i])
		}
	}
	two := graph.New(4)
	two.MustAddEdge(0, 1)
	two.MustAddEdge(2, 3)
	if _, err := metrics.GraphProperties([]*graph.Graph{tri, two}, "diameter"); err == nil || !strings.Contains(err.Error(), "graph 1") {
		t.Errorf("diameter of a disconnected graph: %v", err)
	}
	if v, err := metrics.GraphProperties([]*graph.Graph{two}, "rings", "edges"); err != nil || !slices.Equal(v[0], []float64{0, 2}) {
		t.Errorf("two edges: %v, %v", v, err)
	}
	if _, err := metrics.GraphProperties([]*graph.Graph{tri}, "girth"); err == nil || !strings.Contains(err.Error(), "unknown property") {
		t.Errorf("unknown property: %v", err)
	}
}

// TestPropertyMAE checks PropertyMAE on hand-counted graphs: a path of 5
// nodes (4 edges, diameter 4), a triangle with a pendant node (4 edges,
// diameter 2), K4 (6 edges, diameter 1) and two disjoint edges (2 edges,
// no diameter).
func TestPropertyMAE(t *testing.T) {
	build := func(n int, edges ...[2]int) *graph.Graph {
		g := graph.New(n)
		for _, e := range edges {
			g.MustAddEdge(e[0], e[1])
		}
		return g
	}
	path := build(5, [2]int{0, 1}, [2]int{1, 2}, [2]int{2, 3}, [2]int{3, 4})
	tri := build(4, [2]int{0, 1}, [2]int{1, 2}, [2]int{0, 2}, [2]int{2, 3})
	k4 := build(4, [2]int{0, 1}, [2]int{0, 2}, [2]int{0, 3}, [2]int{1, 2}, [2]int{1, 3}, [2]int{2, 3})
	two := build(4, [2]int{0, 1}, [2]int{2, 3})
	gs := []*graph.Graph{path, tri, k4, two}
	for _, c := range []struct {
		name   string
		target float64
		mae    float64
		m      int
	}{
		{"edges", 4, (0 + 0 + 2 + 2) / 4.0, 4},
		{"edges", 3.5, (0.5 + 0.5 + 2.5 + 1.5) / 4, 4},
		{"triangles", 1, (1 + 0 + 3 + 1) / 4.0, 4},
		{"diameter", 2, (2 + 0 + 1) / 3.0, 3}, // the disjoint edges left out
		{"rings", 0, (0 + 1 + 3 + 0) / 4.0, 4},
	} {
		mae, m, err := metrics.PropertyMAE(gs, c.name, c.target)
		if err != nil || m != c.m || math.Abs(mae-c.mae) > 1e-12 {
			t.Errorf("%s = %g: MAE %g over %d graphs (%v), want %g over %d", c.name, c.target, mae, m, err, c.mae, c.m)
		}
	}
	if mae, m, err := metrics.PropertyMAE([]*graph.Graph{two}, "diameter", 1); err != nil || m != 0 || !math.IsNaN(mae) {
		t.Errorf("no graph with a diameter: %g over %d, %v", mae, m, err)
	}
	if _, _, err := metrics.PropertyMAE(gs, "girth", 3); err == nil || !strings.Contains(err.Error(), "unknown property") {
		t.Errorf("unknown property: %v", err)
	}
	if _, _, err := metrics.PropertyMAE(gs, "edges", math.Inf(1)); err == nil {
		t.Error("an infinite target accepted")
	}
}
