package datasets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"lgflow/graph"
)

// checkGraph verifies, through the exported API, the invariants of a
// parsed graph: sorted in-range neighbour lists without self-loops, in-
// and out-lists that agree, an edge count that matches, and node labels
// nil or one per node.
func checkGraph(g *graph.Graph) error {
	n, m := g.N(), 0
	for u := range n {
		out := g.Neighbors(u)
		for i, v := range out {
			if v < 0 || v >= n || v == u || (i > 0 && out[i-1] >= v) {
				return fmt.Errorf("node %d: neighbours %v", u, out)
			}
			if !slices.Contains(g.InNeighbors(v), u) {
				return fmt.Errorf("edge %d -> %d missing from the in-list of %d", u, v, v)
			}
		}
		m += len(out)
	}
	if !g.Directed() {
		m /= 2
	}
	if m != g.M() {
		return fmt.Errorf("M() = %d, lists hold %d edges", g.M(), m)
	}
	if g.NodeLabels != nil && len(g.NodeLabels) != n {
		return fmt.Errorf("%d node labels for %d nodes", len(g.NodeLabels), n)
	}
	return nil
}

// tpuRecord is the oracle's view of a TPU Tile line.
type tpuRecord struct {
	NumNodes int   `json:"num_nodes"`
	NodeType []int `json:"node_type"`
	Src      []int `json:"src"`
	Dst      []int `json:"dst"`
}

// exactRecord decodes a TPU Tile line matching keys exactly, as Python
// does (encoding/json alone would also take "srC" for "src").
func exactRecord(line []byte) (tpuRecord, error) {
	var r tpuRecord
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return r, err
	}
	for key, dst := range map[string]any{"num_nodes": &r.NumNodes, "node_type": &r.NodeType, "src": &r.Src, "dst": &r.Dst} {
		if raw, ok := obj[key]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return r, fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	return r, nil
}

var tpuSeeds = []string{
	`{"num_nodes":2,"node_type":[1,2],"src":[0],"dst":[1],"y":1.5}`,
	`{"num_nodes":4,"node_type":[18,45,29,0],"src":[0,0,1,2],"dst":[1,2,3,3],"y":2.08}` + "\n" + `{"num_nodes":2,"node_type":[10,29],"src":[0],"dst":[1],"y":1.37}` + "\n",
	`{"num_nodes":0,"node_type":[],"src":[],"dst":[]}`,
	`{"num_nodes":2,"node_type":[1,2],"src":[0],"dst":[1]}` + "\n" + `{"num_nodes":2,"node_type":[1],"src":[],"dst":[]}`,
	`{"num_nodes":2,"node_type":[1,47],"src":[],"dst":[]}`,
	`{"num_nodes":2,"node_type":[1,2],"src":[0],"dst":[2]}`,
	`{"num_nodes":3,"node_type":[1,2,3],"src":[0,1,2],"dst":[1,2,0]}`,
	`{"num_nodes":2,"node_type":[1,2],"src":[0,0],"dst":[1,1]}`,
	`{"num_nodes":2,"node_type":[1,2],"src":[1],"dst":[1]}`,
	`{"num_nodes":-1,"node_type":[],"src":[],"dst":[]}`,
	"\r\n\n" + `{"node_type":[]}`,
	`{"num_nodes":2,`,
	`{"num_nodes":"2"}`,
	`{"num_nodes":2,"node_type":null,"src":[0],"dst":[1]} x`,
}

