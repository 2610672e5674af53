package vae

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/graph/planar"
	"lgflow/tensor"
)

// TestEdgeRules decodes hand-made scores for a 3-node graph with each rule.
// Scores are (no edge, edge) per ordered pair:
//
//	(0,1) edge, (1,0) edge            -> every rule: edge
//	(0,2) edge by 3, (2,0) no by 1    -> or: edge, and: none, mean: edge
//	(1,2) no by 2, (2,1) edge by 1    -> or: edge, and: none, mean: none
func TestEdgeRules(t *testing.T) {
	m := &Model{Cfg: Config{EdgeClasses: 1}}
	score := map[[2]int][2]float64{
		{0, 1}: {0, 1}, {1, 0}: {0, 1},
		{0, 2}: {0, 3}, {2, 0}: {1, 0},
		{1, 2}: {2, 0}, {2, 1}: {0, 1},
	}
	lg := tensor.New(tensor.Float32, 1, 3, 3, 2)
	for p, s := range score {
		lg.Set(s[0], 0, p[0], p[1], 0)
		lg.Set(s[1], 0, p[0], p[1], 1)
	}
	dec := &Decoded{EdgeLogits: autograd.NewConst(lg), Sizes: []int{3}, N: 3}
	for _, tc := range []struct {
		rule   EdgeRule
		margin float64
		want   [][2]int
	}{
		{EitherDirection, 0, [][2]int{{0, 1}, {0, 2}, {1, 2}}},
		{BothDirections, 0, [][2]int{{0, 1}}},
		{MeanLogits, 0, [][2]int{{0, 1}, {0, 2}}},
		// A margin of 1.5: only (0,2) beats no-edge by more.
		{EitherDirection, 1.5, [][2]int{{0, 2}}},
		{BothDirections, 1.5, nil},
		// (0,2): edge 1.5 vs 0, (2,0): edge -1.5 vs 1: the mean ties at
		// no edge; (0,1): edge -0.5 twice.
		{MeanLogits, 1.5, nil},
		{EitherDirection, -0.5, [][2]int{{0, 1}, {0, 2}, {1, 2}}},
		// A negative margin adds edges: at -0.5, (2,0) scores edge 0.5 vs
		// 1, still none; at -1.5, 1.5 vs 1: an edge.
		{BothDirections, -0.5, [][2]int{{0, 1}}},
		{BothDirections, -1.5, [][2]int{{0, 1}, {0, 2}}},
	} {
		g := m.graphs(dec, decodeOptions{rule: tc.rule, margin: tc.margin})[0]
		want := graph.New(3)
		for _, e := range tc.want {
			want.AddEdge(e[0], e[1])
		}
		if graph.FormatGraph6(g) != graph.FormatGraph6(want) {
			t.Errorf("%v, margin %v: edges %v, want %v", tc.rule, tc.margin, g.Edges(), tc.want)
		}
		r, err := ParseEdgeRule(tc.rule.String())
		if err != nil || r != tc.rule {
			t.Errorf("ParseEdgeRule(%q) = %v, %v", tc.rule.String(), r, err)
		}
	}
	if EdgeRule(3).Valid() || EdgeRule(-1).Valid() || !MeanLogits.Valid() {
		t.Error("Valid is wrong at the ends of the range")
	}
	if _, err := ParseEdgeRule("xor"); err == nil {
		t.Error(`ParseEdgeRule("xor"): no error`)
	}
	if _, err := buildDecodeOptions([]DecodeOption{WithEdgeRule(EdgeRule(9))}); err == nil {
		t.Error("edge rule 9: no error")
	}
	if _, err := buildDecodeOptions([]DecodeOption{WithEdgeMargin(math.NaN())}); err == nil {
		t.Error("edge margin NaN: no error")
	}
}

