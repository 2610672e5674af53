package graph

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// checkGraph verifies the invariants every Graph must hold: sorted,
// in-range, self-loop-free adjacency lists, symmetric lists for an
// undirected graph and matching in-lists for a directed one, the edge count
// m, edge labels only on edges and non-zero, and NodeLabels nil or one per
// node.
func checkGraph(g *Graph) error {
	n := len(g.out)
	if g.directed != (g.in != nil) && n > 0 {
		return fmt.Errorf("directed=%t but in-lists present=%t", g.directed, g.in != nil)
	}
	if g.directed && len(g.in) != n {
		return fmt.Errorf("%d out-lists, %d in-lists", n, len(g.in))
	}
	total := 0
	for u, nb := range g.out {
		for i, v := range nb {
			if v < 0 || v >= n {
				return fmt.Errorf("node %d: neighbour %d out of range [0, %d)", u, v, n)
			}
			if v == u {
				return fmt.Errorf("self-loop at %d", u)
			}
			if i > 0 && nb[i-1] >= v {
				return fmt.Errorf("node %d: neighbours %v not strictly increasing", u, nb)
			}
			if g.directed {
				if _, ok := slices.BinarySearch(g.in[v], u); !ok {
					return fmt.Errorf("edge %d -> %d missing from the in-list of %d", u, v, v)
				}
			} else if _, ok := slices.BinarySearch(g.out[v], u); !ok {
				return fmt.Errorf("edge %d - %d not symmetric", u, v)
			}
		}
		total += len(nb)
	}
	if g.directed {
		in := 0
		for v, nb := range g.in {
			in += len(nb)
			for i, u := range nb {
				if u < 0 || u >= n || (i > 0 && nb[i-1] >= u) {
					return fmt.Errorf("in-list of %d is %v", v, nb)
				}
			}
		}
		if in != total {
			return fmt.Errorf("%d out-entries, %d in-entries", total, in)
		}
	} else {
		total /= 2
	}
	if total != g.m {
		return fmt.Errorf("m = %d, lists hold %d edges", g.m, total)
	}
	for k, l := range g.edgeLabels {
		if l == 0 {
			return fmt.Errorf("zero label stored for %v", k)
		}
		if !g.directed && k[0] > k[1] {
			return fmt.Errorf("label key %v not normalised", k)
		}
		if !g.HasEdge(k[0], k[1]) {
			return fmt.Errorf("label on non-edge %v", k)
		}
	}
	if g.NodeLabels != nil && len(g.NodeLabels) != n {
		return fmt.Errorf("%d node labels for %d nodes", len(g.NodeLabels), n)
	}
	return nil
}

// equalGraphs reports how two graphs differ (direction, node and edge
// sets, edge and node labels), or nil if they are equal.
func equalGraphs(a, b *Graph) error {
	if a.Directed() != b.Directed() || a.N() != b.N() || a.M() != b.M() {
		return fmt.Errorf("%v vs %v", a, b)
	}
	if ea, eb := a.Edges(), b.Edges(); !slices.Equal(ea, eb) {
		return fmt.Errorf("edges %v vs %v", ea, eb)
	}
	if !slices.Equal(a.NodeLabels, b.NodeLabels) {
		return fmt.Errorf("node labels %v vs %v", a.NodeLabels, b.NodeLabels)
	}
	return nil
}

// g6Bit reports bit k of graph6 data bytes (6 bits per byte, most
// significant first).
func g6Bit(data string, k int) bool {
	return (data[k/6]-63)>>(5-k%6)&1 == 1
}

var graph6Seeds = []string{
	"", "?", "@", "A_", "A?", "Bg", "Bw", "C~", "D??", "DQc", "IheA@GUAo", "G?????",
	">>graph6<<Bg\n", "Bg\r\n", "~?@?", "~?@?" + strings.Repeat("?", 316), "~~??????",
	"~~~~~~~~", "&C~", ":Fa@x^", "C\x01", "C~~", "A`",
}

