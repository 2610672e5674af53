package vae

import (
	"context"
	"path/filepath"
	"testing"

	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/tensor"
)

func TestReencodeOptions(t *testing.T) {
	undirected := &Model{Cfg: Config{EdgeClasses: 1}}
	directed := &Model{Cfg: Config{EdgeClasses: 1, Directed: true}}
	for _, c := range []struct {
		name string
		m    *Model
		opts []DecodeOption
		ok   bool
	}{
		{"off", undirected, nil, true},
		{"on", undirected, []DecodeOption{WithReencode(8, 4)}, true},
		{"no candidates", undirected, []DecodeOption{WithReencode(0, 4)}, false},
		{"no rounds", undirected, []DecodeOption{WithReencode(8, 0)}, false},
		{"directed", directed, []DecodeOption{WithReencode(8, 4)}, false},
		{"with a constraint", undirected, []DecodeOption{WithReencode(8, 4), WithEdgeConstraint(graph.IsForest)}, false},
		{"with spanning trees", undirected, []DecodeOption{WithReencode(8, 4), WithSpanningTree()}, false},
		{"with connectivity", undirected, []DecodeOption{WithConnected(), WithReencode(8, 4)}, false},
	} {
		_, err := c.m.decodeOptions(c.opts)
		if (err == nil) != c.ok {
			t.Errorf("%s: error %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// TestUncertainPairs checks the candidates' order: by the distance of each
// pair's confidence (under the rule) from the margin.
func TestUncertainPairs(t *testing.T) {
	m := &Model{Cfg: Config{EdgeClasses: 1}}
	// Edge-minus-no-edge scores of the ordered pairs; the rest -5.
	dec := scoredDecode(4, map[[2]int]float64{
		{0, 1}: 3, {1, 0}: 1, // or: 3, and: 1
		{0, 2}: 0.6, {2, 0}: 0.6, // 0.6
		{1, 2}: -0.2, {2, 1}: 2, // or: 2, and: -0.2
		{2, 3}: 1.5, {3, 2}: 1.5, // 1.5
	}, -5)
	lg := dec.EdgeLogits.Value.To(tensor.Float64).Data64()
	for _, c := range []struct {
		rule   EdgeRule
		margin float64
		want   [][2]int
	}{
		{EitherDirection, 0.75, [][2]int{{0, 2}, {2, 3}, {1, 2}, {0, 1}}},
		{BothDirections, 0.75, [][2]int{{0, 2}, {0, 1}, {2, 3}, {1, 2}}},
		{EitherDirection, 0, [][2]int{{0, 2}, {2, 3}, {1, 2}, {0, 1}}},
	} {
		got := m.uncertainPairs(lg, 0, 4, 4, 4, decodeOptions{rule: c.rule, margin: c.margin})
		for x, w := range c.want {
			if got[x].i != int32(w[0]) || got[x].j != int32(w[1]) {
				t.Errorf("rule %v margin %v: candidates %v, want %v first", c.rule, c.margin, got, c.want)
				break
			}
		}
	}
}

// TestReencodeShipped decodes planar graphs' own latents with the shipped
// planar LG-VAE, with and without the re-encoding search: the search never
// ends farther from the latents than the plain decoding, and decodes more
// of the graphs exactly (the shipped model decodes about 84% of test graphs
// exactly, 98% with the search).
func TestReencodeShipped(t *testing.T) {
	m, err := Load(filepath.Join("..", "pretrained", "planar", "vae.safetensors"))
	if err != nil {
		t.Skipf("no shipped planar LG-VAE: %v", err)
	}
	ctx := context.Background()
	gs := datasets.Planar(64, 48, 11)
	lat, err := m.EncodeGraphs(ctx, gs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddLatentNoise(lat, 0.01, 3); err != nil {
		t.Fatal(err)
	}
	plain, err := m.DecodeGraphs(ctx, lat)
	if err != nil {
		t.Fatal(err)
	}
	searched, err := m.DecodeGraphs(ctx, lat, WithReencode(8, 8))
	if err != nil {
		t.Fatal(err)
	}
	dist := func(ds []*graph.Graph) []float64 {
		enc, err := m.EncodeGraphs(ctx, ds, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float64, len(ds))
		for i, e := range enc {
			a, b := e.To(tensor.Float64).Data64(), lat[i].To(tensor.Float64).Data64()
			for x := range a {
				out[i] += (a[x] - b[x]) * (a[x] - b[x])
			}
		}
		return out
	}
	dp, ds := dist(plain), dist(searched)
	exactPlain, exactSearched := 0, 0
	for i, g := range gs {
		if ds[i] > dp[i] {
			t.Errorf("graph %d: the search ends at distance %g, the plain decoding is at %g", i, ds[i], dp[i])
		}
		if graph.FormatGraph6(plain[i]) == graph.FormatGraph6(g) {
			exactPlain++
		}
		if graph.FormatGraph6(searched[i]) == graph.FormatGraph6(g) {
			exactSearched++
		}
	}
	t.Logf("exact: %d plain, %d with the search, of %d", exactPlain, exactSearched, len(gs))
	if exactPlain == len(gs) {
		t.Fatal("every plain decoding is exact: nothing to compare")
	}
	if exactSearched <= exactPlain {
		t.Errorf("exact decodings: %d with the search, %d without", exactSearched, exactPlain)
	}
}
