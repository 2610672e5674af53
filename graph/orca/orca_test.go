package orca

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"lgflow/graph"
)

// dataDir locates /work/shared/data: $LGFLOW_DATA, else ../shared/data
// next to the directory holding go.mod.
func dataDir(t testing.TB) string {
	if d := os.Getenv("LGFLOW_DATA"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Skip("no working directory")
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "..", "shared", "data")
		}
		if filepath.Dir(d) == d {
			t.Skip("go.mod not found")
		}
	}
}

// readORCAGraph reads ORCA's input format: "n m" then m lines "u v".
func readORCAGraph(path string) (*graph.Graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var g *graph.Graph
	line := 0
	for sc.Scan() {
		line++
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if len(fs) != 2 {
			return nil, fmt.Errorf("%s:%d: want 2 fields, got %d", path, line, len(fs))
		}
		a, err1 := strconv.Atoi(fs[0])
		b, err2 := strconv.Atoi(fs[1])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s:%d: bad integers %q", path, line, sc.Text())
		}
		if g == nil {
			g = graph.New(a)
			continue
		}
		if err := g.AddEdge(a, b); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
	if g == nil {
		return nil, fmt.Errorf("%s: empty", path)
	}
	return g, sc.Err()
}

func loadFixture(t testing.TB) (*graph.Graph, [][NumOrbits]int64) {
	dir := filepath.Join(dataDir(t), "orca")
	if _, err := os.Stat(filepath.Join(dir, "graph.in")); err != nil {
		t.Skipf("ORCA fixture absent: %v", err)
	}
	g, err := readORCAGraph(filepath.Join(dir, "graph.in"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "node-4.out"))
	if err != nil {
		t.Fatal(err)
	}
	var want [][NumOrbits]int64
	for i, ln := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		fs := strings.Fields(ln)
		if len(fs) != NumOrbits {
			t.Fatalf("node-4.out:%d: %d fields", i+1, len(fs))
		}
		var row [NumOrbits]int64
		for k, f := range fs {
			row[k], err = strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatalf("node-4.out:%d: %v", i+1, err)
			}
		}
		want = append(want, row)
	}
	return g, want
}

func TestORCAFixture(t *testing.T) {
	g, want := loadFixture(t)
	if g.N() != 100 || g.M() != 1000 || len(want) != 100 {
		t.Fatalf("fixture: %v, %d rows", g, len(want))
	}
	got := NodeOrbits(g)
	for u := range want {
		if got[u] != want[u] {
			t.Errorf("node %d:\n got  %v\n want %v", u, got[u], want[u])
		}
	}
	// Also through the independent brute force.
	bf := bruteOrbits(g)
	for u := range want {
		if bf[u] != want[u] {
			t.Errorf("brute force node %d:\n got  %v\n want %v", u, bf[u], want[u])
		}
	}
}

// bruteOrbits counts orbits by examining every 2-, 3- and 4-subset of
// nodes, written independently of the package's tables: a subset is
// classified by its edge count and sorted degree sequence.
func bruteOrbits(g *graph.Graph) [][NumOrbits]int64 {
	g = g.Undirected()
	n := g.N()
	out := make([][NumOrbits]int64, n)
	for _, e := range g.Edges() {
		out[e.From][0]++
		out[e.To][0]++
	}
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			for c := b + 1; c < n; c++ {
				s := []int{a, b, c}
				deg, m := subDegrees(g, s)
				switch m {
				case 2:
					for i, x := range s {
						out[x][map[int]int{1: 1, 2: 2}[deg[i]]]++
					}
				case 3:
					for _, x := range s {
						out[x][3]++
					}
				}
				for d := c + 1; d < n; d++ {
					s := []int{a, b, c, d}
					deg, m := subDegrees(g, s)
					maxd, mind := 0, 4
					for _, x := range deg {
						maxd, mind = max(maxd, x), min(mind, x)
					}
					if mind == 0 || m < 3 {
						continue // an isolated node, or too few edges to connect
					}
					// With m = 3 and no isolated node, the graph is
					// either a tree (P4, claw) or a triangle plus an
					// isolated node (excluded above).
					var orb map[int]int
					switch {
					case m == 3 && maxd == 3:
						orb = map[int]int{1: 6, 3: 7}
					case m == 3:
						orb = map[int]int{1: 4, 2: 5}
					case m == 4 && maxd == 2:
						orb = map[int]int{2: 8}
					case m == 4:
						orb = map[int]int{1: 9, 2: 10, 3: 11}
					case m == 5:
						orb = map[int]int{2: 12, 3: 13}
					default:
						orb = map[int]int{3: 14}
					}
					for i, x := range s {
						out[x][orb[deg[i]]]++
					}
				}
			}
		}
	}
	return out
}