// FuzzReadTPUTile checks that ReadTPUTile never panics, that every error
// names its line, and that an accepted file gives one valid DAG per
// non-blank line whose nodes, labels and edges are exactly the line's
// num_nodes, node_type and src/dst pairs, and which write back to JSON
// lines that read to the same graphs.
func FuzzReadTPUTile(f *testing.F) {
	for _, s := range tpuSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		gs, err := ReadTPUTile(bytes.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("error %q does not name the line", err)
			}
			return
		}
		var recs []tpuRecord
		for _, line := range bytes.Split(in, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			r, err := exactRecord(line)
			if err != nil {
				t.Fatalf("accepted line %q: %v", line, err)
			}
			recs = append(recs, r)
		}
		if len(recs) != len(gs) {
			t.Fatalf("%d graphs from %d non-blank lines", len(gs), len(recs))
		}
		var buf bytes.Buffer
		for i, g := range gs {
			r := recs[i]
			if err := checkGraph(g); err != nil {
				t.Fatalf("graph %d: %v", i, err)
			}
			if !g.Directed() || !graph.IsDAG(g) {
				t.Fatalf("graph %d is not a DAG", i)
			}
			if g.N() != r.NumNodes || !slices.Equal(g.NodeLabels, r.NodeType) && len(r.NodeType) > 0 {
				t.Fatalf("graph %d: %d nodes labelled %v, line says %d, %v", i, g.N(), g.NodeLabels, r.NumNodes, r.NodeType)
			}
			for _, l := range g.NodeLabels {
				if l < 0 || l >= TPUNodeTypes {
					t.Fatalf("graph %d: label %d accepted", i, l)
				}
			}
			if g.M() != len(r.Src) {
				t.Fatalf("graph %d: %d edges from %d src/dst pairs", i, g.M(), len(r.Src))
			}
			for k := range r.Src {
				if !g.HasEdge(r.Src[k], r.Dst[k]) {
					t.Fatalf("graph %d: edge %d -> %d missing", i, r.Src[k], r.Dst[k])
				}
			}
			w := tpuRecord{NumNodes: g.N(), NodeType: g.NodeLabels}
			if w.NodeType == nil {
				w.NodeType = []int{}
			}
			for _, e := range g.Edges() {
				w.Src = append(w.Src, e.From)
				w.Dst = append(w.Dst, e.To)
			}
			b, _ := json.Marshal(w)
			buf.Write(append(b, '\n'))
		}
		again, err := ReadTPUTile(&buf)
		if err != nil {
			t.Fatalf("re-reading %q: %v", buf.String(), err)
		}
		for i := range gs {
			if !slices.Equal(gs[i].Edges(), again[i].Edges()) || gs[i].N() != again[i].N() || !slices.Equal(gs[i].NodeLabels, again[i].NodeLabels) && len(gs[i].NodeLabels) > 0 {
				t.Fatalf("graph %d changed in the round trip", i)
			}
		}
	})
}

// FuzzEgo checks the Ego loader's path from text to ego nets: the
// Citeseer edge-list parser never panics and names the line of every
// error; an accepted graph is undirected, valid and self-loop-free; and
// every net EgoNets cuts from it (at a fuzzed radius and size window) is
// exactly the subgraph induced by the nodes within that radius of its
// centre, numbered in increasing original order, with a size inside the
// window, while the centres it skips have balls outside the window.
func FuzzEgo(f *testing.F) {
	for _, s := range []string{
		"3327 4552\n0 628\n1 158\n",
		"5 4\n0 1\n1 2\n2 3\n3 4\n",
		"6 7\n0 1\n1 2\n2 0\n2 3\n3 4\n4 5\n5 3\n",
		"4 3\n0 0\n1 2\n2 3\n",
		"3 2\n0 1\n",
		"3 1\n0 5\n",
		"0 1 2\n",
		"4000000 0\n",
		"",
	} {
		f.Add([]byte(s), uint8(3), uint8(1), uint8(50))
	}
	f.Fuzz(func(t *testing.T, in []byte, radius, minN, maxN uint8) {
		g, err := parseCiteseer(bytes.NewReader(in), 1<<10)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "edge list line ") && !strings.HasPrefix(err.Error(), "edge list: ") {
				t.Fatalf("error %q does not name the line", err)
			}
			return
		}
		if g.Directed() {
			t.Fatal("Citeseer graph is directed")
		}
		if err := checkGraph(g); err != nil {
			t.Fatal(err)
		}
		r := int(radius % 5)
		lo, hi := int(minN), int(maxN)
		centres := make([]int, g.N())
		for i := range centres {
			centres[i] = i
		}
		nets, kept := EgoNets(g, centres, r, lo, hi)
		if len(nets) != len(kept) {
			t.Fatalf("%d nets, %d centres", len(nets), len(kept))
		}
		k := 0
		for _, c := range centres {
			ball := bfsBall(g, c, r)
			inWindow := len(ball) >= lo && len(ball) <= hi
			if k < len(kept) && kept[k] == c {
				if !inWindow {
					t.Fatalf("centre %d kept with %d nodes, window [%d, %d]", c, len(ball), lo, hi)
				}
				if err := isInduced(g, nets[k], ball); err != nil {
					t.Fatalf("net of %d: %v", c, err)
				}
				k++
			} else if inWindow {
				t.Fatalf("centre %d skipped with %d nodes, window [%d, %d]", c, len(ball), lo, hi)
			}
		}
		if k != len(kept) {
			t.Fatalf("kept centres %v not in increasing order", kept)
		}
		_ = EgoFromGraph(g)
	})
}