// TestEdgeConstraint decodes hand-made scores for a 4-node graph whose
// argmax has four edges, under constraints: a graph that satisfies the
// constraint is unchanged; one that does not keeps its most confident
// edges that the constraint allows, in order.
func TestEdgeConstraint(t *testing.T) {
	m := &Model{Cfg: Config{EdgeClasses: 1}}
	// Edge-minus-no-edge scores per ordered pair; the OR rule takes the
	// larger direction: {0,1} 3, {1,2} 2, {0,2} 1, {2,3} 0.5.
	score := map[[2]int]float64{{0, 1}: 3, {1, 0}: -1, {1, 2}: 2, {2, 1}: 2, {0, 2}: -2, {2, 0}: 1, {2, 3}: 0.5, {3, 2}: 0.2}
	dec := scoredDecode(4, score, -1) // no edge unless listed
	atMost := func(k int) func(*graph.Graph) bool { return func(g *graph.Graph) bool { return g.M() <= k } }
	noTriangle := func(g *graph.Graph) bool { return !(g.HasEdge(0, 1) && g.HasEdge(1, 2) && g.HasEdge(0, 2)) }
	for _, tc := range []struct {
		name string
		keep func(*graph.Graph) bool
		want [][2]int
	}{
		{"none", nil, [][2]int{{0, 1}, {0, 2}, {1, 2}, {2, 3}}},
		{"satisfied", atMost(4), [][2]int{{0, 1}, {0, 2}, {1, 2}, {2, 3}}},
		{"two edges", atMost(2), [][2]int{{0, 1}, {1, 2}}},
		// {0,2} is the least confident edge of the triangle: it goes, the
		// less confident {2,3} stays.
		{"no triangle", noTriangle, [][2]int{{0, 1}, {1, 2}, {2, 3}}},
	} {
		checkEdges(t, tc.name, m.graphs(dec, decodeOptions{keep: tc.keep})[0], tc.want)
	}
}

// TestEdgeConstraintGreedy checks that constrained decoding, which tries
// runs of edges together, keeps exactly the edges of the one-edge-at-a-time
// rule (most confident first, each kept if the property still holds), for a
// hereditary property (maximum degree 2) on random scores.
func TestEdgeConstraintGreedy(t *testing.T) {
	m := &Model{Cfg: Config{EdgeClasses: 1}}
	r := tensor.NewRNG(4)
	const n = 9
	maxDeg2 := func(g *graph.Graph) bool {
		for i := range g.N() {
			if g.Degree(i) > 2 {
				return false
			}
		}
		return true
	}
	for trial := range 20 {
		dec, conf := randomDecode(r, n, func(_, _ int, z float64) float64 { return z + 0.5 }) // mostly edges
		got := m.graphs(dec, decodeOptions{keep: maxDeg2})[0]
		// The one-at-a-time rule on the unconstrained graph's edges.
		full := m.graphs(dec, decodeOptions{})[0]
		type scored struct {
			u, v int
			s    float64
		}
		var es []scored
		for _, e := range full.Edges() {
			es = append(es, scored{e.From, e.To, conf(e.From, e.To)})
		}
		slices.SortStableFunc(es, func(a, b scored) int { return cmp.Compare(b.s, a.s) })
		want := graph.New(n)
		for _, e := range es {
			want.AddEdge(e.u, e.v)
			if !maxDeg2(want) {
				want.RemoveEdge(e.u, e.v)
			}
		}
		if graph.FormatGraph6(got) != graph.FormatGraph6(want) {
			t.Fatalf("trial %d: edges %v, want %v", trial, got.Edges(), want.Edges())
		}
		if maxDeg2(full) {
			t.Fatalf("trial %d: the unconstrained graph already has degree <= 2: the check is vacuous", trial)
		}
	}
}

