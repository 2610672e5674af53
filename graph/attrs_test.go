package graph

import "testing"

// TestBatchAttrs checks that a batch carries node features in node order
// and each edge's features on both of its pairs.
func TestBatchAttrs(t *testing.T) {
	g := New(4) // edges in Edges order: {0,1} {0,3} {1,2} {2,3}
	for _, e := range [][2]int{{2, 3}, {0, 1}, {1, 2}, {3, 0}} {
		g.MustAddEdge(e[0], e[1])
	}
	g.Attrs = &Attrs{NodeDim: 1, Node: []uint8{10, 11, 12, 13}, EdgeDim: 2, Edge: []uint8{1, 1, 3, 3, 12, 12, 23, 23}}
	d := NewDirected(3)
	d.MustAddEdge(2, 0)
	d.MustAddEdge(0, 1)
	d.Attrs = &Attrs{NodeDim: 1, Node: []uint8{5, 6, 7}, EdgeDim: 2, Edge: []uint8{1, 0, 20, 0}} // 0->1, 2->0
	for _, tc := range []struct {
		g    *Graph
		name func(u, v int) uint8 // the first edge feature of pair u -> v
	}{
		{g, func(u, v int) uint8 {
			k := map[[2]int]uint8{{0, 1}: 1, {0, 3}: 3, {1, 2}: 12, {2, 3}: 23}
			return k[[2]int{min(u, v), max(u, v)}]
		}},
		{d, func(u, v int) uint8 { return map[[2]int]uint8{{0, 1}: 1, {2, 0}: 20}[[2]int{u, v}] }},
	} {
		b := NewBatch([]*Graph{tc.g, tc.g})
		if b.NodeAttrDim != 1 || b.EdgeAttrDim != 2 || len(b.EdgeAttrs) != 2*b.NumPairs() {
			t.Fatalf("dims %d, %d with %d edge values for %d pairs", b.NodeAttrDim, b.EdgeAttrDim, len(b.EdgeAttrs), b.NumPairs())
		}
		for i := range b.NumNodes() {
			if want := float32(tc.g.Attrs.Node[i%tc.g.N()]); b.NodeAttrs[i] != want {
				t.Errorf("node %d: attr %v, want %v", i, b.NodeAttrs[i], want)
			}
		}
		for k := range b.NumPairs() {
			off := b.NodeOffset[b.NodeGraph[b.Src[k]]]
			u, v := int(b.Src[k])-off, int(b.Dst[k])-off
			if got, want := b.EdgeAttrs[2*k], float32(tc.name(u, v)); got != want {
				t.Errorf("pair %d -> %d: attr %v, want %v", u, v, got, want)
			}
		}
	}
	// Mixed: one graph without Attrs gives none.
	plain := New(2)
	plain.MustAddEdge(0, 1)
	if b := NewBatch([]*Graph{g, plain}); b.NodeAttrs != nil || b.EdgeAttrs != nil {
		t.Error("a batch with a graph lacking Attrs has attributes")
	}
	// Adding an edge drops the edge features; Clone copies the rest.
	c := g.Clone()
	c.MustAddEdge(0, 2)
	if c.Attrs.Edge != nil || c.Attrs.Node[3] != 13 || g.Attrs.Edge == nil {
		t.Errorf("after AddEdge on a clone: %+v (original %+v)", c.Attrs, g.Attrs)
	}
	if err := c.Attrs.Check(c); err != nil {
		t.Errorf("Check after the drop: %v", err)
	}
	if err := (&Attrs{NodeDim: 2, Node: []uint8{1}}).Check(g); err == nil {
		t.Error("Check accepted 1 value for 4 nodes of 2 features")
	}
}
