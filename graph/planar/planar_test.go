package planar

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"lgflow/graph"
)

// ---- generators -------------------------------------------------------

func complete(n int) *graph.Graph {
	g := graph.New(n)
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			g.MustAddEdge(u, v)
		}
	}
	return g
}

func completeBipartite(a, b int) *graph.Graph {
	g := graph.New(a + b)
	for u := 0; u < a; u++ {
		for v := a; v < a+b; v++ {
			g.MustAddEdge(u, v)
		}
	}
	return g
}

func without(g *graph.Graph, u, v int) *graph.Graph {
	h := g.Clone()
	if !h.RemoveEdge(u, v) {
		panic("edge absent")
	}
	return h
}

func cycle(n int) *graph.Graph {
	g := graph.New(n)
	for i := 0; i < n; i++ {
		g.MustAddEdge(i, (i+1)%n)
	}
	return g
}

func grid(r, c int) *graph.Graph {
	g := graph.New(r * c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if j+1 < c {
				g.MustAddEdge(i*c+j, i*c+j+1)
			}
			if i+1 < r {
				g.MustAddEdge(i*c+j, (i+1)*c+j)
			}
		}
	}
	return g
}

func wheel(spokes int) *graph.Graph {
	g := graph.New(spokes + 1)
	for i := 0; i < spokes; i++ {
		g.MustAddEdge(spokes, i)
		g.MustAddEdge(i, (i+1)%spokes)
	}
	return g
}

func petersen() *graph.Graph {
	g := graph.New(10)
	for i := 0; i < 5; i++ {
		g.MustAddEdge(i, (i+1)%5)
		g.MustAddEdge(i, i+5)
		g.MustAddEdge(i+5, (i+2)%5+5)
	}
	return g
}

func octahedron() *graph.Graph {
	g := complete(6)
	g.RemoveEdge(0, 1)
	g.RemoveEdge(2, 3)
	g.RemoveEdge(4, 5)
	return g
}