// FuzzParseGraph6 checks that ParseGraph6 never panics, that every
// accepted graph holds the Graph invariants and has exactly the edges
// whose bits are set (checked pair by pair against formats.txt's bit
// order, independently of the parser's incremental walk), that it writes
// back to a string that parses to the same graph, and that a string in
// canonical form (short size field, zero padding) is reproduced byte for
// byte.
func FuzzParseGraph6(f *testing.F) {
	for _, s := range graph6Seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		g, err := ParseGraph6(line)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "graph6: ") {
				t.Fatalf("error %q does not name the format", err)
			}
			return
		}
		if err := checkGraph(g); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if g.Directed() {
			t.Fatalf("%q: graph6 gave a directed graph", line)
		}
		s := trimLine(line)
		n, used, err := parseN(s)
		if err != nil || n != g.N() {
			t.Fatalf("%q: parseN gives %d, %v; graph has %d nodes", line, n, err, g.N())
		}
		data := s[used:]
		k := 0
		for j := 1; j < n; j++ {
			for i := 0; i < j; i++ {
				if g6Bit(data, k) != g.HasEdge(i, j) {
					t.Fatalf("%q: bit %d (pair %d,%d) is %t, edge present %t", line, k, i, j, g6Bit(data, k), g.HasEdge(i, j))
				}
				k++
			}
		}
		enc := FormatGraph6(g)
		h, err := ParseGraph6(enc)
		if err != nil {
			t.Fatalf("%q re-encoded as %q: %v", line, enc, err)
		}
		if err := equalGraphs(g, h); err != nil {
			t.Fatalf("%q -> %q: %v", line, enc, err)
		}
		if canonical := string(appendN(nil, n)) == s[:used] && zeroPadding(data, n*(n-1)/2); canonical && enc != s {
			t.Fatalf("canonical %q re-encoded as %q", s, enc)
		}
	})
}

// zeroPadding reports whether the bits of data after the first nbits are
// all zero.
func zeroPadding(data string, nbits int) bool {
	for k := nbits; k < 6*len(data); k++ {
		if g6Bit(data, k) {
			return false
		}
	}
	return true
}

// FuzzParseDigraph6 is FuzzParseGraph6 for digraph6: the edges are
// checked against the row-major bit order, and a set diagonal bit must be
// an error.
func FuzzParseDigraph6(f *testing.F) {
	for _, s := range []string{
		"&", "&?", "&@", "&A_", "&A?", "&AO", "&BP_", "&BO?", "&C~~~", "&DI?AO?",
		">>digraph6<<&BP_\n", "&~?@?", "&~~??????", "&C\x01", "C~", "&A`",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		g, err := ParseDigraph6(line)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "digraph6: ") {
				t.Fatalf("error %q does not name the format", err)
			}
			return
		}
		if err := checkGraph(g); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if !g.Directed() {
			t.Fatalf("%q: digraph6 gave an undirected graph", line)
		}
		s := trimLine(line)[1:]
		n, used, err := parseN(s)
		if err != nil || n != g.N() {
			t.Fatalf("%q: parseN gives %d, %v; graph has %d nodes", line, n, err, g.N())
		}
		data := s[used:]
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				bit := g6Bit(data, i*n+j)
				if i == j && bit {
					t.Fatalf("%q: diagonal bit %d accepted", line, i)
				}
				if bit != g.HasEdge(i, j) {
					t.Fatalf("%q: bit (%d,%d) is %t, edge present %t", line, i, j, bit, g.HasEdge(i, j))
				}
			}
		}
		enc := FormatDigraph6(g)
		h, err := ParseDigraph6(enc)
		if err != nil {
			t.Fatalf("%q re-encoded as %q: %v", line, enc, err)
		}
		if err := equalGraphs(g, h); err != nil {
			t.Fatalf("%q -> %q: %v", line, enc, err)
		}
		if string(appendN(nil, n)) == s[:used] && zeroPadding(data, n*n) && enc != "&"+s {
			t.Fatalf("canonical %q re-encoded as %q", "&"+s, enc)
		}
	})
}