func subDegrees(g *graph.Graph, s []int) ([]int, int) {
	deg := make([]int, len(s))
	m := 0
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if g.HasEdge(s[i], s[j]) {
				deg[i]++
				deg[j]++
				m++
			}
		}
	}
	return deg, m
}

func randomGraph(n int, p float64, rng *rand.Rand) *graph.Graph {
	g := graph.New(n)
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			if rng.Float64() < p {
				g.MustAddEdge(u, v)
			}
		}
	}
	return g
}

func TestAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 60; trial++ {
		n := 1 + rng.IntN(16)
		g := randomGraph(n, rng.Float64(), rng)
		got, want := NodeOrbits(g), bruteOrbits(g)
		for u := range want {
			if got[u] != want[u] {
				t.Fatalf("trial %d (%v) node %d:\n got  %v\n want %v", trial, g.Edges(), u, got[u], want[u])
			}
		}
	}
}

func TestParallelMatchesSerial(t *testing.T) {
	// Large enough to take the parallel path; compare with brute force.
	rng := rand.New(rand.NewPCG(5, 6))
	g := randomGraph(60, 0.5, rng)
	got, want := NodeOrbits(g), bruteOrbits(g)
	for u := range want {
		if got[u] != want[u] {
			t.Fatalf("node %d:\n got  %v\n want %v", u, got[u], want[u])
		}
	}
}

