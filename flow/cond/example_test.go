package cond_test

import (
	"fmt"

	"lgflow/flow/cond"
	"lgflow/graph"
	"lgflow/metrics"
)

// ExampleNewSet builds the conditions of a training set from its
// graphs' labels and two built-in properties, then reads a requested
// condition as lgflow sample -cond gives it. Train takes the conditions
// with the latents (flow.Latents.Cond) and a configuration made for them
// (flow.Config.ForCondition).
func ExampleNewSet() {
	triangle, path := graph.New(3), graph.New(4)
	triangle.MustAddEdge(0, 1)
	triangle.MustAddEdge(1, 2)
	triangle.MustAddEdge(0, 2)
	for u := range 3 {
		path.MustAddEdge(u, u+1)
	}
	gs := []*graph.Graph{triangle, path, path}
	props, err := metrics.GraphProperties(gs, "edges", "triangles")
	if err != nil {
		panic(err)
	}
	conds, err := cond.NewSet([]string{"cycle", "tree", "tree"}, []string{"edges", "triangles"}, props)
	if err != nil {
		panic(err)
	}
	s := conds.Schema
	fmt.Println("labels:", s.Labels, "label indices:", conds.Labels)
	for i, p := range s.Properties {
		lo, hi := s.Range(i)
		fmt.Printf("%s: mean %.3g, std %.3g, trained on [%g, %g], accepted in [%.3g, %.3g]\n", p.Name, p.Mean, p.Std, p.Min, p.Max, lo, hi)
	}
	c, err := s.Parse("label=tree,edges=3,triangles=0")
	fmt.Println(s.Format(c), err)
	_, err = s.Parse("label=tree,edges=5,triangles=0")
	fmt.Println(err)
	// Output:
	// labels: [cycle tree] label indices: [0 1 1]
	// edges: mean 3, std 1, trained on [3, 3], accepted in [2.5, 3.5]
	// triangles: mean 0.333, std 0.471, trained on [0, 1], accepted in [-0.236, 1.24]
	// label=tree,edges=3,triangles=0 <nil>
	// cond: property edges = 5 is outside the range the model was trained on, [3, 3], by more than 0.5 standard deviations (1): allowed [2.5, 3.5]
}