// FuzzParseSparse6 checks that ParseSparse6 never panics, that errors name
// the format, that an accepted graph is undirected and holds the Graph
// invariants, and that it survives FormatSparse6 / ParseSparse6 unchanged,
// the second encoding being the first byte for byte.
func FuzzParseSparse6(f *testing.F) {
	for _, s := range []string{
		":Fa@x^", ":An", ":?", ":@", ":CfV", ":CcJ", ":A_", ":A?", ";Fa@x^", ":", ":F a",
		":~?", ":~~~~~~~~", ">>sparse6<<:Fa@x^\n", ":~?@?" + strings.Repeat("~", 40), ":Cb",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		// The node limit of ParseSparse6 (2^24) still allows half a
		// gigabyte of empty lists per input: fuzz with a small one.
		g, err := parseSparse6(line, 1<<12)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "sparse6: ") {
				t.Fatalf("error %q does not name the format", err)
			}
			return
		}
		if err := checkGraph(g); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if g.Directed() {
			t.Fatalf("%q: sparse6 gave a directed graph", line)
		}
		enc := FormatSparse6(g)
		h, err := ParseSparse6(enc)
		if err != nil {
			t.Fatalf("%q re-encoded as %q: %v", line, enc, err)
		}
		if err := equalGraphs(g, h); err != nil {
			t.Fatalf("%q -> %q: %v", line, enc, err)
		}
		if again := FormatSparse6(h); again != enc {
			t.Fatalf("%q: encodings %q then %q", line, enc, again)
		}
	})
}

// FuzzReadGraphs checks the multi-line reader (graph6, digraph6 and
// sparse6 lines): it never panics, an error names its line, and the graphs it returns are the ones ParseLine gives
// for the non-blank lines, and survive WriteGraphs / ReadGraphs.
func FuzzReadGraphs(f *testing.F) {
	f.Add(">>graph6<<Bg\r\n\nC~\n&BP_\n   \nD??")
	f.Add("Bg\nC~\n\nC~x~\n")
	f.Add(":Fa@x^\n>>sparse6<<:An\n")
	f.Add(":A_\n")
	f.Add("\n\n\n")
	f.Add("A_\n&A_")
	f.Fuzz(func(t *testing.T, in string) {
		lines := strings.Split(in, "\n")
		for _, l := range lines {
			// A few bytes of sparse6 declare up to 2^24 nodes, which
			// WriteGraphs then writes as graph6 of up to 2^47 bytes: keep
			// to graphs the round trip below can afford.
			if s := strings.TrimSpace(trimLine(l)); len(s) > 1 && (s[0] == ':' || s[0] == ';') {
				if n, _, err := parseN(s[1:]); err == nil && n > 1<<10 {
					return
				}
			}
		}
		gs, err := ReadGraphs(strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("error %q does not name the line", err)
			}
			return
		}
		var want []*Graph
		for _, l := range lines {
			if s := strings.TrimSpace(trimLine(l)); s != "" {
				g, err := ParseLine(s)
				if err != nil {
					t.Fatalf("ReadGraphs accepted line %q that ParseLine rejects: %v", l, err)
				}
				want = append(want, g)
			}
		}
		if len(want) != len(gs) {
			t.Fatalf("%d graphs, %d non-blank lines", len(gs), len(want))
		}
		var buf bytes.Buffer
		if err := WriteGraphs(&buf, gs); err != nil {
			t.Fatal(err)
		}
		again, err := ReadGraphs(&buf)
		if err != nil {
			t.Fatalf("re-reading %q: %v", buf.String(), err)
		}
		for i := range gs {
			if err := checkGraph(gs[i]); err != nil {
				t.Fatalf("graph %d: %v", i, err)
			}
			if err := equalGraphs(want[i], gs[i]); err != nil {
				t.Fatalf("graph %d vs ParseLine: %v", i, err)
			}
			if err := equalGraphs(gs[i], again[i]); err != nil {
				t.Fatalf("graph %d round trip: %v", i, err)
			}
		}
	})
}

