package iso

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lgflow/graph"
)

// ---- generators -------------------------------------------------------

func fromEdges(n int, directed bool, edges [][2]int) *graph.Graph {
	var g *graph.Graph
	if directed {
		g = graph.NewDirected(n)
	} else {
		g = graph.New(n)
	}
	for _, e := range edges {
		g.MustAddEdge(e[0], e[1])
	}
	return g
}

func randomTree(n int, rng *rand.Rand) *graph.Graph {
	g := graph.New(n)
	for v := 1; v < n; v++ {
		g.MustAddEdge(v, rng.IntN(v))
	}
	return g
}

// planarLike returns a stacked triangulation with n nodes.
func planarLike(n int, rng *rand.Rand) *graph.Graph {
	g := graph.New(n)
	g.MustAddEdge(0, 1)
	g.MustAddEdge(1, 2)
	g.MustAddEdge(0, 2)
	faces := [][3]int{{0, 1, 2}, {0, 1, 2}}
	for v := 3; v < n; v++ {
		i := rng.IntN(len(faces))
		f := faces[i]
		for _, u := range f {
			g.MustAddEdge(u, v)
		}
		faces[i] = [3]int{f[0], f[1], v}
		faces = append(faces, [3]int{f[1], f[2], v}, [3]int{f[2], f[0], v})
	}
	return g
}

// orient returns a directed graph with each undirected edge of g
// oriented at random (both ways with probability pBoth).
func orient(g *graph.Graph, pBoth float64, rng *rand.Rand) *graph.Graph {
	d := graph.NewDirected(g.N())
	for _, e := range g.Edges() {
		r := rng.Float64()
		switch {
		case r < pBoth:
			d.MustAddEdge(e.From, e.To)
			d.MustAddEdge(e.To, e.From)
		case r < (1+pBoth)/2:
			d.MustAddEdge(e.From, e.To)
		default:
			d.MustAddEdge(e.To, e.From)
		}
	}
	return d
}

func withLabels(g *graph.Graph, nodeK, edgeK int, rng *rand.Rand) *graph.Graph {
	h := graph.New(g.N())
	if g.Directed() {
		h = graph.NewDirected(g.N())
	}
	for _, e := range g.Edges() {
		if err := h.AddLabeledEdge(e.From, e.To, rng.IntN(edgeK)); err != nil {
			panic(err)
		}
	}
	h.NodeLabels = make([]int, g.N())
	for i := range h.NodeLabels {
		h.NodeLabels[i] = rng.IntN(nodeK)
	}
	return h
}

func relabel(g *graph.Graph, rng *rand.Rand) *graph.Graph {
	h, err := g.Permute(rng.Perm(g.N()))
	if err != nil {
		panic(err)
	}
	return h
}

func shrikhande() *graph.Graph {
	g := graph.New(16)
	id := func(i, j int) int { return (i%4+4)%4*4 + (j%4+4)%4 }
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			for _, d := range [][2]int{{1, 0}, {0, 1}, {1, 1}} {
				g.MustAddEdge(id(i, j), id(i+d[0], j+d[1]))
			}
		}
	}
	return g
}

func rook(k int) *graph.Graph {
	g := graph.New(k * k)
	for a := 0; a < k*k; a++ {
		for b := a + 1; b < k*k; b++ {
			if a/k == b/k || a%k == b%k {
				g.MustAddEdge(a, b)
			}
		}
	}
	return g
}

// latinSquareGraph returns the strongly regular graph of the Cayley table
// of a group of order k given by its multiplication op: cells (i, j),
// adjacent when they share a row, a column or a symbol.
func latinSquareGraph(k int, op func(a, b int) int) *graph.Graph {
	g := graph.New(k * k)
	for a := 0; a < k*k; a++ {
		for b := a + 1; b < k*k; b++ {
			i1, j1, i2, j2 := a/k, a%k, b/k, b%k
			if i1 == i2 || j1 == j2 || op(i1, j1) == op(i2, j2) {
				g.MustAddEdge(a, b)
			}
		}
	}
	return g
}

// ---- independent references ---------------------------------------------