// bfsBall returns the sorted nodes within distance r of c.
func bfsBall(g *graph.Graph, c, r int) []int {
	dist := map[int]int{c: 0}
	queue := []int{c}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if dist[u] == r {
			continue
		}
		for _, v := range g.Neighbors(u) {
			if _, ok := dist[v]; !ok {
				dist[v] = dist[u] + 1
				queue = append(queue, v)
			}
		}
	}
	ball := make([]int, 0, len(dist))
	for v := range dist {
		ball = append(ball, v)
	}
	slices.Sort(ball)
	return ball
}

// isInduced reports how h differs from the subgraph of g induced by the
// sorted nodes ball, node k of h being ball[k].
func isInduced(g, h *graph.Graph, ball []int) error {
	if h.N() != len(ball) {
		return fmt.Errorf("%d nodes, ball has %d", h.N(), len(ball))
	}
	if err := checkGraph(h); err != nil {
		return err
	}
	for a := range ball {
		for b := a + 1; b < len(ball); b++ {
			if g.HasEdge(ball[a], ball[b]) != h.HasEdge(a, b) {
				return fmt.Errorf("pair %d-%d (originally %d-%d): edge %t in g, %t in the net", a, b, ball[a], ball[b], g.HasEdge(ball[a], ball[b]), h.HasEdge(a, b))
			}
		}
	}
	return nil
}

// TestTPUTileRegressions holds lines that were read wrongly or with an
// error that did not say where, and what must happen now.
func TestTPUTileRegressions(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		err      string // "" = must parse
		edges    int
	}{
		// Keys were matched case-insensitively, so "Src"/"Dst" (which
		// Python's loader ignores) overrode "src"/"dst".
		{"case-sensitive keys", `{"num_nodes":2,"node_type":[1,2],"src":[],"dst":[],"Src":[0],"Dst":[1]}`, "", 0},
		{"upper-case num_nodes", `{"NUM_NODES":2,"node_type":[1,2],"src":[],"dst":[]}`, `line 1: missing "num_nodes"`, 0},
		// Syntax errors gave no position within the line.
		{"syntax error offset", "\n" + `{"num_nodes":2,"node_type":[1,2] "src":[]}`, "line 2: byte 34: invalid character", 0},
		{"wrong type", `{"num_nodes":2.5,"node_type":[1,2],"src":[],"dst":[]}`, `line 1: "num_nodes" is 2.5, want an integer`, 0},
		{"null line", `null`, "line 1: the line is null", 0},
		{"array line", `[1,2]`, "line 1: byte 1: the line is array, not a JSON object", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs, err := ReadTPUTile(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(gs) != 1 || gs[0].M() != tc.edges {
				t.Fatalf("got %d graphs, %v", len(gs), gs)
			}
		})
	}
}
