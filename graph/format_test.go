package graph

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fromEdges(n int, directed bool, edges ...[2]int) *Graph {
	var g *Graph
	if directed {
		g = NewDirected(n)
	} else {
		g = New(n)
	}
	for _, e := range edges {
		g.MustAddEdge(e[0], e[1])
	}
	return g
}

func path(n int) *Graph {
	g := New(n)
	for i := 0; i+1 < n; i++ {
		g.MustAddEdge(i, i+1)
	}
	return g
}

func cycle(n int) *Graph {
	g := path(n)
	g.MustAddEdge(n-1, 0)
	return g
}

func complete(n int) *Graph {
	g := New(n)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			g.MustAddEdge(i, j)
		}
	}
	return g
}

func randomGraph(rng *rand.Rand, n int, p float64, directed bool) *Graph {
	var g *Graph
	if directed {
		g = NewDirected(n)
	} else {
		g = New(n)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j || (!directed && j < i) {
				continue
			}
			if rng.Float64() < p {
				g.MustAddEdge(i, j)
			}
		}
	}
	return g
}

func sameGraph(t *testing.T, want, got *Graph) {
	t.Helper()
	require.Equal(t, want.Directed(), got.Directed())
	require.Equal(t, want.N(), got.N())
	require.Equal(t, want.M(), got.M())
	require.Equal(t, want.Edges(), got.Edges())
	for u := 0; u < want.N(); u++ {
		require.Equal(t, len(want.InNeighbors(u)), len(got.InNeighbors(u)), "in-degree of %d", u)
	}
}

// Expected strings: derived by hand from formats.txt and confirmed with
// networkx 3.6 to_graph6_bytes(G, header=False).
func TestGraph6Known(t *testing.T) {
	petersen := New(10)
	for i := 0; i < 5; i++ {
		petersen.MustAddEdge(i, (i+1)%5)
		petersen.MustAddEdge(i, i+5)
		petersen.MustAddEdge(5+i, 5+(i+2)%5)
	}
	star := New(70)
	for i := 1; i < 70; i++ {
		star.MustAddEdge(0, i)
	}
	tests := []struct {
		name string
		g    *Graph
		want string
	}{
		{"empty0", New(0), "?"},
		{"single", New(1), "@"},
		{"P3", path(3), "Bg"},     // bits 1 0 1 -> 101000 = 40 -> 'g'
		{"P4", path(4), "Ch"},     // bits 1 0 1 0 0 1 -> 41 -> 'h'
		{"K4", complete(4), "C~"}, // six ones
		{"E5", New(5), "D??"},
		{"petersen", petersen, "IheA@GUAo"},
		{"C63", cycle(63), "~??~hCGGC@?G?_@?@??_?G?@??C??G??G??C??@???G???_??@???@????_???G???@????C????G????G????C????@?????G?????_????@?????@??????_?????G?????@??????C??????G??????G??????C??????@???????G???????_??????@???????@????????_???????G???????@????????C????????G????????G????????C????????@?????????G?????????_????????@?????????@??????????o?????????G"},
		{"star70", star, "~?@EsaCCA?_C?O?_?_?O?C??_?A??C??C??A???_??C???O???_???_???O???C????_???A????C????C????A?????_????C?????O?????_?????_?????O?????C??????_?????A??????C??????C??????A???????_??????C???????O???????_???????_???????O???????C????????_???????A????????C????????C????????A?????????_????????C?????????O?????????_?????????_?????????O?????????C??????????_?????????A??????????C??????????C??????????A???????????_???????????"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, FormatGraph6(tc.g))
			g, err := ParseGraph6(tc.want + "\n")
			require.NoError(t, err)
			sameGraph(t, tc.g, g)
		})
	}
}