// bruteIsomorphic tries every permutation (n <= 8).
func bruteIsomorphic(g, h *graph.Graph, opt Options) bool {
	if g.N() != h.N() || g.M() != h.M() || g.Directed() != h.Directed() {
		return false
	}
	n := g.N()
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	lab := func(x *graph.Graph, u int) int {
		if x.NodeLabels == nil {
			return 0
		}
		return x.NodeLabels[u]
	}
	check := func() bool {
		for u := 0; u < n; u++ {
			if opt.NodeLabels && lab(g, u) != lab(h, perm[u]) {
				return false
			}
		}
		for _, e := range g.Edges() {
			if !h.HasEdge(perm[e.From], perm[e.To]) {
				return false
			}
			if opt.EdgeLabels && h.EdgeLabel(perm[e.From], perm[e.To]) != e.Label {
				return false
			}
		}
		return true
	}
	var rec func(k int) bool
	rec = func(k int) bool {
		if k == n {
			return check()
		}
		for i := k; i < n; i++ {
			perm[k], perm[i] = perm[i], perm[k]
			if rec(k + 1) {
				return true
			}
			perm[k], perm[i] = perm[i], perm[k]
		}
		return false
	}
	return rec(0)
}

// treeCanon is the AHU canonical string of an unrooted tree, rooted at
// its centre (the smaller string over the two centres if bicentral).
func treeCanon(g *graph.Graph) string {
	n := g.N()
	if n == 0 {
		return ""
	}
	deg := make([]int, n)
	var leaves []int
	for u := range n {
		deg[u] = g.Degree(u)
		if deg[u] <= 1 {
			leaves = append(leaves, u)
		}
	}
	left := n
	for left > 2 {
		var next []int
		for _, u := range leaves {
			left--
			for _, v := range g.Neighbors(u) {
				deg[v]--
				if deg[v] == 1 {
					next = append(next, v)
				}
			}
		}
		leaves = next
	}
	var enc func(u, parent int) string
	enc = func(u, parent int) string {
		var ch []string
		for _, v := range g.Neighbors(u) {
			if v != parent {
				ch = append(ch, enc(v, u))
			}
		}
		slices.Sort(ch)
		return "(" + strings.Join(ch, "") + ")"
	}
	best := ""
	for i, c := range leaves {
		s := enc(c, -1)
		if i == 0 || s < best {
			best = s
		}
	}
	return best
}

// ---- tests --------------------------------------------------------------

func TestIsomorphicRelabelled(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	type mk func() *graph.Graph
	gens := map[string]mk{
		"tree64":           func() *graph.Graph { return randomTree(64, rng) },
		"planar64":         func() *graph.Graph { return planarLike(64, rng) },
		"tree200":          func() *graph.Graph { return randomTree(200, rng) },
		"directed-tree64":  func() *graph.Graph { return orient(randomTree(64, rng), 0, rng) },
		"directed-planar":  func() *graph.Graph { return orient(planarLike(64, rng), 0.2, rng) },
		"labelled-planar":  func() *graph.Graph { return withLabels(planarLike(64, rng), 3, 2, rng) },
		"labelled-digraph": func() *graph.Graph { return withLabels(orient(planarLike(64, rng), 0.1, rng), 4, 3, rng) },
		"shrikhande":       shrikhande,
		"rook4":            func() *graph.Graph { return rook(4) },
		"empty":            func() *graph.Graph { return graph.New(0) },
		"isolated5":        func() *graph.Graph { return graph.New(5) },
	}
	for name, gen := range gens {
		for trial := 0; trial < 5; trial++ {
			g := gen()
			h := relabel(g, rng)
			for _, opt := range []Options{{}, {NodeLabels: true}, {EdgeLabels: true}, {true, true}} {
				ok, err := Isomorphic(ctx, g, h, opt)
				if err != nil || !ok {
					t.Fatalf("%s trial %d opt %+v: Isomorphic = %v, %v; want true", name, trial, opt, ok, err)
				}
			}
			if !CouldBeIsomorphic(g, h) {
				t.Fatalf("%s: CouldBeIsomorphic = false for a relabelling", name)
			}
		}
	}
}