func icosahedron() *graph.Graph {
	g := graph.New(12)
	for j := 0; j < 5; j++ {
		up, upNext := 1+j, 1+(j+1)%5
		lo, loNext := 6+j, 6+(j+1)%5
		g.MustAddEdge(0, up)
		g.MustAddEdge(up, upNext)
		g.MustAddEdge(lo, loNext)
		g.MustAddEdge(11, lo)
		g.MustAddEdge(up, lo)
		g.MustAddEdge(up, loNext)
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

// triangulation returns a random maximal planar graph with n >= 3 nodes
// (3n-6 edges): stacked insertions into random faces followed by random
// edge flips, then a random relabelling.
func triangulation(n int, rng *rand.Rand) *graph.Graph {
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
	third := func(f [3]int, a, b int) int {
		for _, x := range f {
			if x != a && x != b {
				return x
			}
		}
		return -1
	}
	has := func(f [3]int, x int) bool { return f[0] == x || f[1] == x || f[2] == x }
	for flips := 0; flips < 4*n; flips++ {
		i := rng.IntN(len(faces))
		k := rng.IntN(3)
		a, b := faces[i][k], faces[i][(k+1)%3]
		j := -1
		for t := range faces {
			if t != i && has(faces[t], a) && has(faces[t], b) {
				j = t
				break
			}
		}
		c, d := third(faces[i], a, b), third(faces[j], a, b)
		if c == d || g.HasEdge(c, d) {
			continue
		}
		g.RemoveEdge(a, b)
		g.MustAddEdge(c, d)
		faces[i] = [3]int{a, c, d}
		faces[j] = [3]int{b, c, d}
	}
	return relabel(g, rng)
}

func relabel(g *graph.Graph, rng *rand.Rand) *graph.Graph {
	h, err := g.Permute(rng.Perm(g.N()))
	if err != nil {
		panic(err)
	}
	return h
}

// subdivide replaces `times` random edges by paths of length 2.
func subdivide(g *graph.Graph, times int, rng *rand.Rand) *graph.Graph {
	for t := 0; t < times; t++ {
		es := g.Edges()
		e := es[rng.IntN(len(es))]
		h := graph.New(g.N() + 1)
		for _, f := range es {
			if f != e {
				h.MustAddEdge(f.From, f.To)
			}
		}
		h.MustAddEdge(e.From, g.N())
		h.MustAddEdge(g.N(), e.To)
		g = h
	}
	return g
}

// glue returns the disjoint union of a and b with b's node 0 identified
// with a's node at (a 1-sum, which preserves planarity).
func glue(a, b *graph.Graph, at int) *graph.Graph {
	n := a.N() + b.N() - 1
	g := graph.New(n)
	for _, e := range a.Edges() {
		g.MustAddEdge(e.From, e.To)
	}
	id := func(v int) int {
		if v == 0 {
			return at
		}
		return a.N() + v - 1
	}
	for _, e := range b.Edges() {
		g.MustAddEdge(id(e.From), id(e.To))
	}
	return g
}

func disjointUnion(gs ...*graph.Graph) *graph.Graph {
	n := 0
	for _, g := range gs {
		n += g.N()
	}
	h := graph.New(n)
	off := 0
	for _, g := range gs {
		for _, e := range g.Edges() {
			h.MustAddEdge(off+e.From, off+e.To)
		}
		off += g.N()
	}
	return h
}

// ---- independent reference: Wagner's theorem by brute force ------------

// A graph on n <= 8 nodes is encoded as a bitmask over the pairs (i, j),
// i < j, in the order of pairIndex.

func pairIndex(i, j int) int {
	if i > j {
		i, j = j, i
	}
	return j*(j-1)/2 + i
}

// minorOracle decides planarity of graphs with at most 8 nodes through
// Wagner's theorem: G is non-planar iff K5 or K3,3 is a minor of G. A
// minor model of H (5 or 6 nodes) in G either uses every node of G as a
// singleton branch set (then H is a subgraph of G on all nodes), or some
// node is unused (delete it), or some branch set holds an edge (contract
// it). Tables for n = 5 and 6 are filled once; larger n recurse.
type minorOracle struct {
	np5 []bool
	np6 []bool
}

func newMinorOracle() *minorOracle {
	o := &minorOracle{np5: make([]bool, 1<<10), np6: make([]bool, 1<<15)}
	o.np5[1<<10-1] = true // K5 itself
	var k33 []uint32
	for mask := 0; mask < 1<<6; mask++ {
		if popcount(uint32(mask)) != 3 || mask&1 == 0 {
			continue // each bipartition once: side containing node 0
		}
		var m uint32
		for i := 0; i < 6; i++ {
			for j := i + 1; j < 6; j++ {
				if (mask>>i)&1 != (mask>>j)&1 {
					m |= 1 << pairIndex(i, j)
				}
			}
		}
		k33 = append(k33, m)
	}
	for mask := uint32(0); mask < 1<<15; mask++ {
		np := false
		for _, k := range k33 {
			if mask&k == k {
				np = true
				break
			}
		}
		if !np {
			np = o.reduce(6, mask)
		}
		o.np6[mask] = np
	}
	return o
}

func popcount(x uint32) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

// reduce reports whether some single node deletion or edge contraction of
// the n-node graph mask is non-planar.
func (o *minorOracle) reduce(n int, mask uint32) bool {
	for del := 0; del < n; del++ { // delete node del
		if o.nonPlanar(n-1, project(n, mask, del, -1)) {
			return true
		}
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if mask&(1<<pairIndex(i, j)) != 0 {
				if o.nonPlanar(n-1, project(n, mask, j, i)) { // merge j into i
					return true
				}
			}
		}
	}
	return false
}

// project removes node del from the n-node graph mask, giving its edges to
// node into (if into >= 0), and renumbers the remaining nodes.
func project(n int, mask uint32, del, into int) uint32 {
	idx := func(v int) int {
		if v > del {
			return v - 1
		}
		return v
	}
	var out uint32
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if mask&(1<<pairIndex(i, j)) == 0 {
				continue
			}
			a, b := i, j
			if a == del {
				if into < 0 {
					continue
				}
				a = into
			}
			if b == del {
				if into < 0 {
					continue
				}
				b = into
			}
			if a == b {
				continue
			}
			out |= 1 << pairIndex(idx(a), idx(b))
		}
	}
	return out
}

func (o *minorOracle) nonPlanar(n int, mask uint32) bool {
	switch {
	case n < 5:
		return false
	case n == 5:
		return o.np5[mask]
	case n == 6:
		return o.np6[mask]
	}
	return o.reduce(n, mask)
}

func maskOf(g *graph.Graph) uint32 {
	var m uint32
	for _, e := range g.Edges() {
		m |= 1 << pairIndex(e.From, e.To)
	}
	return m
}

// ---- tests --------------------------------------------------------------