func TestSmallGraphs(t *testing.T) {
	type row = [NumOrbits]int64
	cases := []struct {
		name  string
		n     int
		edges [][2]int
		want  []row
	}{
		{"P4", 4, [][2]int{{0, 1}, {1, 2}, {2, 3}}, []row{
			{1, 1, 0, 0, 1},
			{2, 1, 1, 0, 0, 1},
			{2, 1, 1, 0, 0, 1},
			{1, 1, 0, 0, 1},
		}},
		{"claw", 4, [][2]int{{0, 1}, {0, 2}, {0, 3}}, []row{
			{3, 0, 3, 0, 0, 0, 0, 1},
			{1, 2, 0, 0, 0, 0, 1},
			{1, 2, 0, 0, 0, 0, 1},
			{1, 2, 0, 0, 0, 0, 1},
		}},
		{"C4", 4, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}}, []row{
			{2, 2, 1, 0, 0, 0, 0, 0, 1},
			{2, 2, 1, 0, 0, 0, 0, 0, 1},
			{2, 2, 1, 0, 0, 0, 0, 0, 1},
			{2, 2, 1, 0, 0, 0, 0, 0, 1},
		}},
		// paw: triangle 0-1-2 with pendant 3 on node 0
		{"paw", 4, [][2]int{{0, 1}, {1, 2}, {0, 2}, {0, 3}}, []row{
			{3, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 1},
			{2, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1},
			{2, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1},
			{1, 2, 0, 0, 0, 0, 0, 0, 0, 1},
		}},
		// diamond: 4-cycle 0-1-2-3 with chord 0-2
		{"diamond", 4, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 2}}, []row{
			{3, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
			{2, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1},
			{3, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
			{2, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1},
		}},
		{"K4", 4, [][2]int{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}, []row{
			{3, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
			{3, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
			{3, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
			{3, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
		}},
		{"isolated", 3, nil, []row{{}, {}, {}}},
	}
	for _, c := range cases {
		g := graph.New(c.n)
		for _, e := range c.edges {
			g.MustAddEdge(e[0], e[1])
		}
		got := NodeOrbits(g)
		for u := range c.want {
			if got[u] != c.want[u] {
				t.Errorf("%s node %d: got %v, want %v", c.name, u, got[u], c.want[u])
			}
		}
	}
}

func TestDirectedUsesUndirectedView(t *testing.T) {
	d := graph.NewDirected(4)
	d.MustAddEdge(0, 1)
	d.MustAddEdge(2, 1)
	d.MustAddEdge(1, 0) // both directions: one undirected edge
	d.MustAddEdge(3, 2)
	got := NodeOrbits(d)
	want := NodeOrbits(d.Undirected())
	for u := range want {
		if got[u] != want[u] {
			t.Fatalf("node %d: %v vs %v", u, got[u], want[u])
		}
	}
	if got[0][4] != 1 || got[1][5] != 1 {
		t.Fatalf("directed path not counted as P4: %v", got)
	}
}

func TestGraphletCounts(t *testing.T) {
	// Hand counts for K4 minus nothing, the 3x3 grid and the wheel W5.
	type counts [9]int64
	grid := graph.New(9)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			if j < 2 {
				grid.MustAddEdge(3*i+j, 3*i+j+1)
			}
			if i < 2 {
				grid.MustAddEdge(3*i+j, 3*i+j+3)
			}
		}
	}
	k4 := graph.New(4)
	for u := 0; u < 4; u++ {
		for v := u + 1; v < 4; v++ {
			k4.MustAddEdge(u, v)
		}
	}
	cases := []struct {
		name string
		g    *graph.Graph
		want counts
	}{
		// K4: 6 edges, 4 triangles, 1 K4, nothing induced otherwise.
		{"K4", k4, counts{6, 0, 4, 0, 0, 0, 0, 0, 1}},
		// 3x3 grid: 12 edges; P3 = Σ C(d,2) = 4·1 + 4·3 + 6 = 22;
		// C4 = 4; claws = 4 (T-nodes) + 4 (centre) = 8;
		// P4: 3-edge paths = Σ_edges (du-1)(dv-1) = 8·2 + 4·6 = 40 (no
		// triangles), minus 4 per C4 (each C4 holds 4 non-induced P4s) = 24.
		{"grid3x3", grid, counts{12, 22, 0, 24, 8, 4, 0, 0, 0}},
	}
	for _, c := range cases {
		e, p3, tri, p4, cl, c4, paw, dia, kk := GraphletCounts(c.g)
		got := counts{e, p3, tri, p4, cl, c4, paw, dia, kk}
		if got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	// Cross-check with brute force on random graphs.
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := 0; trial < 20; trial++ {
		g := randomGraph(12, rng.Float64(), rng)
		var s [NumOrbits]int64
		for _, r := range bruteOrbits(g) {
			for k := range r {
				s[k] += r[k]
			}
		}
		e, p3, tri, p4, cl, c4, paw, dia, kk := GraphletCounts(g)
		want := counts{s[0] / 2, s[2], s[3] / 3, s[5] / 2, s[7], s[8] / 4, s[9], s[12] / 2, s[14] / 4}
		if got := (counts{e, p3, tri, p4, cl, c4, paw, dia, kk}); got != want {
			t.Fatalf("trial %d: got %v, want %v", trial, got, want)
		}
	}
}

func TestNoAllocsInEnumeration(t *testing.T) {
	g, _ := loadFixture(t)
	a := newAdjacency(g)
	out := make([][NumOrbits]int64, a.n)
	c := newCounter(&a, out)
	allocs := testing.AllocsPerRun(3, func() {
		for v := range a.n {
			c.root(int32(v))
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per enumeration", allocs)
	}
}

func ExampleNodeOrbits() {
	// A triangle 0-1-2 with a pendant node 3 on node 0 (a "paw").
	g := graph.New(4)
	g.MustAddEdge(0, 1)
	g.MustAddEdge(1, 2)
	g.MustAddEdge(0, 2)
	g.MustAddEdge(0, 3)
	for u, row := range NodeOrbits(g) {
		fmt.Println(u, row)
	}
	// Output:
	// 0 [3 0 2 1 0 0 0 0 0 0 0 1 0 0 0]
	// 1 [2 1 0 1 0 0 0 0 0 0 1 0 0 0 0]
	// 2 [2 1 0 1 0 0 0 0 0 0 1 0 0 0 0]
	// 3 [1 2 0 0 0 0 0 0 0 1 0 0 0 0 0]
}

func ExampleGraphletCounts() {
	g := graph.New(4) // the 4-cycle 0-1-2-3
	for i := 0; i < 4; i++ {
		g.MustAddEdge(i, (i+1)%4)
	}
	edges, p3, triangles, p4, claws, c4, paws, diamonds, k4 := GraphletCounts(g)
	fmt.Println(edges, p3, triangles, p4, claws, c4, paws, diamonds, k4)
	// Output: 4 4 0 0 0 1 0 0 0
}

// planarLike returns a random triangulation-like planar graph: stacked
// insertions of nodes into random triangular faces.
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

func BenchmarkNodeOrbits(b *testing.B) {
	rng := rand.New(rand.NewPCG(64, 1))
	planar := planarLike(64, rng)
	b.Run("planar64", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			NodeOrbits(planar)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
	})
	b.Run("bruteforce-planar64", func(b *testing.B) {
		for b.Loop() {
			bruteOrbits(planar)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
	})
	g, _ := loadFixture(b)
	b.Run("orca-fixture", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			NodeOrbits(g)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
	})
}