func TestDigraph6Known(t *testing.T) {
	tests := []struct {
		name string
		g    *Graph
		want string
	}{
		// rows 010 001 100 + pad -> 010001 100000 -> 'P' '_'
		{"cycle3", fromEdges(3, true, [2]int{0, 1}, [2]int{1, 2}, [2]int{2, 0}), "&BP_"},
		// the example in formats.txt
		{"formats.txt", fromEdges(5, true, [2]int{0, 2}, [2]int{0, 4}, [2]int{3, 1}, [2]int{3, 4}), "&DI?AO?"},
		{"empty0", NewDirected(0), "&?"},
		{"empty2", NewDirected(2), "&A?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, FormatDigraph6(tc.g))
			g, err := ParseDigraph6(tc.want)
			require.NoError(t, err)
			sameGraph(t, tc.g, g)
			g, err = ParseLine(tc.want)
			require.NoError(t, err)
			sameGraph(t, tc.g, g)
		})
	}
}

func TestGraph6SizeField(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{
		{0, "?"}, {62, "}"}, {63, "~??~"}, {64, "~?@?"}, {258047, "~}~~"},
		{258048, "~~???~??"}, {maxParseN, "~~A?????"},
	}
	for _, tc := range tests {
		got := string(appendN(nil, tc.n))
		assert.Equal(t, tc.want, got, "N(%d)", tc.n)
		n, used, err := parseN(got)
		require.NoError(t, err)
		assert.Equal(t, tc.n, n)
		assert.Equal(t, len(got), used)
	}
}

func TestGraph6RoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := rng.IntN(90)
		directed := trial%2 == 1
		g := randomGraph(rng, n, rng.Float64(), directed)
		var s string
		if directed {
			s = FormatDigraph6(g)
		} else {
			s = FormatGraph6(g)
		}
		h, err := ParseLine(s)
		require.NoError(t, err, s)
		sameGraph(t, g, h)
	}
}

func TestGraph6Errors(t *testing.T) {
	tests := []struct {
		line, want string
	}{
		{"C~~", "4 nodes need 1 data bytes (6 bits), got 2"},
		{"D?", "5 nodes need 2 data bytes"},
		{"C\x01", "byte 2 is '\\x01' (0x01), outside '?'..'~'"},
		{"C !", "byte 2 is ' '"},
		{"~?", "size field truncated"},
		{"&C~", "digraph6 (use ParseDigraph6)"},
		{":Fa@x^", "sparse6"},
		{"", "empty size field"},
		{"~~~~~~~~", "more than this reader supports"},
	}
	for _, tc := range tests {
		_, err := ParseGraph6(tc.line)
		require.Error(t, err, "%q", tc.line)
		assert.Contains(t, err.Error(), tc.want, "%q", tc.line)
	}
	_, err := ParseDigraph6("&BP")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "3 nodes need 2 data bytes")
	_, err = ParseDigraph6("&A_") // bit (0,0) set
	require.Error(t, err)
	assert.Contains(t, err.Error(), "self-loop at node 0")
	_, err = ParseDigraph6("Bg")
	require.Error(t, err)
}

func TestReadGraphs(t *testing.T) {
	in := ">>graph6<<Bg\r\n\nC~\n&BP_\n   \nD??"
	gs, err := ReadGraphs(strings.NewReader(in))
	require.NoError(t, err)
	require.Len(t, gs, 4)
	sameGraph(t, path(3), gs[0])
	sameGraph(t, complete(4), gs[1])
	assert.True(t, gs[2].Directed())
	assert.Equal(t, 3, gs[2].M())
	assert.Equal(t, 5, gs[3].N())

	_, err = ReadGraphs(strings.NewReader("Bg\nC~\n\nC~x~\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 4:")
	assert.Contains(t, err.Error(), "got 3")

	var buf bytes.Buffer
	require.NoError(t, WriteGraphs(&buf, gs))
	assert.Equal(t, "Bg\nC~\n&BP_\nD??\n", buf.String())
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	gs := []*Graph{path(3), complete(4), fromEdges(3, true, [2]int{0, 1})}
	for _, name := range []string{"g.g6", "g.g6.gz"} {
		p := filepath.Join(dir, name)
		require.NoError(t, WriteFile(p, gs))
		got, err := ReadFile(p)
		require.NoError(t, err)
		require.Len(t, got, 3)
		for i := range gs {
			sameGraph(t, gs[i], got[i])
		}
	}
	// A failing writer leaves the old file in place and no temp files.
	p := filepath.Join(dir, "g.g6")
	err := WriteFileAtomic(p, func(w io.Writer) error { return os.ErrInvalid })
	require.Error(t, err)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "Bg\nC~\n&BO?\n", string(b))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, 2)
	_, err = ReadFile(filepath.Join(dir, "missing.g6"))
	require.Error(t, err)
}