func TestKnownGraphs(t *testing.T) {
	cases := []struct {
		name string
		g    *graph.Graph
		want bool
	}{
		{"empty", graph.New(0), true},
		{"single", graph.New(1), true},
		{"K4", complete(4), true},
		{"K5", complete(5), false},
		{"K6", complete(6), false},
		{"K5-e", without(complete(5), 1, 3), true},
		{"K3,3", completeBipartite(3, 3), false},
		{"K3,3-e", without(completeBipartite(3, 3), 0, 4), true},
		{"K2,40", completeBipartite(2, 40), true},
		{"K3,4", completeBipartite(3, 4), false},
		{"C3", cycle(3), true},
		{"C100", cycle(100), true},
		{"path tree", randomTree(200, rand.New(rand.NewPCG(1, 2))), true},
		{"grid 8x8", grid(8, 8), true},
		{"grid 20x25", grid(20, 25), true},
		{"wheel 5", wheel(5), true},
		{"wheel 30", wheel(30), true},
		{"Petersen", petersen(), false},
		{"octahedron", octahedron(), true},
		{"icosahedron", icosahedron(), true},
		{"icosahedron+e", func() *graph.Graph { g := icosahedron(); g.MustAddEdge(0, 11); return g }(), false},
		{"two K4", disjointUnion(complete(4), complete(4)), true},
		{"K4 + K5", disjointUnion(complete(4), complete(5)), false},
		{"grid + K3,3", disjointUnion(grid(5, 5), completeBipartite(3, 3)), false},
		{"isolated nodes + K3,3", disjointUnion(graph.New(7), completeBipartite(3, 3)), false},
	}
	for _, c := range cases {
		if got := IsPlanar(c.g); got != c.want {
			t.Errorf("%s (%v): IsPlanar = %v, want %v", c.name, c.g, got, c.want)
		}
	}
}

func TestDirectedUsesUndirectedView(t *testing.T) {
	d := graph.NewDirected(5)
	for u := 0; u < 5; u++ {
		for v := 0; v < 5; v++ {
			if u < v {
				d.MustAddEdge(u, v)
			}
		}
	}
	if IsPlanar(d) {
		t.Error("tournament on 5 nodes (undirected K5) reported planar")
	}
	d.RemoveEdge(0, 1)
	d.MustAddEdge(1, 0) // still K5 in the undirected view
	if IsPlanar(d) {
		t.Error("reoriented K5 reported planar")
	}
	d.RemoveEdge(1, 0)
	if !IsPlanar(d) {
		t.Error("K5 minus an edge (directed) reported non-planar")
	}
	// Both directions of every edge of an icosahedron: 60 arcs but the
	// undirected view has 30 edges = 3n-6.
	ic := icosahedron()
	dd := graph.NewDirected(12)
	for _, e := range ic.Edges() {
		dd.MustAddEdge(e.From, e.To)
		dd.MustAddEdge(e.To, e.From)
	}
	if !IsPlanar(dd) {
		t.Error("bidirected icosahedron reported non-planar")
	}
}

func TestSubdivisionsOfKuratowskiGraphs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := 0; trial < 60; trial++ {
		for _, base := range []*graph.Graph{complete(5), completeBipartite(3, 3), petersen()} {
			g := relabel(subdivide(base, 1+rng.IntN(25), rng), rng)
			if IsPlanar(g) {
				t.Fatalf("trial %d: subdivision %v of a non-planar graph reported planar", trial, g)
			}
			// Removing any edge of a subdivided K5 or K3,3 makes it planar.
			if base.N() <= 6 {
				es := g.Edges()
				e := es[rng.IntN(len(es))]
				h := without(g, e.From, e.To)
				if !IsPlanar(h) {
					t.Fatalf("trial %d: subdivision minus an edge reported non-planar", trial)
				}
			}
		}
	}
}

func TestRandomTriangulations(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{4, 5, 6, 10, 30, 64, 200, 512} {
		for trial := 0; trial < 5; trial++ {
			g := triangulation(n, rng)
			if g.M() != 3*n-6 {
				t.Fatalf("generator: n=%d has %d edges, want %d", n, g.M(), 3*n-6)
			}
			if !IsPlanar(g) {
				t.Fatalf("n=%d trial %d: maximal planar graph reported non-planar", n, trial)
			}
			// Any extra edge breaks Euler's bound (K4 is complete, skip it).
			if n >= 5 {
				h := g.Clone()
				for h.M() == g.M() {
					if u, v := rng.IntN(n), rng.IntN(n); u != v {
						h.MustAddEdge(u, v)
					}
				}
				if IsPlanar(h) {
					t.Fatalf("n=%d: triangulation plus an edge reported planar", n)
				}
			}
			// Planar minus random edges stays planar.
			sub := g.Clone()
			for _, e := range g.Edges() {
				if rng.Float64() < 0.3 {
					sub.RemoveEdge(e.From, e.To)
				}
			}
			if !IsPlanar(sub) {
				t.Fatalf("n=%d: subgraph of a triangulation reported non-planar", n)
			}
		}
	}
}

