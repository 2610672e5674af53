package bundle

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lgflow/graph"
)

// TestReadConditions reads condition files of each kind, and refuses bad
// ones with the line.
func TestReadConditions(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       *ConditionTable
		err        string
	}{
		{"labels", "tree\nplanar\n\n# a comment\ntree\n", &ConditionTable{Labels: []string{"tree", "planar", "tree"}}, ""},
		{"label pairs", "label=tree\r\nlabel=planar\r\n", &ConditionTable{Labels: []string{"tree", "planar"}}, ""},
		{"properties in any order", "edges=63,triangles=0\n triangles = 12 , edges = 170 \n", &ConditionTable{Names: []string{"edges", "triangles"}, Values: [][]float64{{63, 0}, {170, 12}}}, ""},
		{"both", "label=tree,edges=63\nedges=1.5e2,label=planar\n", &ConditionTable{Labels: []string{"tree", "planar"}, Names: []string{"edges"}, Values: [][]float64{{63}, {150}}}, ""},
		{"empty", "\n# nothing\n", nil, "no conditions"},
		{"two words", "tree\nplanar graph\n", nil, `line 2: "planar graph" is neither a label`},
		{"a comma in a label", "tree,planar\n", nil, "line 1"},
		{"not a number", "edges=63\nedges=many\n", nil, `line 2: edges="many" is not a number`},
		{"NaN", "edges=NaN\n", nil, "line 1: edges=NaN is not a finite number"},
		{"infinite", "edges=1\nedges=+Inf\n", nil, "line 2: edges=+Inf is not a finite number"},
		{"a pair without =", "label=tree,edges\n", nil, `line 1: "edges" is not name=value`},
		{"an empty value", "edges=\n", nil, "line 1"},
		{"a key twice", "edges=1,edges=2\n", nil, "line 1: edges given twice"},
		{"prop reserved", "prop=1\n", nil, `"prop" is reserved`},
		{"other keys", "label=tree,edges=3\nlabel=planar\n", nil, "line 2 gives a label, line 1 gave label, edges"},
		{"a label after pairs", "edges=3\ntree\n", nil, "line 2 gives a label, line 1 gave edges"},
	} {
		got, err := ReadConditions(strings.NewReader(c.text))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && !reflect.DeepEqual(got, c.want):
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestReadConditionFile checks the count of conditions against the
// graphs, gzip, and that errors name the file.
func TestReadConditionFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "labels.txt")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if tab, err := ReadConditionFile(path, 3); err != nil || tab.Len() != 3 {
		t.Errorf("3 labels for 3 graphs: %+v, %v", tab, err)
	}
	if _, err := ReadConditionFile(path, 4); err == nil || !strings.Contains(err.Error(), path+": 3 conditions for 4 graphs") {
		t.Errorf("3 labels for 4 graphs: %v", err)
	}
	gz := filepath.Join(dir, "props.txt.gz")
	f, err := os.Create(gz)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	zw.Write([]byte("x=1\nx=oops\n"))
	zw.Close()
	f.Close()
	if _, err := ReadConditionFile(gz, 2); err == nil || !strings.Contains(err.Error(), gz+": line 2") {
		t.Errorf("a bad gzip-compressed file: %v", err)
	}
	if _, err := ReadConditionFile(filepath.Join(dir, "missing"), 1); err == nil {
		t.Error("a missing file read")
	}
}