func TestEdgeList(t *testing.T) {
	g := New(5) // node 4 isolated: kept through the header
	g.MustAddEdge(0, 1)
	g.MustAddEdge(1, 2)
	require.NoError(t, g.AddLabeledEdge(2, 3, 4))
	var buf bytes.Buffer
	require.NoError(t, WriteEdgeList(&buf, g))
	assert.Equal(t, "5 3\n0 1 0\n1 2 0\n2 3 4\n", buf.String())
	h, err := ReadEdgeList(&buf, EdgeListOptions{})
	require.NoError(t, err)
	sameGraph(t, g, h)

	tests := []struct {
		name, in string
		opt      EdgeListOptions
		n, m     int
		err      string
	}{
		{"header", "# comment\n3 2\n0 1\n1 2 # trailing\n", EdgeListOptions{}, 3, 2, ""},
		{"no header", "0 1\n1 2\n", EdgeListOptions{}, 3, 2, ""},
		{"first line is an edge", "3 1\n0 4\n", EdgeListOptions{}, 5, 2, ""},
		{"forced absent", "3 1\n0 1\n", EdgeListOptions{Header: HeaderAbsent}, 4, 2, ""},
		{"forced present", "4 1\n0 1\n", EdgeListOptions{Header: HeaderPresent}, 4, 1, ""},
		{"header count wrong", "4 2\n0 1\n", EdgeListOptions{Header: HeaderPresent}, 0, 0, "line 1: header says 2 edges, found 1"},
		{"out of range", "2 1\n0 5\n", EdgeListOptions{Header: HeaderPresent}, 0, 0, "line 2: node 5 out of range"},
		{"bad int", "0 1\n1 x\n", EdgeListOptions{}, 0, 0, "line 2: second node \"x\" is not an integer"},
		{"fields", "0 1 2 3\n", EdgeListOptions{}, 0, 0, "line 1: want"},
		{"self-loop", "0 1\n1 1\n", EdgeListOptions{}, 0, 0, "line 2: self-loop at node 1"},
		{"drop self-loop", "0 1\n1 1\n", EdgeListOptions{DropSelfLoops: true}, 2, 1, ""},
		{"directed", "1 0\n2 0\n", EdgeListOptions{Directed: true, Header: HeaderAbsent}, 3, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ReadEdgeList(strings.NewReader(tc.in), tc.opt)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.n, g.N())
			assert.Equal(t, tc.m, g.M())
			assert.Equal(t, tc.opt.Directed, g.Directed())
		})
	}
}

