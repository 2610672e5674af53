package graph

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// nodeLinksSame reports whether a and b have the same direction, nodes,
// labelled edges and node labels.
func nodeLinksSame(a, b *Graph) bool {
	return a.Directed() == b.Directed() && a.N() == b.N() &&
		reflect.DeepEqual(a.Edges(), b.Edges()) && reflect.DeepEqual(a.NodeLabels, b.NodeLabels)
}

// nodeLinksGraphs returns a TPU-like labelled DAG, a molecule-like graph
// with node and edge labels, an unlabelled graph and an empty one.
func nodeLinksGraphs(t *testing.T) []*Graph {
	t.Helper()
	dag, err := FromEdges(4, true, []Edge{{0, 1, 0}, {0, 2, 0}, {2, 3, 0}, {1, 3, 0}})
	if err != nil {
		t.Fatal(err)
	}
	dag.NodeLabels = []int{5, 46, 0, 12}
	mol, err := FromEdges(3, false, []Edge{{0, 1, 1}, {1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	mol.NodeLabels = []int{0, 3, 0}
	plain, err := FromEdges(3, false, []Edge{{0, 1, 0}, {0, 2, 0}})
	if err != nil {
		t.Fatal(err)
	}
	return []*Graph{dag, mol, plain, New(0)}
}

func TestNodeLinksRoundTrip(t *testing.T) {
	gs := nodeLinksGraphs(t)
	var b strings.Builder
	if err := WriteNodeLinks(&b, gs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != len(gs) {
		t.Fatalf("%d lines for %d graphs:\n%s", len(lines), len(gs), b.String())
	}
	array := "[\n" + strings.Join(lines, ",\n") + "\n]\n"
	for _, c := range []struct{ name, in string }{
		{"lines", b.String()},
		{"blank lines and spaces", "\n  " + strings.Join(lines, "\n\n") + "  \n"},
		{"array", array},
	} {
		got, err := ReadNodeLinks(strings.NewReader(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != len(gs) {
			t.Fatalf("%s: %d graphs, want %d", c.name, len(got), len(gs))
		}
		for i := range gs {
			if !nodeLinksSame(got[i], gs[i]) {
				t.Errorf("%s: graph %d: %v %v, want %v %v", c.name, i, got[i].Edges(), got[i].NodeLabels, gs[i].Edges(), gs[i].NodeLabels)
			}
		}
	}
}

func TestReadNodeLinksErrors(t *testing.T) {
	good := `{"directed": false, "multigraph": false, "graph": {}, "nodes": [{"id": 0}, {"id": 1}], "edges": [{"source": 0, "target": 1}]}`
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", ""},
		{"white space", " \n\t", ""},
		{"second graph bad edge", good + "\n" + `{"nodes": [{"id": 0}], "edges": [{"source": 0, "target": 7}]}`, "graph 1: "},
		{"second graph malformed", good + "\n{\"nodes\": [", "graph 1: node-link JSON: byte"},
		{"array element bad", "[" + good + `, {"nodes": [{"id": 0}, {"id": 0}]}]`, "graph 1: node-link JSON: nodes[1]: duplicate id"},
		{"data after array", "[" + good + "] {}", "data after the array"},
		{"not an object", "[1]", "graph 0: "},
	} {
		gs, err := ReadNodeLinks(strings.NewReader(c.in))
		if c.want == "" {
			if err != nil || len(gs) != 0 {
				t.Errorf("%s: %d graphs, %v; want none and no error", c.name, len(gs), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestNodeLinkFiles(t *testing.T) {
	gs := nodeLinksGraphs(t)
	dir := t.TempDir()
	for _, name := range []string{"s.jsonl", "s.json.gz"} {
		path := filepath.Join(dir, name)
		if err := WriteNodeLinkFile(path, gs); err != nil {
			t.Fatal(err)
		}
		got, err := ReadAnyFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(gs) || !nodeLinksSame(got[0], gs[0]) || !nodeLinksSame(got[1], gs[1]) {
			t.Errorf("%s: round trip lost graphs or labels", name)
		}
	}
	g6 := filepath.Join(dir, "s.g6")
	if err := WriteFile(g6, gs[2:3]); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadAnyFile(g6); err != nil || len(got) != 1 || !nodeLinksSame(got[0], gs[2]) {
		t.Errorf("graph6 through ReadAnyFile: %v, %v", got, err)
	}
	if _, err := ReadAnyFile(filepath.Join(dir, "missing.jsonl")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

func TestIsNodeLinkPath(t *testing.T) {
	for path, want := range map[string]bool{
		"a.json": true, "a.jsonl": true, "a.ndjson": true, "A.JSONL.GZ": true, "a.json.gz": true,
		"a.g6": false, "a.d6": false, "a.g6.gz": false, "json": false, "a.smi": false,
	} {
		if got := IsNodeLinkPath(path); got != want {
			t.Errorf("IsNodeLinkPath(%q) = %v, want %v", path, got, want)
		}
	}
}