// TestSpanningTree checks the spanning-tree decoder on hand-made logits:
// cycles lose their least confident edge, components are joined by the
// most confident missing pair, trees are unchanged, labels follow the
// combined logits.
func TestSpanningTree(t *testing.T) {
	m := &Model{Cfg: Config{EdgeClasses: 2}}
	// Edge-minus-no-edge scores per ordered pair (class 1 unless listed in
	// class2); pairs not listed score -5.
	for _, tc := range []struct {
		name   string
		n      int
		score  map[[2]int]float64
		class2 map[[2]int]bool
		rule   EdgeRule
		want   [][3]int // u, v, label
	}{
		{"already a tree", 3, map[[2]int]float64{{0, 1}: 1, {1, 2}: 1}, nil, EitherDirection, [][3]int{{0, 1, 0}, {1, 2, 0}}},
		// The triangle 0-1-2 loses {0,2} (or rule: max(-2, 1) = 1, the
		// least confident), and 3 joins at its best pair.
		{"cycle and a lone node", 4, map[[2]int]float64{{0, 1}: 3, {1, 0}: -1, {1, 2}: 2, {2, 1}: 2, {0, 2}: -2, {2, 0}: 1, {3, 1}: -0.5, {3, 0}: -1}, nil, EitherDirection,
			[][3]int{{0, 1, 0}, {1, 2, 0}, {1, 3, 0}}},
		// The and rule takes the smaller direction: {0,2} scores -2, so 2
		// joins through {1,2} and 3 through {0,3} (-1 beats {1,3} at -5).
		{"and rule", 4, map[[2]int]float64{{0, 1}: 3, {1, 0}: 3, {1, 2}: 0.5, {2, 1}: -0.5, {0, 2}: -2, {2, 0}: 1, {0, 3}: -1, {3, 0}: -1}, nil, BothDirections,
			[][3]int{{0, 1, 0}, {1, 2, 0}, {0, 3, 0}}},
		{"labels", 3, map[[2]int]float64{{0, 1}: 1, {1, 0}: 1, {1, 2}: 1, {2, 1}: 1}, map[[2]int]bool{{1, 2}: true, {2, 1}: true}, EitherDirection,
			[][3]int{{0, 1, 0}, {1, 2, 1}}},
		{"no edges", 3, nil, nil, EitherDirection, [][3]int{{0, 1, 0}, {0, 2, 0}}},
	} {
		lg := tensor.New(tensor.Float32, 1, tc.n, tc.n, 3)
		for i := range tc.n {
			for j := range tc.n {
				s, ok := tc.score[[2]int{i, j}]
				if !ok {
					s = -5
				}
				c := 1
				if tc.class2[[2]int{i, j}] {
					c = 2
				}
				lg.Set(s, 0, i, j, c)
				lg.Set(s-1, 0, i, j, 3-c)
			}
		}
		dec := &Decoded{EdgeLogits: autograd.NewConst(lg), Sizes: []int{tc.n}, N: tc.n}
		g := m.graphs(dec, decodeOptions{tree: true, rule: tc.rule})[0]
		want := graph.New(tc.n)
		for _, e := range tc.want {
			want.AddLabeledEdge(e[0], e[1], e[2])
		}
		if graph.FormatGraph6(g) != graph.FormatGraph6(want) {
			t.Errorf("%s: edges %v, want %v", tc.name, g.Edges(), tc.want)
			continue
		}
		for _, e := range tc.want {
			if l := g.EdgeLabel(e[0], e[1]); l != e[2] {
				t.Errorf("%s: edge {%d,%d} label %d, want %d", tc.name, e[0], e[1], l, e[2])
			}
		}
	}
}

// TestSpanningTreeMaximum checks on random logits that the decoded tree
// has the largest total confidence of all spanning trees (against Prim's
// algorithm on the complete graph).
func TestSpanningTreeMaximum(t *testing.T) {
	m := &Model{Cfg: Config{EdgeClasses: 1}}
	r := tensor.NewRNG(9)
	const n = 12
	for trial := range 20 {
		// A sparse, mostly disconnected decode.
		dec, conf := randomDecode(r, n, func(_, _ int, z float64) float64 { return z - 1.5 })
		g := m.graphs(dec, decodeOptions{tree: true})[0]
		if !graph.IsTree(g) {
			t.Fatalf("trial %d: not a tree: %v", trial, g.Edges())
		}
		var got float64
		for _, e := range g.Edges() {
			got += conf(e.From, e.To)
		}
		want := maxSpanningWeight(n, conf)
		if math.Abs(got-want) > 1e-9 {
			t.Fatalf("trial %d: tree confidence %v, maximum %v", trial, got, want)
		}
		if plain := m.graphs(dec, decodeOptions{})[0]; graph.IsTree(plain) {
			t.Fatalf("trial %d: the plain decode is already a tree: the check is vacuous", trial)
		}
	}
}