// FuzzReadEdgeList checks that ReadEdgeList never panics, that errors name
// the line, that an accepted graph holds the Graph invariants and has no
// more edges than the input has lines, and that it survives WriteEdgeList /
// ReadEdgeList (with the header detected and with it required) unchanged,
// edge labels included.
func FuzzReadEdgeList(f *testing.F) {
	for _, s := range []string{
		"# comment\n3 2\n0 1\n1 2 # trailing\n",
		"0 1\n1 2\n",
		"3 1\n0 4\n",
		"5 3\n0 1 0\n1 2 0\n2 3 4\n",
		"4 2\n0 1\n",
		"0 1\n1 1\n",
		"0 1\n1 x\n",
		"0 1 2 3\n",
		"1 0\n2 0\n",
		"0 1 7\n1 0 0\n",
		"\t2\t1\r\n0 1\r\n",
		"9999999999 0\n",
		"0 -1\n",
		"0 0\n",
		"",
	} {
		for h := range 3 {
			f.Add([]byte(s), false, uint8(h), false)
		}
		f.Add([]byte(s), true, uint8(0), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, directed bool, header uint8, drop bool) {
		opt := EdgeListOptions{Directed: directed, Header: EdgeListHeader(header % 3), DropSelfLoops: drop, MaxNodes: 1 << 12}
		g, err := ReadEdgeList(bytes.NewReader(in), opt)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "edge list line ") && !strings.HasPrefix(err.Error(), "edge list: missing header") {
				t.Fatalf("error %q does not name the line", err)
			}
			return
		}
		if err := checkGraph(g); err != nil {
			t.Fatal(err)
		}
		if g.Directed() != directed {
			t.Fatalf("directed = %t, asked for %t", g.Directed(), directed)
		}
		if g.N() > opt.MaxNodes {
			t.Fatalf("%d nodes, limit %d", g.N(), opt.MaxNodes)
		}
		if lines := bytes.Count(in, []byte("\n")) + 1; g.M() > lines {
			t.Fatalf("%d edges from %d lines", g.M(), lines)
		}
		var buf bytes.Buffer
		if err := WriteEdgeList(&buf, g); err != nil {
			t.Fatal(err)
		}
		for _, h := range []EdgeListHeader{HeaderAuto, HeaderPresent} {
			again, err := ReadEdgeList(bytes.NewReader(buf.Bytes()), EdgeListOptions{Directed: directed, Header: h, MaxNodes: opt.MaxNodes})
			if err != nil {
				t.Fatalf("re-reading %q: %v", buf.String(), err)
			}
			if err := equalGraphs(g, again); err != nil { // edge labels included
				t.Fatalf("round trip through %q: %v", buf.String(), err)
			}
		}
	})
}