func TestNonIsomorphicPairs(t *testing.T) {
	ctx := context.Background()
	prism := fromEdges(6, false, [][2]int{{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}, {0, 3}, {1, 4}, {2, 5}})
	k33 := fromEdges(6, false, [][2]int{{0, 3}, {0, 4}, {0, 5}, {1, 3}, {1, 4}, {1, 5}, {2, 3}, {2, 4}, {2, 5}})
	c6 := fromEdges(6, false, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0}})
	twoC3 := fromEdges(6, false, [][2]int{{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}})
	cyc3 := fromEdges(3, true, [][2]int{{0, 1}, {1, 2}, {2, 0}})
	trans3 := fromEdges(3, true, [][2]int{{0, 1}, {1, 2}, {0, 2}})
	// Same in/out degree sequences: a directed 6-cycle vs two directed 3-cycles.
	dc6 := fromEdges(6, true, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0}})
	d2c3 := fromEdges(6, true, [][2]int{{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}})
	undirectedC3 := fromEdges(3, false, [][2]int{{0, 1}, {1, 2}, {2, 0}})
	cases := []struct {
		name      string
		g, h      *graph.Graph
		couldBe   bool // expected CouldBeIsomorphic
		sameWLHas bool // whether 1-WL cannot separate them
	}{
		{"K3,3 vs prism", k33, prism, false, true},
		{"C6 vs 2C3", c6, twoC3, false, true},
		{"directed C3 vs transitive triangle", cyc3, trans3, false, false},
		{"directed C6 vs 2 directed C3", dc6, d2c3, false, true},
		{"Shrikhande vs rook 4x4", shrikhande(), rook(4), true, true},
		{"directed vs undirected", cyc3, undirectedC3, false, false},
	}
	for _, c := range cases {
		for _, opt := range []Options{{}, {true, true}} {
			ok, err := Isomorphic(ctx, c.g, c.h, opt)
			if err != nil || ok {
				t.Errorf("%s: Isomorphic = %v, %v; want false", c.name, ok, err)
			}
		}
		if got := CouldBeIsomorphic(c.g, c.h); got != c.couldBe {
			t.Errorf("%s: CouldBeIsomorphic = %v, want %v", c.name, got, c.couldBe)
		}
		if c.g.Directed() == c.h.Directed() {
			p, _ := prepare(c.g, Options{})
			q, _ := prepare(c.h, Options{})
			if (p.hash == q.hash) != c.sameWLHas {
				t.Errorf("%s: equal WL hashes = %v, want %v", c.name, p.hash == q.hash, c.sameWLHas)
			}
		}
	}
}

func TestLabels(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	g := withLabels(planarLike(30, rng), 3, 3, rng)
	h := relabel(g, rng)
	// Swap the labels of two nodes with different labels.
	hl := h.Clone()
	i := 0
	for hl.NodeLabels[i] == hl.NodeLabels[0] {
		i++
	}
	hl.NodeLabels[0], hl.NodeLabels[i] = hl.NodeLabels[i], hl.NodeLabels[0]
	// Change one edge label to another value present in the graph.
	he := h.Clone()
	e := he.Edges()[0]
	if err := he.AddLabeledEdge(e.From, e.To, (e.Label+1)%3); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		h    *graph.Graph
		opt  Options
		want bool
	}{
		{"node labels swapped, ignored", hl, Options{}, true},
		{"node labels swapped, compared", hl, Options{NodeLabels: true}, false},
		{"node labels swapped, edge labels compared", hl, Options{EdgeLabels: true}, true},
		{"edge label changed, ignored", he, Options{NodeLabels: true}, true},
		{"edge label changed, compared", he, Options{EdgeLabels: true}, false},
	}
	for _, c := range cases {
		ok, err := Isomorphic(ctx, g, c.h, c.opt)
		if err != nil || ok != c.want {
			t.Errorf("%s: Isomorphic = %v, %v; want %v", c.name, ok, err, c.want)
		}
	}
	// nil labels count as all zero.
	a := graph.New(2)
	a.MustAddEdge(0, 1)
	b := a.Clone()
	b.NodeLabels = []int{0, 0}
	if ok, _ := Isomorphic(ctx, a, b, Options{NodeLabels: true}); !ok {
		t.Error("nil labels should equal all-zero labels")
	}
	b.NodeLabels = []int{0, 1}
	if ok, _ := Isomorphic(ctx, a, b, Options{NodeLabels: true}); ok {
		t.Error("nil labels should differ from labels {0, 1}")
	}
	b.NodeLabels = []int{0, 0, 0}
	c := b.Clone()
	if _, err := Isomorphic(ctx, b, c, Options{NodeLabels: true}); err == nil {
		t.Error("wrong-length NodeLabels: no error")
	}
}