func TestSpanningTreeRefused(t *testing.T) {
	dir := &Model{Cfg: Config{EdgeClasses: 1, Directed: true}}
	if _, err := dir.decodeOptions([]DecodeOption{WithSpanningTree()}); err == nil {
		t.Error("directed model accepted WithSpanningTree")
	}
	und := &Model{Cfg: Config{EdgeClasses: 1}}
	if _, err := und.decodeOptions([]DecodeOption{WithSpanningTree(), WithEdgeConstraint(graph.IsForest)}); err == nil {
		t.Error("WithSpanningTree with WithEdgeConstraint accepted")
	}
	if _, err := und.decodeOptions([]DecodeOption{WithSpanningTree()}); err != nil {
		t.Errorf("undirected model: %v", err)
	}
}

// TestConnected checks WithConnected on hand-made scores: a connected
// decode is unchanged, a disconnected one keeps its edges and gains the
// most confident pair joining each extra component.
func TestConnected(t *testing.T) {
	m := &Model{Cfg: Config{EdgeClasses: 1}}
	for _, tc := range []struct {
		name  string
		n     int
		score map[[2]int]float64 // edge minus no-edge per ordered pair; others -5
		want  [][2]int
	}{
		{"connected", 3, map[[2]int]float64{{0, 1}: 1, {1, 2}: 1, {0, 2}: 2}, [][2]int{{0, 1}, {0, 2}, {1, 2}}},
		// Components {0,1,2} (a triangle) and {3,4}, and the lone node 5:
		// {2,3} (-0.5) beats {0,4} (-1) as the bridge, 5 joins at {4,5}.
		{"two components and a lone node", 6, map[[2]int]float64{
			{0, 1}: 2, {1, 2}: 2, {0, 2}: 1, {3, 4}: 3,
			{2, 3}: -0.5, {0, 4}: -1, {4, 5}: -2, {5, 1}: -3,
		}, [][2]int{{0, 1}, {0, 2}, {1, 2}, {3, 4}, {2, 3}, {4, 5}}},
		{"no edges", 3, nil, [][2]int{{0, 1}, {0, 2}}},
	} {
		dec := scoredDecode(tc.n, tc.score, -5)
		checkEdges(t, tc.name, m.graphs(dec, decodeOptions{connected: true})[0], tc.want)
	}
}