// TestNodeLinkConditions reads labels and properties from node-link
// graph attributes, and refuses attributes that are missing or of the
// wrong kind.
func TestNodeLinkConditions(t *testing.T) {
	doc := func(attrs string) string {
		return `{"directed": false, "multigraph": false, "graph": {` + attrs + `}, "nodes": [{"id": 0}, {"id": 1}], "edges": [{"source": 0, "target": 1}]}`
	}
	write := func(name string, docs ...string) string {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(strings.Join(docs, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("g.jsonl", doc(`"label": "tree", "edges": 63, "name": "G0"`), doc(`"label": "planar", "edges": 170.5, "name": "G1"`))
	got, err := NodeLinkConditions(good, []string{"label", "edges"})
	want := &ConditionTable{Labels: []string{"tree", "planar"}, Names: []string{"edges"}, Values: [][]float64{{63}, {170.5}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("label and edges: %+v, %v", got, err)
	}
	if gs, err := graph.ReadNodeLinkFile(good); err != nil || len(gs) != 2 {
		t.Fatalf("the file's graphs: %v", err)
	}
	// A string key of another name is the label; the key label with
	// integers too; an array of graphs.
	if got, err := NodeLinkConditions(good, []string{"name"}); err != nil || !reflect.DeepEqual(got.Labels, []string{"G0", "G1"}) {
		t.Errorf("name as the label: %+v, %v", got, err)
	}
	ints := write("ints.json", "["+doc(`"label": 1`)+",", doc(`"label": 0`)+"]")
	if got, err := NodeLinkConditions(ints, []string{"label"}); err != nil || !reflect.DeepEqual(got.Labels, []string{"1", "0"}) {
		t.Errorf("integer labels: %+v, %v", got, err)
	}
	for _, c := range []struct {
		name string
		path string
		keys []string
		err  string
	}{
		{"missing", write("m.jsonl", doc(`"edges": 1`), doc(`"nodes": 2`)), []string{"edges"}, `graph 1: no graph attribute "edges"`},
		{"two labels", good, []string{"label", "name"}, "two labels"},
		{"a string property", write("s.jsonl", doc(`"edges": 1`), doc(`"edges": "2"`)), []string{"edges"}, `graph 1: attribute "edges" is "2", not a number`},
		{"a number label", write("n.jsonl", doc(`"name": "a"`), doc(`"name": 2`)), []string{"name"}, `graph 1: attribute "name" is 2, not a label`},
		{"a fraction label", write("f.jsonl", doc(`"label": 1`), doc(`"label": 1.5`)), []string{"label"}, "neither a string nor an integer"},
		{"a label with spaces", write("sp.jsonl", doc(`"label": "a b"`)), []string{"label"}, "one word"},
		{"null", write("null.jsonl", doc(`"edges": null`)), []string{"edges"}, "neither a string"},
		{"a key twice", good, []string{"edges", "edges"}, "given twice"},
	} {
		if _, err := NodeLinkConditions(c.path, c.keys); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		}
	}
}

// TestConditionTable merges sources, takes subsets and builds the
// training conditions.
func TestConditionTable(t *testing.T) {
	path := graph.New(3)
	path.MustAddEdge(0, 1)
	path.MustAddEdge(1, 2)
	tri := graph.New(3)
	tri.MustAddEdge(0, 1)
	tri.MustAddEdge(1, 2)
	tri.MustAddEdge(0, 2)
	labels := &ConditionTable{Labels: []string{"path", "cycle"}}
	props, err := PropertyConditions([]*graph.Graph{path, tri}, []string{"edges", "triangles"})
	if err != nil {
		t.Fatal(err)
	}
	both, err := labels.Merge(props)
	want := &ConditionTable{Labels: []string{"path", "cycle"}, Names: []string{"edges", "triangles"}, Values: [][]float64{{2, 0}, {3, 1}}}
	if err != nil || !reflect.DeepEqual(both, want) {
		t.Errorf("merged: %+v, %v", both, err)
	}
	if d := both.Describe(); d != "label (cycle, path), edges, triangles" {
		t.Errorf("Describe: %q", d)
	}
	if sub := both.Subset([]int{1}); !reflect.DeepEqual(sub, &ConditionTable{Labels: []string{"cycle"}, Names: []string{"edges", "triangles"}, Values: [][]float64{{3, 1}}}) {
		t.Errorf("subset: %+v", sub)
	}
	c, err := both.Conditions()
	if err != nil || c.Len() != 2 || c.Schema.Describe() != "label (cycle, path), edges (trained on [2, 3]), triangles (trained on [0, 1])" {
		t.Errorf("conditions: %+v, %v", c, err)
	}
	var none *ConditionTable
	if got, err := none.Merge(labels); err != nil || got != labels {
		t.Errorf("nil merged: %v, %v", got, err)
	}
	for _, c := range []struct {
		name string
		a, b *ConditionTable
		err  string
	}{
		{"two label sources", labels, labels, "two sources of labels"},
		{"a property twice", props, props, "edges given twice"},
		{"other lengths", labels, &ConditionTable{Labels: []string{"x"}}, "conditions of 2 and of 1 graphs"},
	} {
		if _, err := c.a.Merge(c.b); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
	if _, err := PropertyConditions([]*graph.Graph{path}, []string{"girth"}); err == nil {
		t.Error("an unknown property computed")
	}
	if f := Fraction([]*graph.Graph{path, tri, path}, graph.IsForest); f != 2.0/3 {
		t.Errorf("Fraction of forests %g, want 2/3", f)
	}
	if f := Fraction(nil, graph.IsForest); f != 0 {
		t.Errorf("Fraction of nothing %g", f)
	}
}