// TestAgainstBruteForce compares with trying all permutations on small
// graph pairs with equal degree sequences (h is g after random
// degree-preserving edge swaps, relabelled).
func TestAgainstBruteForce(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	counts := map[bool]int{}
	for trial := 0; trial < 1500; trial++ {
		n := 3 + rng.IntN(5)
		directed := trial%3 == 0
		g := fromEdges(n, directed, nil)
		p := 0.2 + 0.5*rng.Float64()
		for u := 0; u < n; u++ {
			for v := 0; v < n; v++ {
				if u != v && (directed || u < v) && rng.Float64() < p {
					g.MustAddEdge(u, v)
				}
			}
		}
		opt := Options{}
		if trial%4 == 1 {
			g = withLabels(g, 2, 2, rng)
			opt = Options{NodeLabels: true, EdgeLabels: true}
		}
		h := g.Clone()
		swaps := 0
		if trial%2 == 0 {
			swaps = 1 + rng.IntN(2)
		}
		for attempt := 0; swaps > 0 && attempt < 50; attempt++ { // degree-preserving swaps
			es := h.Edges()
			if len(es) < 2 {
				break
			}
			a, b := es[rng.IntN(len(es))], es[rng.IntN(len(es))]
			if a.From == b.To || b.From == a.To || a == b || h.HasEdge(a.From, b.To) || h.HasEdge(b.From, a.To) {
				continue
			}
			if !directed && (a.From == b.From || a.To == b.To || h.HasEdge(b.To, a.From) || h.HasEdge(a.To, b.From)) {
				continue
			}
			h.RemoveEdge(a.From, a.To)
			h.RemoveEdge(b.From, b.To)
			_ = h.AddLabeledEdge(a.From, b.To, a.Label)
			_ = h.AddLabeledEdge(b.From, a.To, b.Label)
			swaps--
		}
		h = relabel(h, rng)
		want := bruteIsomorphic(g, h, opt)
		counts[want]++
		got, err := Isomorphic(ctx, g, h, opt)
		if err != nil || got != want {
			t.Fatalf("trial %d: g=%v h=%v opt=%+v: Isomorphic=%v,%v brute=%v", trial, g.Edges(), h.Edges(), opt, got, err, want)
		}
		// The search alone, without the help of colour refinement.
		if got := searchOnly(t, g, h, opt); got != want {
			t.Fatalf("trial %d: g=%v h=%v opt=%+v: search without colours=%v brute=%v", trial, g.Edges(), h.Edges(), opt, got, want)
		}
		if want && !CouldBeIsomorphic(g, h) {
			t.Fatalf("trial %d: CouldBeIsomorphic false on isomorphic pair", trial)
		}
	}
	if counts[true] < 200 || counts[false] < 200 {
		t.Fatalf("unbalanced sample %v", counts)
	}
}