func TestNodeLink(t *testing.T) {
	// Written by networkx 3.6: nx.node_link_data(G) of a DiGraph with
	// string and int ids and integer labels.
	nx := `{"directed": true, "multigraph": false, "graph": {}, "nodes": [{"label": 3, "id": "a"}, {"label": 1, "id": "b"}, {"label": 2, "id": 7}], "edges": [{"label": 2, "source": "a", "target": "b"}, {"source": 7, "target": "a"}]}`
	g, err := ReadNodeLink(strings.NewReader(nx))
	require.NoError(t, err)
	assert.True(t, g.Directed())
	assert.Equal(t, []int{3, 1, 2}, g.NodeLabels)
	assert.Equal(t, []Edge{{0, 1, 2}, {2, 0, 0}}, g.Edges())

	var buf bytes.Buffer
	require.NoError(t, WriteNodeLink(&buf, g))
	assert.Equal(t, `{"directed": true, "multigraph": false, "graph": {}, "nodes": [{"label": 3, "id": 0}, {"label": 1, "id": 1}, {"label": 2, "id": 2}], "edges": [{"label": 2, "source": 0, "target": 1}, {"label": 0, "source": 2, "target": 0}]}`+"\n", buf.String())
	h, err := ReadNodeLink(&buf)
	require.NoError(t, err)
	sameGraph(t, g, h)
	assert.Equal(t, g.NodeLabels, h.NodeLabels)

	// Older networkx: "links".
	old := `{"directed": false, "multigraph": false, "graph": {}, "nodes": [{"id": 0}, {"id": 1}, {"id": 2}], "links": [{"source": 0, "target": 1}, {"source": 1, "target": 2}]}`
	g, err = ReadNodeLink(strings.NewReader(old))
	require.NoError(t, err)
	sameGraph(t, path(3), g)
	assert.Nil(t, g.NodeLabels)

	for _, tc := range []struct{ in, err string }{
		{`{"multigraph": true, "nodes": []}`, "multigraphs"},
		{`{"nodes": [{"name": 1}]}`, `nodes[0] has no "id"`},
		{`{"nodes": [{"id": 1}, {"id": 1}]}`, "nodes[1]: duplicate id 1"},
		{`{"nodes": [{"id": 1}], "edges": [{"source": 1, "target": 2}]}`, "edges[0]: target 2 is not a node id"},
		{`{"nodes": [{"id": 1, "label": "C"}]}`, `nodes[0] (id 1): label "C" is not an integer`},
		{`{"nodes": [{"id": 1}], "edges": [{"source": 1, "target": 1}]}`, "edges[0]: graph: self-loop"},
		{`{"nodes": [`, "node-link JSON"},
	} {
		_, err := ReadNodeLink(strings.NewReader(tc.in))
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), tc.err)
	}
}

func TestBatch(t *testing.T) {
	a := path(3) // 0-1-2
	a.NodeLabels = []int{5, 6, 7}
	b := fromEdges(2, true, [2]int{1, 0})
	require.NoError(t, b.AddLabeledEdge(1, 0, 3))
	bt := NewBatch([]*Graph{a, b, New(0)})
	assert.Equal(t, 3, bt.Len())
	assert.Equal(t, 3, bt.MaxN)
	assert.Equal(t, []int{0, 3, 5, 5}, bt.NodeOffset)
	assert.Equal(t, []int32{0, 0, 0, 1, 1}, bt.NodeGraph)
	assert.Equal(t, []int{0, 4, 5, 5}, bt.EdgeOffset)
	assert.Equal(t, []int32{0, 1, 1, 2, 4}, bt.Src)
	assert.Equal(t, []int32{1, 0, 2, 1, 3}, bt.Dst)
	assert.Equal(t, []int32{0, 0, 0, 0, 3}, bt.EdgeLabels)
	assert.Equal(t, []int32{5, 6, 7, 0, 0}, bt.NodeLabels)
	assert.Equal(t, 4, bt.PaddedRow(4))
	assert.Equal(t, []float32{1, 1, 1, 1, 1, 0, 0, 0, 0}, bt.Mask(nil))

	x := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10} // 5 nodes × 2
	p := bt.Pad(nil, x, 2)
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0, 0, 0, 0, 0, 0, 0}, p)
	assert.Equal(t, x, bt.Unpad(nil, p, 2))

	adj := bt.DenseAdjacency(nil)
	want := make([]float32, 27)
	want[0*3+1], want[1*3+0], want[1*3+2], want[2*3+1] = 1, 1, 1, 1
	want[9+1*3+0] = 1
	assert.Equal(t, want, adj)
	cls := bt.DenseEdgeClasses(nil)
	assert.Equal(t, int32(4), cls[9+3])
	assert.Equal(t, int32(1), cls[1])
	assert.Equal(t, int32(0), cls[9+1])

	// dst reuse: a dirty buffer is cleared.
	dirty := slices.Repeat([]float32{9}, 30)
	assert.Equal(t, want, bt.DenseAdjacency(dirty))
	assert.Panics(t, func() { bt.Pad(nil, x[:3], 2) })
}