// TestConnectedMaximum checks on random logits that WithConnected keeps
// every decoded edge, connects the graph with one edge per extra
// component, and that the added edges have the largest total confidence of
// any such set (against Prim's algorithm on the graph of components, where
// two components are joined by their most confident pair).
func TestConnectedMaximum(t *testing.T) {
	m := &Model{Cfg: Config{EdgeClasses: 1}}
	r := tensor.NewRNG(11)
	const n = 16
	for trial := range 20 {
		// Sparse: several components.
		dec, conf := randomDecode(r, n, func(_, _ int, z float64) float64 { return z - 2 })
		plain := m.graphs(dec, decodeOptions{})[0]
		comps := graph.Components(plain)
		k := len(comps)
		comp := make([]int, n) // node -> component
		for c, nodes := range comps {
			for _, v := range nodes {
				comp[v] = c
			}
		}
		if k < 3 {
			t.Fatalf("trial %d: %d components: the check is vacuous", trial, k)
		}
		g := m.graphs(dec, decodeOptions{connected: true})[0]
		if !graph.IsConnected(g) {
			t.Fatalf("trial %d: not connected", trial)
		}
		if g.M() != plain.M()+k-1 {
			t.Fatalf("trial %d: %d edges, want %d + %d", trial, g.M(), plain.M(), k-1)
		}
		var got float64
		for _, e := range plain.Edges() {
			if !g.HasEdge(e.From, e.To) {
				t.Fatalf("trial %d: decoded edge %v dropped", trial, e)
			}
		}
		for _, e := range g.Edges() {
			if !plain.HasEdge(e.From, e.To) {
				got += conf(e.From, e.To)
			}
		}
		// Prim over components.
		best := make([][]float64, k)
		for a := range best {
			best[a] = make([]float64, k)
			for b := range best[a] {
				best[a][b] = math.Inf(-1)
			}
		}
		for i := range n {
			for j := i + 1; j < n; j++ {
				if a, b := comp[i], comp[j]; a != b {
					best[a][b] = max(best[a][b], conf(i, j))
					best[b][a] = best[a][b]
				}
			}
		}
		want := maxSpanningWeight(k, func(a, b int) float64 { return best[a][b] })
		if math.Abs(got-want) > 1e-9 {
			t.Fatalf("trial %d: added confidence %v, maximum %v", trial, got, want)
		}
	}
}

func TestConnectedRefusedForDirected(t *testing.T) {
	dir := &Model{Cfg: Config{EdgeClasses: 1, Directed: true}}
	if _, err := dir.decodeOptions([]DecodeOption{WithConnected()}); err == nil {
		t.Error("directed model accepted WithConnected")
	}
	und := &Model{Cfg: Config{EdgeClasses: 1}}
	if _, err := und.decodeOptions([]DecodeOption{WithConnected(), WithEdgeConstraint(graph.IsForest)}); err != nil {
		t.Errorf("undirected model with a constraint: %v", err)
	}
}

// TestConnectedAfterConstraint: on random logits of two dense halves, planarity
// enforced and then components joined gives graphs that are planar and
// connected (the bridges WithConnected adds join different components, so
// they cannot break planarity).
func TestConnectedAfterConstraint(t *testing.T) {
	m := &Model{Cfg: Config{EdgeClasses: 1}}
	r := tensor.NewRNG(5)
	const n = 14
	for trial := range 10 {
		// Two dense halves (far from planar), never joined.
		dec, _ := randomDecode(r, n, func(i, j int, z float64) float64 {
			if (i < n/2) != (j < n/2) {
				return -8
			}
			return z + 1
		})
		if planar.IsPlanar(m.graphs(dec, decodeOptions{})[0]) {
			t.Fatalf("trial %d: the plain decode is planar: the check is vacuous", trial)
		}
		if graph.IsConnected(m.graphs(dec, decodeOptions{keep: planar.IsPlanar})[0]) {
			t.Fatalf("trial %d: the planar decode is connected: the check is vacuous", trial)
		}
		g := m.graphs(dec, decodeOptions{keep: planar.IsPlanar, connected: true})[0]
		if !planar.IsPlanar(g) || !graph.IsConnected(g) {
			t.Fatalf("trial %d: planar %v, connected %v", trial, planar.IsPlanar(g), graph.IsConnected(g))
		}
	}
}

// scoredDecode returns a one-graph decode of n nodes and one edge class
// whose edge-minus-no-edge score is score[{i, j}] for the listed ordered
// pairs and rest for the others.
func scoredDecode(n int, score map[[2]int]float64, rest float64) *Decoded {
	lg := tensor.New(tensor.Float32, 1, n, n, 2)
	for i := range n {
		for j := range n {
			s, ok := score[[2]int{i, j}]
			if !ok {
				s = rest
			}
			lg.Set(s, 0, i, j, 1)
		}
	}
	return &Decoded{EdgeLogits: autograd.NewConst(lg), Sizes: []int{n}, N: n}
}