// FuzzReadNodeLink checks that ReadNodeLink never panics, that errors are
// prefixed with the format, that an accepted graph holds the Graph
// invariants, and that WriteNodeLink / ReadNodeLink gives it back with its
// node and edge labels.
func FuzzReadNodeLink(f *testing.F) {
	for _, s := range []string{
		`{"directed": true, "multigraph": false, "graph": {}, "nodes": [{"label": 3, "id": "a"}, {"label": 1, "id": "b"}, {"label": 2, "id": 7}], "edges": [{"label": 2, "source": "a", "target": "b"}, {"source": 7, "target": "a"}]}`,
		`{"directed": false, "multigraph": false, "graph": {}, "nodes": [{"id": 0}, {"id": 1}, {"id": 2}], "links": [{"source": 0, "target": 1}, {"source": 1, "target": 2}]}`,
		`{"multigraph": true, "nodes": []}`,
		`{"nodes": [{"name": 1}]}`,
		`{"nodes": [{"id": 1}, {"id": 1.0}]}`,
		`{"nodes": [{"id": "a"}, {"id": "\u0061"}]}`,
		`{"nodes": [{"id": [1, "x"]}, {"id": {"a": 1}}]}`,
		`{"nodes": [{"id": 1}], "edges": [{"source": 1, "target": 2}]}`,
		`{"nodes": [{"id": 1, "label": "C"}]}`,
		`{"nodes": [{"id": 1}, {"id": 2}], "edges": [{"source": 1, "target": 2}, {"source": 2, "target": 1, "label": 5}]}`,
		`{"nodes": [{"id": 1}], "edges": [{"source": 1, "target": 1}]}`,
		`{"nodes": [{"id": 1e400}]}`,
		`{"nodes": []} {"nodes": []}`,
		`{"nodes": [`,
		`null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		g, err := ReadNodeLink(bytes.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "node-link JSON: ") {
				t.Fatalf("error %q does not name the format", err)
			}
			return
		}
		if err := checkGraph(g); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteNodeLink(&buf, g); err != nil {
			t.Fatal(err)
		}
		again, err := ReadNodeLink(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("re-reading %q: %v", buf.String(), err)
		}
		if err := equalGraphs(g, again); err != nil {
			t.Fatalf("round trip through %q: %v", buf.String(), err)
		}
		if !maps.Equal(g.edgeLabels, again.edgeLabels) {
			t.Fatalf("edge labels %v, after the round trip %v", g.edgeLabels, again.edgeLabels)
		}
	})
}

// TestParserRegressions holds inputs that crashed a reader or were read
// wrongly, found while writing the fuzz targets above and by running them,
// each with the error it must now give ("" = it must parse) and, for some,
// what the graph must be.
func TestParserRegressions(t *testing.T) {
	type result struct {
		directed bool
		n, m     int
	}
	edgeList := func(opt EdgeListOptions) func(string) (*Graph, error) {
		return func(s string) (*Graph, error) { return ReadEdgeList(strings.NewReader(s), opt) }
	}
	nodeLink := func(s string) (*Graph, error) { return ReadNodeLink(strings.NewReader(s)) }
	for _, tc := range []struct {
		name, in string
		read     func(string) (*Graph, error)
		err      string
		want     result
	}{
		// New(max id + 1) with a huge id panicked in makeslice, or tried
		// to allocate gigabytes.
		{"edge list: huge node id", "0 99999999999\n", edgeList(EdgeListOptions{}), "edge list line 1: node 99999999999 is beyond the limit of 16777216 nodes", result{}},
		{"edge list: huge header", "# c\n99999999999 0\n", edgeList(EdgeListOptions{Header: HeaderPresent}), "edge list line 2: header says 99999999999 nodes, more than the limit 16777216", result{}},
		{"edge list: limit set by the caller", "0 1\n2 3\n", edgeList(EdgeListOptions{MaxNodes: 3}), "edge list line 2: node 3 is beyond the limit of 3 nodes", result{}},
		{"edge list: negative id names the field", "0 1\n4 -2\n", edgeList(EdgeListOptions{}), "edge list line 2: second node -2 is negative", result{}},
		{"edge list: labelled line where a header must be", "\n0 1 2\n", edgeList(EdgeListOptions{Header: HeaderPresent}), "edge list line 2: want the header", result{}},
		{"edge list: repeated edge counted once", "3 2\n0 1 5\n1 0 0\n", edgeList(EdgeListOptions{}), "", result{false, 3, 1}},
		// Anything after the object was ignored: a second graph vanished.
		{"node-link: data after the graph", `{"nodes": []} {"nodes": []}`, nodeLink, "node-link JSON: byte 15: data after the graph object", result{}},
		// Keys were matched case-insensitively: Python reads this
		// graph as undirected ("Directed" is not "directed").
		{"node-link: keys are case-sensitive", `{"Directed": true, "nodes": [{"id": 0}, {"id": 1}], "edges": [{"source": 0, "target": 1}]}`, nodeLink, "", result{false, 2, 1}},
		// Ids were compared as JSON text: 1 and 1.0, "a" and "\u0061"
		// were different nodes, which Python takes as one.
		{"node-link: 1 and 1.0 are one id", `{"nodes": [{"id": 1}, {"id": 1.0}]}`, nodeLink, "nodes[1]: duplicate id 1.0 (nodes[0] has it)", result{}},
		{"node-link: escaped strings are one id", `{"nodes": [{"id": "a"}, {"id": "\u0061"}]}`, nodeLink, `nodes[1]: duplicate id "\u0061"`, result{}},
		{"node-link: edge ends matched by value", `{"nodes": [{"id": 10}, {"id": "x"}], "edges": [{"source": 1e1, "target": "\u0078"}]}`, nodeLink, "", result{false, 2, 1}},
		{"node-link: object ids", `{"nodes": [{"id": {"a": 1}}]}`, nodeLink, "objects cannot be node ids", result{}},
		{"node-link: syntax error offset", `{"nodes": [}`, nodeLink, "node-link JSON: byte 12: invalid character", result{}},
		{"node-link: null document", `null`, nodeLink, "the document is null", result{}},
		{"node-link: wrong type", `{"directed": "yes", "nodes": []}`, nodeLink, `node-link JSON: "directed" is "yes", want true or false`, result{}},
		{"sparse6: repeated edge", ":A_", ParseLine, "sparse6: edge 0-1 appears twice", result{}},
		// Found by FuzzParseSparse6: a 46-byte string declaring 10^9 nodes
		// made FromEdges allocate gigabytes and killed the fuzzer.
		{"sparse6: huge node count", ":~~@?~~~~~~~~?~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~", ParseLine, "sparse6: 1090519039 nodes is more than the limit of 16777216", result{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.read(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := (result{g.Directed(), g.N(), g.M()}); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if err := checkGraph(g); err != nil {
				t.Fatal(err)
			}
		})
	}
}
