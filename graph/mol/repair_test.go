package mol

import (
	"fmt"
	"testing"

	"lgflow/graph"
)

// datasetGraph builds a MOSES dataset graph of carbons (node label 0) from
// edges {u, v, label}.
func datasetGraph(t *testing.T, n int, edges [][3]int) *graph.Graph {
	t.Helper()
	g := graph.New(n)
	g.NodeLabels = make([]int, n)
	for _, e := range edges {
		if err := g.AddLabeledEdge(e[0], e[1], e[2]); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// ring returns the edges of a ring over nodes from..from+k-1 with label l.
func ring(from, k, l int) [][3]int {
	var es [][3]int
	for i := range k {
		es = append(es, [3]int{from + i, from + (i+1)%k, l})
	}
	return es
}

func TestRepairAromaticity(t *testing.T) {
	const a = datasetAromatic
	benzene := ring(0, 6, a)
	for _, c := range []struct {
		name   string
		n      int
		edges  [][3]int
		ok     bool
		single [][2]int // bonds that must end single; every other label unchanged
	}{
		{"benzene, unchanged", 6, benzene, true, nil},
		// An aromatic bond to a methyl is on no ring: single (toluene).
		{"aromatic bridge", 7, append(ring(0, 6, a), [3]int{0, 6, a}), true, [][2]int{{0, 6}}},
		// Benzene bonded to an all-carbon aromatic five-ring, which has no
		// Kekulé structure: the five-ring becomes single bonds
		// (cyclopentylbenzene), the benzene stays aromatic.
		{"odd aromatic ring", 11, append(append(ring(0, 6, a), [3]int{0, 6, 0}), ring(6, 5, a)...), true,
			[][2]int{{6, 7}, {7, 8}, {8, 9}, {9, 10}, {6, 10}}},
		// A carbon with five bonds: not an aromaticity problem, not repaired.
		{"valence", 6, [][3]int{{0, 1, 0}, {0, 2, 0}, {0, 3, 0}, {0, 4, 0}, {0, 5, 0}}, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := datasetGraph(t, c.n, c.edges)
			before := graph.FormatGraph6(g)
			h, ok := MOSES.RepairAromaticity(g)
			if ok != c.ok {
				t.Fatalf("ok %v, want %v", ok, c.ok)
			}
			if _, err := MOSES.DecodeDatasetGraph(h); (err == nil) != c.ok {
				t.Fatalf("the repaired graph decodes: %v (err %v)", err == nil, err)
			}
			if graph.FormatGraph6(g) != before || g.EdgeLabel(c.edges[0][0], c.edges[0][1]) != c.edges[0][2] {
				t.Fatal("g was modified")
			}
			single := map[[2]int]bool{}
			for _, e := range c.single {
				single[[2]int{min(e[0], e[1]), max(e[0], e[1])}] = true
			}
			for _, e := range c.edges {
				want := e[2]
				if single[[2]int{min(e[0], e[1]), max(e[0], e[1])}] {
					want = 0
				}
				if got := h.EdgeLabel(e[0], e[1]); got != want {
					t.Errorf("bond {%d,%d}: label %d, want %d", e[0], e[1], got, want)
				}
			}
			if h.M() != g.M() {
				t.Errorf("%d bonds, want %d", h.M(), g.M())
			}
		})
	}
}

func TestOnRing(t *testing.T) {
	// A triangle 0-1-2 with a tail 2-3-4 and a square 4-5-6-7.
	g := datasetGraph(t, 8, [][3]int{{0, 1, 0}, {1, 2, 0}, {0, 2, 0}, {2, 3, 0}, {3, 4, 0}, {4, 5, 0}, {5, 6, 0}, {6, 7, 0}, {4, 7, 0}})
	want := map[[2]int]bool{{0, 1}: true, {1, 2}: true, {0, 2}: true, {4, 5}: true, {5, 6}: true, {6, 7}: true, {4, 7}: true}
	got := onRing(g)
	if len(got) != len(want) {
		t.Fatalf("on ring %v, want %v", got, want)
	}
	for k := range want {
		if !got[k] {
			t.Errorf("edge %v not on a ring", k)
		}
	}
}

// A decoder put an aromatic bond between a benzene ring and a methyl
// group, which no molecule has: RepairAromaticity reads it as a single
// bond, and the graph decodes as toluene.
func ExampleEncoding_RepairAromaticity() {
	g := graph.New(7)
	g.NodeLabels = make([]int, 7) // seven carbons
	for i := range 6 {
		g.AddLabeledEdge(i, (i+1)%6, 3) // the aromatic ring
	}
	g.AddLabeledEdge(0, 6, 3) // aromatic, but on no ring
	_, err := MOSES.DecodeDatasetGraph(g)
	fmt.Println("decodes as it is:", err == nil)
	h, ok := MOSES.RepairAromaticity(g)
	smiles, _ := MOSES.DecodeDatasetGraph(h)
	fmt.Println("repaired:", ok, smiles)
	// Output:
	// decodes as it is: false
	// repaired: true Cc1ccccc1
}