// checkEdges reports an error unless g has exactly the edges want.
func checkEdges(t *testing.T, name string, g *graph.Graph, want [][2]int) {
	t.Helper()
	w := graph.New(g.N())
	for _, e := range want {
		w.AddEdge(e[0], e[1])
	}
	if graph.FormatGraph6(g) != graph.FormatGraph6(w) {
		t.Errorf("%s: edges %v, want %v", name, g.Edges(), want)
	}
}

// maxSpanningWeight returns the total weight of a maximum spanning tree of
// the complete graph on n nodes with edge weights w (Prim's algorithm).
func maxSpanningWeight(n int, w func(u, v int) float64) float64 {
	in := make([]bool, n)
	key := make([]float64, n)
	for i := range key {
		key[i] = math.Inf(-1)
	}
	key[0] = 0
	var total float64
	for range n {
		u := -1
		for v := range n {
			if !in[v] && (u < 0 || key[v] > key[u]) {
				u = v
			}
		}
		in[u] = true
		total += key[u]
		for v := range n {
			if !in[v] {
				key[v] = max(key[v], w(u, v))
			}
		}
	}
	return total
}

// TestConstraintMarginDefault: a stored margin applies unless a validity
// constraint (WithEdgeConstraint, WithSpanningTree) is given, which decodes
// with the argmax; WithConnected alone keeps it; an explicit margin wins.
func TestConstraintMarginDefault(t *testing.T) {
	m := &Model{Cfg: Config{EdgeClasses: 1, EdgeMargin: 0.75}}
	for _, c := range []struct {
		name string
		opts []DecodeOption
		want float64
	}{
		{"stored", nil, 0.75},
		{"planarity", []DecodeOption{WithEdgeConstraint(graph.IsForest)}, 0},
		{"spanning tree", []DecodeOption{WithSpanningTree()}, 0},
		{"connectivity alone", []DecodeOption{WithConnected()}, 0.75},
		{"constraint and margin", []DecodeOption{WithEdgeConstraint(graph.IsForest), WithEdgeMargin(0.5)}, 0.5},
	} {
		o, err := m.decodeOptions(c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if o.margin != c.want {
			t.Errorf("%s: margin %v, want %v", c.name, o.margin, c.want)
		}
	}
	// The margin decides: a pair scoring 0.5 is an edge with the argmax,
	// not under the stored 0.75.
	dec := scoredDecode(2, map[[2]int]float64{{0, 1}: 0.5, {1, 0}: 0.5}, -5)
	for _, c := range []struct {
		opts []DecodeOption
		want [][2]int
	}{
		{nil, nil},
		{[]DecodeOption{WithEdgeConstraint(graph.IsForest)}, [][2]int{{0, 1}}},
	} {
		o, err := m.decodeOptions(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		checkEdges(t, fmt.Sprintf("%d options", len(c.opts)), m.graphs(dec, o)[0], c.want)
	}
}

// randomDecode returns a one-graph decode of n nodes and one edge class
// whose edge-minus-no-edge score for the ordered pair (i, j) is
// score(i, j, z), z a standard normal draw from r, and each pair's
// confidence under the or rule (the larger direction).
func randomDecode(r *tensor.RNG, n int, score func(i, j int, z float64) float64) (*Decoded, func(i, j int) float64) {
	lg := tensor.New(tensor.Float32, 1, n, n, 2)
	for i := range n {
		for j := range n {
			lg.Set(score(i, j, r.Normal()), 0, i, j, 1)
		}
	}
	conf := func(i, j int) float64 { return max(lg.At(0, i, j, 1), lg.At(0, j, i, 1)) }
	return &Decoded{EdgeLogits: autograd.NewConst(lg), Sizes: []int{n}, N: n}, conf
}

// TestEdgeFill checks WithEdgeFill on hand-made scores: missing pairs at or
// above the bound are added most confident first while the constraint
// holds, pairs below it never, and the decoded edges all stay.
func TestEdgeFill(t *testing.T) {
	m := &Model{Cfg: Config{EdgeClasses: 1}}
	// Decoded (positive): {0,1} 3, {1,2} 2. Missing: {2,3} -0.5, {0,2}
	// -1, {0,3} -1.5, {1,3} -3 (not in pair order); the rest -5.
	score := map[[2]int]float64{{0, 1}: 3, {1, 2}: 2, {2, 3}: -0.5, {0, 2}: -1, {3, 0}: -1.5, {1, 3}: -3}
	dec := scoredDecode(4, score, -5)
	atMost := func(k int) func(*graph.Graph) bool { return func(g *graph.Graph) bool { return g.M() <= k } }
	noTriangle := func(g *graph.Graph) bool {
		for _, tri := range [][3]int{{0, 1, 2}, {0, 1, 3}, {0, 2, 3}, {1, 2, 3}} {
			if g.HasEdge(tri[0], tri[1]) && g.HasEdge(tri[1], tri[2]) && g.HasEdge(tri[0], tri[2]) {
				return false
			}
		}
		return true
	}
	all := func(*graph.Graph) bool { return true }
	for _, tc := range []struct {
		name string
		keep func(*graph.Graph) bool
		min  float64
		want [][2]int
	}{
		{"bound above every missing pair", all, 0, [][2]int{{0, 1}, {1, 2}}},
		{"bound -1", all, -1, [][2]int{{0, 1}, {1, 2}, {0, 2}, {2, 3}}},
		{"bound -3", all, -3, [][2]int{{0, 1}, {1, 2}, {0, 2}, {2, 3}, {0, 3}, {1, 3}}},
		{"at most three edges", atMost(3), -3, [][2]int{{0, 1}, {1, 2}, {2, 3}}},
		// {2,3} fits; {0,2} closes 0-1-2: skipped; {0,3} closes nothing
		// ({0,2} and {1,3} are absent): kept; {1,3} closes 1-2-3: skipped.
		{"no triangle", noTriangle, -3, [][2]int{{0, 1}, {1, 2}, {2, 3}, {0, 3}}},
	} {
		o := decodeOptions{keep: tc.keep, fill: true, fillMin: tc.min}
		checkEdges(t, tc.name, m.graphs(dec, o)[0], tc.want)
	}
	und := &Model{Cfg: Config{EdgeClasses: 1}}
	for _, tc := range []struct {
		name string
		opts []DecodeOption
	}{
		{"without a constraint", []DecodeOption{WithEdgeFill(-1)}},
		{"NaN bound", []DecodeOption{WithEdgeConstraint(all), WithEdgeFill(math.NaN())}},
	} {
		if _, err := und.decodeOptions(tc.opts); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	dir := &Model{Cfg: Config{EdgeClasses: 1, Directed: true}}
	if _, err := dir.decodeOptions([]DecodeOption{WithEdgeConstraint(all), WithEdgeFill(-1)}); err == nil {
		t.Error("directed model accepted WithEdgeFill")
	}
	for _, b := range []float64{math.Inf(-1), math.Inf(1)} {
		if _, err := und.decodeOptions([]DecodeOption{WithEdgeConstraint(all), WithEdgeFill(b)}); err != nil {
			t.Errorf("bound %v: %v", b, err)
		}
	}
	if g := m.graphs(dec, decodeOptions{keep: all, fill: true, fillMin: math.Inf(1)})[0]; g.M() != 2 {
		t.Errorf("bound +Inf: %d edges, want the 2 decoded", g.M())
	}
}

// TestEdgeCompletion checks WithEdgeCompletion on hand-made scores: a
// decoded graph for which the property holds gains the missing pairs at or
// above the bound that keep it, most confident first; one for which it
// fails is left exactly as decoded (nothing removed, nothing added); the
// stored margin still applies; and the option's conflicts are refused.
func TestEdgeCompletion(t *testing.T) {
	m := &Model{Cfg: Config{EdgeClasses: 1}}
	// Decoded (positive): {0,1} 3, {1,2} 2. Missing: {2,3} -0.5, {0,2}
	// -1, {0,3} -1.5, {1,3} -3; the rest -5.
	score := map[[2]int]float64{{0, 1}: 3, {1, 2}: 2, {2, 3}: -0.5, {0, 2}: -1, {3, 0}: -1.5, {1, 3}: -3}
	dec := scoredDecode(4, score, -5)
	noTriangle := func(g *graph.Graph) bool {
		for _, tri := range [][3]int{{0, 1, 2}, {0, 1, 3}, {0, 2, 3}, {1, 2, 3}} {
			if g.HasEdge(tri[0], tri[1]) && g.HasEdge(tri[1], tri[2]) && g.HasEdge(tri[0], tri[2]) {
				return false
			}
		}
		return true
	}
	atMost := func(k int) func(*graph.Graph) bool { return func(g *graph.Graph) bool { return g.M() <= k } }
	for _, tc := range []struct {
		name   string
		valid  func(*graph.Graph) bool
		min    float64
		margin float64
		want   [][2]int
	}{
		// As TestEdgeFill's "no triangle": {0,2} and {1,3} would close one.
		{"valid, completed", noTriangle, -3, 0, [][2]int{{0, 1}, {1, 2}, {2, 3}, {0, 3}}},
		{"valid, bound above every missing pair", noTriangle, 0, 0, [][2]int{{0, 1}, {1, 2}}},
		{"valid, bound -1", noTriangle, -1, 0, [][2]int{{0, 1}, {1, 2}, {2, 3}}},
		// Two decoded edges already break "at most one": nothing changes,
		// where WithEdgeConstraint would cut to {0,1}.
		{"invalid, left as decoded", atMost(1), -3, 0, [][2]int{{0, 1}, {1, 2}}},
		// Margin 2.5 drops {1,2} (score 2) from the decoded graph; the
		// completion may add it back as a missing pair above the bound.
		{"margin, then completion", noTriangle, 2, 2.5, [][2]int{{0, 1}, {1, 2}}},
		{"margin, bound above it", noTriangle, 2.5, 2.5, [][2]int{{0, 1}}},
	} {
		o := decodeOptions{complete: tc.valid, completeMin: tc.min, margin: tc.margin}
		checkEdges(t, tc.name, m.graphs(dec, o)[0], tc.want)
	}
	all := func(*graph.Graph) bool { return true }
	und := &Model{Cfg: Config{EdgeClasses: 1, EdgeMargin: 1.25}}
	o, err := und.decodeOptions([]DecodeOption{WithEdgeCompletion(all, -4)})
	if err != nil {
		t.Fatal(err)
	}
	if o.margin != 1.25 {
		t.Errorf("margin %v under completion, want the model's 1.25", o.margin)
	}
	for _, tc := range []struct {
		name string
		opts []DecodeOption
	}{
		{"with a constraint", []DecodeOption{WithEdgeConstraint(all), WithEdgeCompletion(all, -1)}},
		{"with spanning trees", []DecodeOption{WithSpanningTree(), WithEdgeCompletion(all, -1)}},
		{"with connected", []DecodeOption{WithConnected(), WithEdgeCompletion(all, -1)}},
		{"with a fill", []DecodeOption{WithEdgeConstraint(all), WithEdgeFill(-1), WithEdgeCompletion(all, -1)}},
		{"NaN bound", []DecodeOption{WithEdgeCompletion(all, math.NaN())}},
		{"nil property", []DecodeOption{WithEdgeCompletion(nil, -1)}},
		{"nil constraint", []DecodeOption{WithEdgeConstraint(nil)}},
	} {
		if _, err := und.decodeOptions(tc.opts); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	dir := &Model{Cfg: Config{EdgeClasses: 1, Directed: true}}
	if _, err := dir.decodeOptions([]DecodeOption{WithEdgeCompletion(all, -1)}); err == nil {
		t.Error("directed model accepted WithEdgeCompletion")
	}
}