// TestHiddenK33 builds planar graphs far below Euler's bound in which one
// extra edge completes a subdivided K3,3.
func TestHiddenK33(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	for trial := 0; trial < 40; trial++ {
		// K3,3 minus edge {0, 3}, subdivided, with triangulations and
		// trees hung on random nodes.
		base := subdivide(without(completeBipartite(3, 3), 0, 3), rng.IntN(12), rng)
		g := base
		for k := 0; k < 3; k++ {
			at := rng.IntN(g.N())
			if k == 2 {
				g = glue(g, randomTree(10, rng), at)
			} else {
				g = glue(g, triangulation(6+rng.IntN(20), rng), at)
			}
		}
		perm := rng.Perm(g.N())
		pg, _ := g.Permute(perm)
		if !IsPlanar(pg) {
			t.Fatalf("trial %d: planar construction %v reported non-planar", trial, pg)
		}
		if 3*pg.N()-6 <= pg.M()+1 {
			t.Fatalf("trial %d: construction not below Euler's bound", trial)
		}
		pg.MustAddEdge(perm[0], perm[3])
		if IsPlanar(pg) {
			t.Fatalf("trial %d: graph with a K3,3 subdivision reported planar", trial)
		}
	}
}

func TestAgainstWagnerBruteForce(t *testing.T) {
	o := newMinorOracle()
	// Sanity of the oracle itself.
	if !o.nonPlanar(5, maskOf(complete(5))) || !o.nonPlanar(6, maskOf(completeBipartite(3, 3))) ||
		o.nonPlanar(6, maskOf(octahedron())) || !o.nonPlanar(7, maskOf(subdivide(complete(5), 2, rand.New(rand.NewPCG(1, 1))))) {
		t.Fatal("oracle disagrees with known cases")
	}
	rng := rand.New(rand.NewPCG(21, 23))
	counts := map[bool]int{}
	for trial := 0; trial < 3000; trial++ {
		n := 5 + rng.IntN(4) // 5..8
		p := 0.35 + 0.5*rng.Float64()
		g := graph.New(n)
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if rng.Float64() < p {
					g.MustAddEdge(i, j)
				}
			}
		}
		want := !o.nonPlanar(n, maskOf(g))
		counts[want]++
		if got := IsPlanar(g); got != want {
			t.Fatalf("trial %d: n=%d edges=%v: IsPlanar=%v, Wagner brute force=%v", trial, n, g.Edges(), got, want)
		}
	}
	if counts[true] < 300 || counts[false] < 300 {
		t.Fatalf("unbalanced sample: %v", counts)
	}
	// Include graphs at or below Euler's bound that are still non-planar,
	// so the LR machinery (not the edge bound) decides.
	hard := 0
	for trial := 0; trial < 20000 && hard < 300; trial++ {
		n := 6 + rng.IntN(3)
		m := 9 + rng.IntN(3*n-6-9+1)
		g := graph.New(n)
		for g.M() < m {
			u, v := rng.IntN(n), rng.IntN(n)
			if u != v {
				g.MustAddEdge(u, v)
			}
		}
		want := !o.nonPlanar(n, maskOf(g))
		if !want {
			hard++
		}
		if got := IsPlanar(g); got != want {
			t.Fatalf("below-bound trial %d: n=%d edges=%v: IsPlanar=%v, want %v", trial, n, g.Edges(), got, want)
		}
	}
	if hard < 100 {
		t.Fatalf("only %d non-planar graphs below Euler's bound sampled", hard)
	}
}

func TestDeepGraphs(t *testing.T) {
	// A long path and a long cycle with chords exercise the iterative DFS.
	n := 200000
	g := cycle(n)
	for i := 0; i+2 < n; i += 1000 {
		g.MustAddEdge(i, i+2)
	}
	if !IsPlanar(g) {
		t.Fatal("long cycle with short chords reported non-planar")
	}
}

func ExampleIsPlanar() {
	k5 := graph.New(5)
	for u := 0; u < 5; u++ {
		for v := u + 1; v < 5; v++ {
			k5.MustAddEdge(u, v)
		}
	}
	fmt.Println(IsPlanar(k5))
	k5.RemoveEdge(0, 1)
	fmt.Println(IsPlanar(k5))
	// Output:
	// false
	// true
}

func BenchmarkIsPlanar(b *testing.B) {
	for _, n := range []int{64, 512} {
		rng := rand.New(rand.NewPCG(uint64(n), 99))
		gs := make([]*graph.Graph, 16)
		for i := range gs {
			gs[i] = triangulation(n, rng)
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if !IsPlanar(gs[i%len(gs)]) {
					b.Fatal("non-planar")
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
		})
	}
}
