package cond

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestNewSet(t *testing.T) {
	c, err := NewSet([]string{"tree", "planar", "tree", "grid"}, []string{"edges", "k"},
		[][]float64{{10, 1}, {20, 1}, {30, 1}, {40, 1}})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Schema
	if !slices.Equal(s.Labels, []string{"grid", "planar", "tree"}) || !slices.Equal(c.Labels, []int{2, 1, 2, 0}) {
		t.Errorf("labels %v, indices %v", s.Labels, c.Labels)
	}
	want := []Property{{Name: "edges", Mean: 25, Std: math.Sqrt(125), Min: 10, Max: 40}, {Name: "k", Mean: 1, Std: 1, Min: 1, Max: 1}}
	if !slices.Equal(s.Properties, want) {
		t.Errorf("properties %+v, want %+v", s.Properties, want)
	}
	if got := c.Value(2); got.Label != "tree" || !slices.Equal(got.Props, []float64{30, 1}) {
		t.Errorf("Value(2) = %+v", got)
	}
	if lo, hi := s.Range(0); lo != 10-0.5*math.Sqrt(125) || hi != 40+0.5*math.Sqrt(125) {
		t.Errorf("range of edges [%g, %g]", lo, hi)
	}
	if c, err := NewSet(nil, []string{"x"}, [][]float64{{1}, {3}}); err != nil || c.Labels != nil || c.Len() != 2 {
		t.Errorf("properties only: %+v, %v", c, err)
	}
	if c, err := NewSet([]string{"a", "b"}, nil, nil); err != nil || c.Props != nil || c.Len() != 2 {
		t.Errorf("labels only: %+v, %v", c, err)
	}
	for _, tc := range []struct {
		name   string
		labels []string
		names  []string
		props  [][]float64
		want   string
	}{
		{"nothing", nil, nil, nil, "needs a label or a property"},
		{"missing label", []string{"a", ""}, nil, nil, "no label"},
		{"label with a comma", []string{"a,b"}, nil, nil, "label name"},
		{"lengths", []string{"a", "b"}, []string{"x"}, [][]float64{{1}}, "2 labels and 1 property"},
		{"short row", nil, []string{"x", "y"}, [][]float64{{1, 2}, {3}}, "graph 1 has 1 property values"},
		{"NaN", nil, []string{"x"}, [][]float64{{math.NaN()}}, "not a finite number"},
		{"reserved name", nil, []string{"label"}, [][]float64{{1}}, "reserved"},
		{"twice", nil, []string{"x", "x"}, [][]float64{{1, 2}}, "given twice"},
		{"no values", nil, []string{"x"}, [][]float64{}, "no property values"},
	} {
		if _, err := NewSet(tc.labels, tc.names, tc.props); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

// testSchema has two labels and two properties: x in [0, 10] (std 2)
// and y in [-1, 1] (std 0.5), with tolerance 0.5 std.
func testSchema() *Schema {
	return &Schema{Labels: []string{"a", "b"}, Properties: []Property{
		{Name: "x", Mean: 5, Std: 2, Min: 0, Max: 10}, {Name: "y", Std: 0.5, Min: -1, Max: 1}}}
}

func TestParse(t *testing.T) {
	s := testSchema()
	for _, tc := range []struct {
		text string
		want Value
		err  string
	}{
		{"label=a,x=3,y=0.5", Value{Label: "a", Props: []float64{3, 0.5}}, ""},
		{" y = -1 , label = b , x = 10.9 ", Value{Label: "b", Props: []float64{10.9, -1}}, ""},
		{"null", Value{}, ""},
		{"label=c,x=1,y=0", Value{}, "unknown label"},
		{"label=a,x=1", Value{}, "lacks the properties y"},
		{"x=1,y=0", Value{}, "no label"},
		{"label=a", Value{}, "no properties"},
		{"label=a,x=12,y=0", Value{}, "outside the range"},
		{"label=a,x=one,y=0", Value{}, "not a number"},
		{"label=a,z=1,x=1,y=0", Value{}, "unknown key"},
		{"label=a,prop=1,y=0", Value{}, "unknown key"}, // prop= only for a single property
		{"label=a,x=1,x=2,y=0", Value{}, "twice"},
		{"label=a,label=b,x=1,y=0", Value{}, "two labels"},
		{"label", Value{}, "not key=value"},
		{"", Value{}, "not key=value"},
	} {
		got, err := s.Parse(tc.text)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", tc.text, err)
		case tc.err == "" && (got.Label != tc.want.Label || !slices.Equal(got.Props, tc.want.Props)):
			t.Errorf("Parse(%q) = %+v, want %+v", tc.text, got, tc.want)
		case tc.err == "" && s.Format(got) != strings.ReplaceAll(tc.text, " ", "") && tc.text[0] != ' ':
			t.Errorf("Format(Parse(%q)) = %q", tc.text, s.Format(got))
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q): error %v, want one mentioning %q", tc.text, err, tc.err)
		}
	}
	one := &Schema{Properties: []Property{{Name: "edges", Mean: 100, Std: 10, Min: 80, Max: 130}}}
	if c, err := one.Parse("prop=90"); err != nil || !slices.Equal(c.Props, []float64{90}) {
		t.Errorf("prop=90 with one property: %+v, %v", c, err)
	}
	var none *Schema
	if _, err := none.Parse("label=a"); err == nil || !strings.Contains(err.Error(), "unconditional") {
		t.Errorf("an unconditional model's Parse: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Schema)
		want string
	}{
		{"good", func(*Schema) {}, ""},
		{"empty", func(c *Schema) { c.Labels, c.Properties = nil, nil }, "needs a label or a property"},
		{"label twice", func(c *Schema) { c.Labels = []string{"a", "a"} }, "twice"},
		{"empty label", func(c *Schema) { c.Labels = []string{""} }, "label name"},
		{"zero std", func(c *Schema) { c.Properties[0].Std = 0 }, "std 0"},
		{"min above max", func(c *Schema) { c.Properties[1].Min = 2 }, "range"},
		{"NaN mean", func(c *Schema) { c.Properties[0].Mean = math.NaN() }, "mean NaN"},
		{"negative tolerance", func(c *Schema) { c.Tolerance = -1 }, "tolerance"},
		{"property with =", func(c *Schema) { c.Properties[0].Name = "a=b" }, "property name"},
	} {
		s := testSchema()
		tc.edit(s)
		err := s.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestSizes(t *testing.T) {
	// Four "small" graphs of 10-13 nodes with few edges, four "big" of
	// 30-33 with many; a label splits them the other way.
	nodes := []int{10, 11, 12, 13, 30, 31, 32, 33}
	edges := [][]float64{{9}, {10}, {11}, {12}, {40}, {41}, {42}, {43}}
	labels := []string{"a", "b", "a", "b", "a", "b", "a", "b"}
	c, err := NewSet(labels, []string{"edges"}, edges)
	if err != nil {
		t.Fatal(err)
	}
	z, err := NewSizes(c, nodes)
	if err != nil {
		t.Fatal(err)
	}
	// Neighbours(4) = 2: of label a's graphs (10, 12, 30, 32 nodes with
	// 9, 11, 40, 42 edges) the two nearest.
	for _, tc := range []struct {
		label string
		edges float64
		want  []int
	}{
		{"a", 10, []int{10, 12}}, // 9 and 11 tie at distance 1: both
		{"a", 12, []int{12, 10}},
		{"a", 41, []int{30, 32}},
		{"a", 43, []int{32, 30}},
		{"b", 9, []int{11, 13}},
		{"b", 44, []int{33, 31}},
	} {
		if got := z.Candidates(c.Schema, Value{Label: tc.label, Props: []float64{tc.edges}}); !slices.Equal(got, tc.want) {
			t.Errorf("label %s, edges %g: candidates %v, want %v", tc.label, tc.edges, got, tc.want)
		}
	}
	byLabel, _ := NewSet(labels, nil, nil)
	zl, err := NewSizes(byLabel, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if got := zl.Candidates(byLabel.Schema, Value{Label: "b"}); !slices.Equal(got, []int{11, 13, 31, 33}) {
		t.Errorf("label b: candidates %v", got)
	}
	for i, n := range []int{1, 2, 4, 5, 100, 101} {
		if got, want := Neighbours(n), []int{1, 2, 2, 3, 10, 11}[i]; got != want {
			t.Errorf("Neighbours(%d) = %d, want %d", n, got, want)
		}
	}
	// A large set is thinned evenly to at most MaxSizes graphs.
	big := make([]int, 3*MaxSizes+5)
	props := make([][]float64, len(big))
	for i := range big {
		big[i], props[i] = 1+i%50, []float64{float64(i % 50)}
	}
	cb, _ := NewSet(nil, []string{"x"}, props)
	zb, err := NewSizes(cb, big)
	if err != nil || len(zb.Nodes) > MaxSizes || len(zb.Nodes) < MaxSizes*3/4 {
		t.Fatalf("thinned table of %d graphs, %v", len(zb.Nodes), err)
	}
	for _, tc := range []struct {
		name  string
		z     *Sizes
		nodes []int
	}{
		{"no graphs", &Sizes{}, nil},
		{"zero nodes", &Sizes{Nodes: []int{0, 3}, Labels: []int{0, 1}}, nil},
		{"labels missing", &Sizes{Nodes: []int{3, 3}}, nil},
		{"label out of range", &Sizes{Nodes: []int{3, 3}, Labels: []int{0, 2}}, nil},
	} {
		if err := tc.z.Check(byLabel.Schema); err == nil {
			t.Errorf("%s: Check accepted %+v", tc.name, tc.z)
		}
	}
	if _, err := NewSizes(c, nodes[:5]); err == nil {
		t.Error("NewSizes accepted 5 node counts for 8 conditions")
	}
}