// searchOnly runs the VF2++ search with all colours equal, so that only
// the search's own checks (labels, adjacency, look-ahead) decide.
func searchOnly(t *testing.T, g, h *graph.Graph, opt Options) bool {
	t.Helper()
	if g.N() != h.N() || g.M() != h.M() || g.Directed() != h.Directed() {
		return false
	}
	p, err := prepare(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	q, err := prepare(h, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*prepared{p, q} {
		clear(x.color)
		x.rounds, x.hash = 0, 0
	}
	ok, err := match(context.Background(), p, q)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestSearchWithoutColours(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for trial := 0; trial < 20; trial++ {
		g := withLabels(orient(planarLike(40, rng), 0.2, rng), 2, 2, rng)
		h := relabel(g, rng)
		if !searchOnly(t, g, h, Options{NodeLabels: true, EdgeLabels: true}) {
			t.Fatalf("trial %d: relabelled graph not found isomorphic", trial)
		}
		// Break it: move one edge (keeping m), or flip one label.
		k := h.Clone()
		e := k.Edges()[rng.IntN(k.M())]
		switch trial % 3 {
		case 0:
			k.RemoveEdge(e.From, e.To)
			for k.M() < h.M() {
				if u, v := rng.IntN(40), rng.IntN(40); u != v && !(u == e.From && v == e.To) {
					_ = k.AddLabeledEdge(u, v, e.Label)
				}
			}
		case 1:
			_ = k.AddLabeledEdge(e.From, e.To, 1-e.Label)
		case 2:
			k.NodeLabels[e.From] = 1 - k.NodeLabels[e.From]
		}
		if trial%3 == 0 && CouldBeIsomorphic(g, k) {
			continue // moved edge kept the degrees: no cheap ground truth
		}
		if searchOnly(t, g, k, Options{NodeLabels: true, EdgeLabels: true}) {
			t.Fatalf("trial %d: modified graph reported isomorphic", trial)
		}
	}
}

func TestTreesAgainstAHU(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 400; trial++ {
		n := 6 + rng.IntN(10)
		g, h := randomTree(n, rng), randomTree(n, rng)
		want := treeCanon(g) == treeCanon(h)
		got, err := Isomorphic(ctx, g, h, Options{})
		if err != nil || got != want {
			t.Fatalf("trial %d: Isomorphic=%v,%v AHU=%v", trial, got, err, want)
		}
	}
}

func TestIndex(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 10))
	// 9-node trees: only 47 isomorphism classes, so many repeats.
	idx := NewIndex(Options{})
	classes := map[string]int{}
	var stored []*graph.Graph
	for i := 0; i < 300; i++ {
		g := randomTree(9, rng)
		in, err := idx.Contains(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		_, seen := classes[treeCanon(g)]
		if in != seen {
			t.Fatalf("graph %d: Contains = %v, AHU says seen = %v", i, in, seen)
		}
		if !in {
			classes[treeCanon(g)] = idx.Len()
			if err := idx.Add(g); err != nil {
				t.Fatal(err)
			}
			stored = append(stored, g)
		}
	}
	if idx.Len() != len(classes) || len(classes) < 30 || len(classes) > 47 {
		t.Fatalf("index holds %d graphs, %d classes", idx.Len(), len(classes))
	}
	// Find returns the position of the isomorphic graph; concurrent use.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 1))
			for i, g := range stored {
				pos, err := idx.Find(ctx, relabel(g, r))
				if err != nil || pos != i {
					errs <- fmt.Errorf("stored graph %d: Find = %d, %v", i, pos, err)
					return
				}
			}
		}(uint64(w))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Labelled index distinguishes labellings.
	li := NewIndex(Options{NodeLabels: true})
	g := randomTree(10, rng)
	g.NodeLabels = make([]int, 10)
	_ = li.Add(g)
	h := relabel(g, rng)
	if ok, _ := li.Contains(ctx, h); !ok {
		t.Fatal("labelled index misses a relabelled copy")
	}
	h.NodeLabels[3] = 7
	if ok, _ := li.Contains(ctx, h); ok {
		t.Fatal("labelled index ignores labels")
	}
	bad := graph.New(3)
	bad.NodeLabels = []int{1}
	if err := li.Add(bad); err == nil {
		t.Fatal("Add accepted wrong-length NodeLabels")
	}
}

func TestContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, err := Isomorphic(ctx, shrikhande(), rook(4), Options{})
	if !errors.Is(err, context.Canceled) || ok {
		t.Fatalf("cancelled context: got %v, %v", ok, err)
	}
	idx := NewIndex(Options{})
	_ = idx.Add(rook(4))
	if _, err := idx.Contains(ctx, shrikhande()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Index.Contains with cancelled context: %v", err)
	}
}

