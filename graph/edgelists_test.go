package graph

import (
	"bytes"
	"strings"
	"testing"
)

// TestReadEdgeLists reads files of several edge lists: blocks separated by
// blank lines, headers, labels, comments, and errors naming the file's
// line and the graph.
func TestReadEdgeLists(t *testing.T) {
	in := "# two graphs\n\n0 1\n1 2 3\n\n\n4 1\n0 3\n# a comment in the block\n"
	gs, err := ReadEdgeLists(strings.NewReader(in), EdgeListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].N() != 3 || gs[0].M() != 2 || gs[0].EdgeLabel(1, 2) != 3 || gs[1].N() != 4 || gs[1].M() != 1 {
		t.Fatalf("read %v", gs)
	}
	d, err := ReadEdgeLists(strings.NewReader("0 1\n1 2\n"), EdgeListOptions{Directed: true})
	if err != nil || len(d) != 1 || !d[0].Directed() || !d[0].HasEdge(0, 1) || d[0].HasEdge(1, 0) {
		t.Fatalf("directed: %v, %v", d, err)
	}
	var b bytes.Buffer
	if err := WriteEdgeLists(&b, gs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadEdgeLists(&b, EdgeListOptions{})
	if err != nil || len(back) != 2 || back[1].N() != 4 || back[0].EdgeLabel(1, 2) != 3 {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	for _, c := range []struct{ in, want string }{
		{"0 1\n\n0 1\n1 x\n", `line 4 (graph 1): second node "x" is not an integer`},
		{"0 1\n1 2\n\n\n3 3\n", "line 5 (graph 1): self-loop at node 3"},
		{"0 1 2 3\n", "line 1 (graph 0): want \"u v\" or \"u v label\""},
	} {
		if _, err := ReadEdgeLists(strings.NewReader(c.in), EdgeListOptions{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
	if gs, err := ReadEdgeLists(strings.NewReader("\n# nothing\n\n"), EdgeListOptions{}); err != nil || len(gs) != 0 {
		t.Errorf("comments only: %v, %v", gs, err)
	}
	for _, c := range []struct {
		path string
		want bool
	}{{"a.edges", true}, {"a.EL.gz", true}, {"a.edgelist", true}, {"a.g6", false}, {"a.json", false}} {
		if IsEdgeListPath(c.path) != c.want {
			t.Errorf("IsEdgeListPath(%q) = %v", c.path, !c.want)
		}
	}
}