// TestContextDeadline runs a hard instance (two non-isomorphic strongly
// regular latin square graphs with identical parameters, which 1-WL cannot
// separate) under a short deadline: the call must come back promptly,
// either with the right answer or with the deadline error.
func TestContextDeadline(t *testing.T) {
	k := 16
	cyclic := latinSquareGraph(k, func(a, b int) int { return (a + b) % k })
	elem := latinSquareGraph(k, func(a, b int) int { return a ^ b }) // (Z2)^4
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	ok, err := Isomorphic(ctx, cyclic, elem, Options{})
	el := time.Since(start)
	if ok {
		t.Fatal("Z16 and (Z2)^4 latin square graphs reported isomorphic")
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unexpected error %v", err)
	}
	if el > 2*time.Second {
		t.Fatalf("deadline of 50ms honoured only after %v", el)
	}
	t.Logf("latin square graphs (n=256): err=%v after %v", err, el)
}

func ExampleIsomorphic() {
	// A 4-cycle and the same cycle with nodes renamed.
	g := graph.New(4)
	h := graph.New(4)
	for i := 0; i < 4; i++ {
		g.MustAddEdge(i, (i+1)%4)
	}
	h.MustAddEdge(0, 2)
	h.MustAddEdge(2, 1)
	h.MustAddEdge(1, 3)
	h.MustAddEdge(3, 0)
	ok, err := Isomorphic(context.Background(), g, h, Options{})
	fmt.Println(ok, err)
	// Output: true <nil>
}

func ExampleIndex() {
	ctx := context.Background()
	idx := NewIndex(Options{})
	path := graph.New(3)
	path.MustAddEdge(0, 1)
	path.MustAddEdge(1, 2)
	_ = idx.Add(path)
	other := graph.New(3) // the same path, centred on node 0
	other.MustAddEdge(1, 0)
	other.MustAddEdge(0, 2)
	ok, _ := idx.Contains(ctx, other)
	fmt.Println(idx.Len(), ok)
	// Output: 1 true
}

func BenchmarkIsomorphic(b *testing.B) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 12))
	pairs := map[string][2]*graph.Graph{}
	t := randomTree(64, rng)
	pairs["tree64"] = [2]*graph.Graph{t, relabel(t, rng)}
	p := planarLike(64, rng)
	pairs["planar64"] = [2]*graph.Graph{p, relabel(p, rng)}
	s := shrikhande()
	pairs["shrikhande-vs-rook4"] = [2]*graph.Graph{s, rook(4)}
	for _, name := range []string{"tree64", "planar64", "shrikhande-vs-rook4"} {
		pr := pairs[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Isomorphic(ctx, pr[0], pr[1], Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
	// Baseline: the cheap invariant filter on the same pair.
	b.Run("planar64-CouldBeIsomorphic", func(b *testing.B) {
		pr := pairs["planar64"]
		for b.Loop() {
			CouldBeIsomorphic(pr[0], pr[1])
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
	})
}

func BenchmarkIndexContains(b *testing.B) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(13, 14))
	idx := NewIndex(Options{})
	trees := make([]*graph.Graph, 8192)
	for i := range trees {
		trees[i] = randomTree(64, rng)
		_ = idx.Add(trees[i])
	}
	hits := make([]*graph.Graph, 64)
	misses := make([]*graph.Graph, 64)
	for i := range hits {
		hits[i] = relabel(trees[rng.IntN(len(trees))], rng)
		misses[i] = randomTree(64, rng)
	}
	for _, c := range []struct {
		name string
		qs   []*graph.Graph
	}{{"hit", hits}, {"miss", misses}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := idx.Contains(ctx, c.qs[i%len(c.qs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}

func TestLargeSparseShapes(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(17, 18))
	star := graph.New(3001)
	for i := 1; i <= 3000; i++ {
		star.MustAddEdge(0, i)
	}
	sparse := graph.New(10000) // mostly isolated nodes and a few paths
	for i := 0; i+1 < 300; i++ {
		sparse.MustAddEdge(i, i+1)
	}
	for _, g := range []*graph.Graph{star, sparse} {
		start := time.Now()
		ok, err := Isomorphic(ctx, g, relabel(g, rng), Options{})
		if err != nil || !ok {
			t.Fatalf("%v: Isomorphic = %v, %v", g, ok, err)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("%v: took %v", g, el)
		}
	}
}
